/**
 * Speculative reads of one tool call (issue #11 §4): the file a tool reads first (its `opens`
 * argument: read, write, edit…) and its session record are started BESIDE the guard's read of
 * the workspace record (meta.json), instead of after it: one round trip less per call.
 *
 * Safe because:
 * - the key is built like every file key (lib/layout/paths.ts), from the authenticated tenant and the
 *   workspace id of the URL: another tenant's key cannot be made; and the call sees nothing read
 *   here unless the guard found the workspace (else its body is cancelled unread, and the answer
 *   is NOT_FOUND as before);
 * - the read is the one the call makes first anyway: an unranged GET of the file's key, which is
 *   also the first thing the layered driver does (the upper object, then the manifest), so a
 *   layered workspace takes it too. It is taken once, by the first unranged get of its key; a
 *   write or delete of that key through this storage drops it. Seeing the version of the request's
 *   start changes nothing a call relies on: every write is conditional on the version it read.
 * - `read` on a layered workspace also starts the range GET of the file's bytes in its pack, where the
 *   isolate's known record and manifest say they are (startEarly's `lower`): taken only by a ranged
 *   get of exactly that pack key, offset and length, which the layered driver asks for only after
 *   the upper GET missed and only from the manifest the CURRENT record points at. Packs never change
 *   under a key, so bytes taken are the file's; a stale record asks elsewhere and the early read is
 *   cancelled unread. Its price: one GET more when the upper layer holds the file.
 */
import { fileKey } from "../layout/paths.js";
import { sessionRecords, type KnownRecords, type RecordStore } from "./records.js";
import type { GetResult, KeyValueStore, StorageDriver } from "../storage/types.js";

/** What a call started early: its storage (the file's GET) and its session records (the record's GET). */
export interface EarlyCall {
  /** The workspace and session they belong to: a Workspace of another takes nothing. */
  tenant: string;
  wsId: string;
  session: string;
  reads: EarlyReads;
  records: RecordStore;
  /** The file's version is the isolate's (a change tool on a known record: lib/api/routes/known-workspace.ts): its GET was not started. */
  fromVersions: boolean;
}

/** A range of a pack object where a known manifest puts a file's bytes. */
export interface LowerRange {
  key: string;
  offset: number;
  length: number;
}

/**
 * Starts the whole GET of `path` (canonical) in the caller's workspace and, when `record`, the KV
 * GET of its session record. `tenant` is the authenticated tenant's (never from the request body).
 * `fromVersions`: the call will take the file from the isolate's versions: no GET is started.
 * `lower`: the range GET of the file's bytes in a pack, started beside (see the module comment).
 */
export function startEarly(deps: { storage: StorageDriver; kv: KeyValueStore; knownRecords?: KnownRecords }, tenant: string, wsId: string, session: string, path: string, opts: { fromVersions?: boolean; record: boolean; lower?: LowerRange }): EarlyCall {
  const fromVersions = opts.fromVersions ?? false;
  const reads = new EarlyReads(deps.storage);
  if (!fromVersions) reads.get(fileKey(tenant, wsId, path));
  if (!fromVersions && opts.lower) reads.getRange(opts.lower);
  const records = sessionRecords(deps.kv, tenant, wsId, session, deps.knownRecords);
  if (opts.record) records.prefetch(path);
  return { tenant, wsId, session, reads, records, fromVersions };
}

export class EarlyReads {
  private readonly started = new Map<string, Promise<GetResult | null>>();
  /** `inner`, except that the first unranged get of a key started here takes the early read. */
  readonly storage: StorageDriver;

  constructor(private readonly inner: StorageDriver) {
    const drop = (key: string) => {
      const p = this.started.get(key);
      if (!p) return;
      this.started.delete(key);
      void cancelBody(p);
    };
    this.storage = {
      name: inner.name,
      ...(inner.contentEtags ? { contentEtags: true } : {}),
      head: (key) => inner.head(key),
      get: (key, opts) => {
        const at = opts?.range ? rangeId(key, opts.range.offset, opts.range.length) : key; // an open-ended range matches nothing started
        const p = this.started.get(at);
        if (!p) return inner.get(key, opts);
        this.started.delete(at);
        return p;
      },
      put: (key, body, opts) => {
        drop(key);
        return inner.put(key, body, opts);
      },
      delete: (keys) => {
        for (const k of typeof keys === "string" ? [keys] : keys) drop(typeof k === "string" ? k : k.key);
        return inner.delete(keys);
      },
      list: (opts) => inner.list(opts),
    };
  }

  /** Starts the whole GET of `key` now (once). */
  get(key: string): void {
    this.start(key, () => this.inner.get(key));
  }

  /** Starts the GET of exactly `r` now (once): only a ranged get of the same key, offset and length takes it. */
  getRange(r: LowerRange): void {
    this.start(rangeId(r.key, r.offset, r.length), () => this.inner.get(r.key, { range: { offset: r.offset, length: r.length } }));
  }

  private start(at: string, read: () => Promise<GetResult | null>): void {
    if (this.started.has(at)) return;
    let p: Promise<GetResult | null>;
    try {
      p = read();
    } catch (e) {
      p = Promise.reject(e); // a driver that throws at once fails the get that takes it, like any other
    }
    p.catch(() => {}); // a failure surfaces in the get that takes it
    this.started.set(at, p);
  }

  /** Cancels the reads nobody took (the call is over, or its workspace does not exist). */
  async discard(): Promise<void> {
    const left = [...this.started.values()];
    this.started.clear();
    await Promise.all(left.map(cancelBody));
  }
}

/** The entry of a ranged read among the started ones (a plain key never contains a NUL). */
const rangeId = (key: string, offset: number, length: number | undefined) => `${key}\0${offset}+${length}`;

async function cancelBody(p: Promise<GetResult | null>): Promise<void> {
  const r = await p.catch(() => null);
  await r?.body.cancel().catch(() => {});
}

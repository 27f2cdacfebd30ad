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

/**
 * Starts the whole GET of `path` (canonical) in the caller's workspace and, when `record`, the KV
 * GET of its session record. `tenant` is the authenticated tenant's (never from the request body).
 * `fromVersions`: the call will take the file from the isolate's versions: no GET is started.
 */
export function startEarly(deps: { storage: StorageDriver; kv: KeyValueStore; knownRecords?: KnownRecords }, tenant: string, wsId: string, session: string, path: string, opts: { fromVersions?: boolean; record: boolean }): EarlyCall {
  const fromVersions = opts.fromVersions ?? false;
  const reads = new EarlyReads(deps.storage);
  if (!fromVersions) reads.get(fileKey(tenant, wsId, path));
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
        const p = opts?.range ? undefined : this.started.get(key);
        if (!p) return inner.get(key, opts);
        this.started.delete(key);
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
    if (this.started.has(key)) return;
    let p: Promise<GetResult | null>;
    try {
      p = this.inner.get(key);
    } catch (e) {
      p = Promise.reject(e); // a driver that throws at once fails the get that takes it, like any other
    }
    p.catch(() => {}); // a failure surfaces in the get that takes it
    this.started.set(key, p);
  }

  /** Cancels the reads nobody took (the call is over, or its workspace does not exist). */
  async discard(): Promise<void> {
    const left = [...this.started.values()];
    this.started.clear();
    await Promise.all(left.map(cancelBody));
  }
}

async function cancelBody(p: Promise<GetResult | null>): Promise<void> {
  const r = await p.catch(() => null);
  await r?.body.cancel().catch(() => {});
}

/**
 * SyncClient over a StorageDriver and one workspace. Used in-process by
 * tests and by the sync endpoint (lib/exec/sync-server.ts). Bundles for Workers.
 *
 * Also the conditional manifest, shared by both ends: the runner sends what it believes
 * storage holds as digests of B buckets (path → bucket by hash); the server lists storage,
 * which stays the source of truth, and sends back only the entries of buckets whose digest
 * differs. A warm call on an unchanged workspace ships B "same" flags instead of every entry.
 * The same request carries the workspace's execute bits (lib/exec/modes.ts), "same" when the
 * asker's version is current: one round trip per run.
 */
import { ToolError } from "../errors.js";
import { filesPrefix as filesPrefixOf, normalizeFilePath } from "../paths.js";
import { isConditionFailed, type StorageDriver } from "../storage/types.js";
import { makeDirMarker, removeDirMarker } from "../workspace/markers.js";
import { readModes, updateModes } from "./modes.js";
import { readBatchFile } from "./sync-batch.js";
import type { ExecModes, SyncClient, SyncEntry } from "./types.js";

// ---------------------------------------------------------------- conditional manifest

/** What the runner believes storage holds, as digests of `buckets` buckets (none: send everything). */
export interface ManifestQuery {
  buckets: number;
  digests?: string[];
  /** Ask for the execute bits too: the etag of the list the asker holds (null: none). */
  modes?: string | null;
}

export interface ManifestAnswer {
  /** Files in storage. */
  count: number;
  buckets: number;
  /** Buckets whose digest equals the query's: storage holds exactly the asker's entries there. */
  same: number[];
  /** Every entry of every other bucket. */
  files: SyncEntry[];
  /** The execute bits when asked for; "same" when the asker's etag is current. */
  modes?: ExecModes | "same";
}

/** A SyncClient that can answer a ManifestQuery (null: the other end cannot; use manifest()). */
export interface ConditionalSync {
  manifestSince(q: ManifestQuery): Promise<ManifestAnswer | null>;
}

export const hasManifestSince = (c: SyncClient): c is SyncClient & ConditionalSync => typeof (c as Partial<ConditionalSync>).manifestSince === "function";

/** Most buckets a query may have, and most list pages one conditional manifest reads (then: paged manifest). */
export const MAX_BUCKETS = 4096;
export const MANIFEST_MAX_PAGES = 500;

/** About 128 entries per bucket, in powers of two (stable while a workspace grows or shrinks a little). */
export function bucketCountFor(entries: number): number {
  let b = 1;
  while (b < MAX_BUCKETS && b * 128 < entries) b *= 2;
  return b;
}

/** FNV-1a over the UTF-16 code units: the same bucket on both ends. */
export function bucketOf(path: string, buckets: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < path.length; i++) h = Math.imul(h ^ path.charCodeAt(i), 0x01000193);
  return (h >>> 0) % buckets;
}

const b64url = (bytes: Uint8Array): string => {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
};

const enc = new TextEncoder();
const byPath = (a: [string, string], b: [string, string]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);

/**
 * SHA-256 of one bucket's [path, etag] pairs, sorted by path, as JSON (unambiguous for any
 * string). Size is left out: reconcile goes by etag alone.
 */
async function digestOf(entries: Iterable<{ path: string; etag: string }>): Promise<string> {
  const pairs: [string, string][] = [];
  for (const e of entries) pairs.push([e.path, e.etag]);
  pairs.sort(byPath);
  return b64url(new Uint8Array(await crypto.subtle.digest("SHA-256", enc.encode(JSON.stringify(pairs)))));
}

/** The digest of every bucket of `entries`. */
export async function bucketDigests(entries: Iterable<{ path: string; etag: string }>, buckets: number): Promise<string[]> {
  const groups: { path: string; etag: string }[][] = Array.from({ length: buckets }, () => []);
  for (const e of entries) groups[bucketOf(e.path, buckets)]!.push(e);
  return Promise.all(groups.map(digestOf));
}

/** A query from the wire, checked; throws INVALID_ARGUMENT. */
export function parseManifestQuery(body: unknown): ManifestQuery {
  const q = body as Partial<ManifestQuery> | null;
  const b = q?.buckets;
  if (typeof b !== "number" || !Number.isInteger(b) || b < 1 || b > MAX_BUCKETS) throw new ToolError("INVALID_ARGUMENT", `buckets must be an integer from 1 to ${MAX_BUCKETS}.`);
  const modes = q!.modes;
  if (modes !== undefined && modes !== null && (typeof modes !== "string" || modes.length > 200)) throw new ToolError("INVALID_ARGUMENT", "modes must be an etag or null.");
  const withModes = modes !== undefined ? { modes } : {};
  if (q!.digests === undefined) return { buckets: b, ...withModes };
  if (!Array.isArray(q!.digests) || q!.digests.length !== b || q!.digests.some((d) => typeof d !== "string" || d.length > 100)) throw new ToolError("INVALID_ARGUMENT", "digests must be one string per bucket.");
  return { buckets: b, digests: q!.digests, ...withModes };
}

/** Lists the workspace's files (the source of truth) and answers the query; null past maxPages. */
export async function answerManifest(driver: StorageDriver, tenant: string, workspace: string, q: ManifestQuery, maxPages = MANIFEST_MAX_PAGES): Promise<ManifestAnswer | null> {
  const modes = q.modes === undefined ? Promise.resolve(undefined) : readModes(driver, tenant, workspace).then((m) => (q.modes !== null && m.etag === q.modes ? ("same" as const) : m));
  const [m, a] = await Promise.all([modes, listAll(driver, filesPrefixOf(tenant, workspace), q, maxPages)]);
  return a && (m === undefined ? a : { ...a, modes: m });
}

async function listAll(driver: StorageDriver, filesPrefix: string, q: ManifestQuery, maxPages: number): Promise<ManifestAnswer | null> {
  const all: SyncEntry[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    if (++pages > maxPages) return null;
    const page = await driver.list({ prefix: filesPrefix, ...(cursor ? { cursor } : {}) });
    for (const o of page.objects) all.push({ path: o.key.slice(filesPrefix.length), etag: o.etag, size: o.size });
    cursor = page.cursor;
  } while (cursor);
  if (!q.digests) return { count: all.length, buckets: q.buckets, same: [], files: all };
  const theirs = q.digests;
  const ours = await bucketDigests(all, q.buckets);
  const same: number[] = [];
  for (let i = 0; i < q.buckets; i++) if (ours[i] === theirs[i]) same.push(i);
  const sameSet = new Set(same);
  return { count: all.length, buckets: q.buckets, same, files: same.length ? all.filter((e) => !sameSet.has(bucketOf(e.path, q.buckets))) : all };
}

/**
 * What a runner believes storage holds (path → etag, size), kept in buckets with each
 * bucket's digest cached: a change recomputes one bucket's digest, not all of them.
 */
export class ManifestView {
  private readonly map = new Map<string, SyncEntry>();
  private buckets = 1;
  private groups: Map<string, SyncEntry>[] = [new Map()];
  private digests: (string | null)[] = [null];

  constructor(entries: Iterable<SyncEntry> = []) {
    this.reset(entries);
  }

  get size(): number {
    return this.map.size;
  }
  get(path: string): SyncEntry | undefined {
    return this.map.get(path);
  }
  values(): IterableIterator<SyncEntry> {
    return this.map.values();
  }

  set(e: SyncEntry): void {
    this.map.set(e.path, e);
    const i = bucketOf(e.path, this.buckets);
    this.groups[i]!.set(e.path, e);
    this.digests[i] = null;
  }

  delete(path: string): void {
    if (!this.map.delete(path)) return;
    const i = bucketOf(path, this.buckets);
    this.groups[i]!.delete(path);
    this.digests[i] = null;
  }

  /** Replaces everything (a plain manifest). */
  reset(entries: Iterable<SyncEntry>): void {
    this.map.clear();
    for (const e of entries) this.map.set(e.path, e);
    this.rebucket(bucketCountFor(this.map.size));
  }

  private rebucket(buckets: number): void {
    this.buckets = buckets;
    this.groups = Array.from({ length: buckets }, () => new Map());
    this.digests = new Array<string | null>(buckets).fill(null);
    for (const e of this.map.values()) this.groups[bucketOf(e.path, buckets)]!.set(e.path, e);
  }

  /** The query for this view (only buckets changed since the last query are hashed again). */
  async query(): Promise<ManifestQuery> {
    const b = bucketCountFor(this.map.size);
    if (b !== this.buckets) this.rebucket(b);
    if (this.map.size === 0) return { buckets: b };
    await Promise.all(this.digests.map(async (d, i) => (d === null ? (this.digests[i] = await digestOf(this.groups[i]!.values())) : d)));
    return { buckets: b, digests: [...(this.digests as string[])] };
  }

  /**
   * Makes the view equal to storage from an answer to query(): the buckets not in `same` take
   * the answer's entries. Checks the answer first (a bad one changes nothing). Returns whether
   * every bucket was the same.
   */
  apply(q: ManifestQuery, a: ManifestAnswer): boolean {
    const bad = (why: string) => new ToolError("INTERNAL", `Workspace sync failed (manifest): bad answer: ${why}.`);
    if (a.buckets !== q.buckets || q.buckets !== this.buckets) throw bad("bucket count");
    const same = new Set(a.same);
    if (same.size !== a.same.length || a.same.some((i) => !Number.isInteger(i) || i < 0 || i >= q.buckets) || (!q.digests && same.size)) throw bad("bucket list");
    const fresh = new Map<string, SyncEntry>();
    for (const e of a.files) {
      if (same.has(bucketOf(e.path, q.buckets)) || fresh.has(e.path)) throw bad("an entry of an unchanged bucket, or twice");
      fresh.set(e.path, e);
    }
    let kept = 0;
    for (const i of same) kept += this.groups[i]!.size;
    if (kept + fresh.size !== a.count) throw bad("count");
    if (same.size === q.buckets) return true;
    for (let i = 0; i < q.buckets; i++) {
      if (same.has(i)) continue;
      for (const p of this.groups[i]!.keys()) this.map.delete(p);
      this.groups[i] = new Map();
      this.digests[i] = null;
    }
    for (const e of fresh.values()) this.set(e);
    return false;
  }
}

export interface ManifestResult {
  /** Storage held exactly what the view held (nothing changed). */
  unchanged: boolean;
  /** Entries that crossed the wire. */
  received: number;
  /** The execute bits ("same": `knownModes` is current; null: the other end keeps none). */
  modes: ExecModes | "same" | null;
}

/**
 * Makes `view` equal to what storage lists now: conditionally when the client can (only
 * buckets that differ from the view cross the wire), from the plain manifest otherwise.
 * Exact either way: every entry is storage's, either sent or vouched for by a SHA-256 digest.
 * With the conditional manifest come the execute bits; the plain one has none (modes: null).
 */
export async function conditionalManifest(sync: SyncClient, view: ManifestView, knownModes: string | null = null): Promise<ManifestResult> {
  const plain = async (): Promise<ManifestResult> => {
    const entries = await sync.manifest();
    const unchanged = entries.length === view.size && entries.every((e) => view.get(e.path)?.etag === e.etag);
    if (!unchanged) view.reset(entries);
    return { unchanged, received: entries.length, modes: null };
  };
  if (!hasManifestSince(sync)) return plain();
  const q = { ...(await view.query()), modes: knownModes };
  const a = await sync.manifestSince(q);
  if (!a) return plain();
  return { unchanged: view.apply(q, a), received: a.files.length, modes: a.modes ?? null };
}

export function storageSyncClient(driver: StorageDriver, tenant: string, workspace: string): SyncClient & ConditionalSync {
  const filesPrefix = filesPrefixOf(tenant, workspace);
  const key = (path: string) => filesPrefix + normalizeFilePath(path);
  return {
    manifestSince: (q) => answerManifest(driver, tenant, workspace, q),
    async manifest() {
      const out: SyncEntry[] = [];
      let cursor: string | undefined;
      do {
        const page = await driver.list({ prefix: filesPrefix, ...(cursor ? { cursor } : {}) });
        for (const o of page.objects) out.push({ path: o.key.slice(filesPrefix.length), etag: o.etag, size: o.size });
        cursor = page.cursor;
      } while (cursor);
      return out;
    },
    async fetch(path) {
      const got = await driver.get(key(path));
      return got ? { body: got.body, etag: got.etag, size: got.size } : null;
    },
    async fetchMany(paths) {
      const files = await Promise.all(paths.map((p) => readBatchFile(driver, key(p), p)));
      return (async function* () {
        yield* files;
      })();
    },
    async put(path, body, opts) {
      try {
        const info = await driver.put(key(path), body, {
          ...(opts.ifMatch !== undefined ? { ifMatch: opts.ifMatch } : {}),
          ...(opts.ifNoneMatch ? { ifNoneMatch: opts.ifNoneMatch } : {}),
          ...(opts.size !== undefined ? { length: opts.size } : {}),
        });
        return { ok: true, etag: info.etag };
      } catch (e) {
        if (isConditionFailed(e)) return { ok: false, conflict: true };
        throw e;
      }
    },
    async delete(path, opts) {
      // StorageDriver.delete has no condition (R2 has none; S3's is recent): check, then
      // delete. The window between the two is a few milliseconds; see the README.
      const k = key(path);
      const head = await driver.head(k);
      if (!head) return { ok: true };
      if (head.etag !== opts.ifMatch) return { ok: false, conflict: true };
      await driver.delete(k);
      return { ok: true };
    },
    async mkdir(dir) {
      const r = await makeDirMarker(driver, tenant, workspace, normalizeFilePath(dir));
      return r.ok ? { ok: true, etag: r.etag } : { ok: false, conflict: true };
    },
    rmdir: async (dir, opts) => ((await removeDirMarker(driver, tenant, workspace, normalizeFilePath(dir), opts.ifMatch)) ? { ok: true } : { ok: false, conflict: true }),
    updateModes: (delta) => updateModes(driver, tenant, workspace, delta),
  };
}

/**
 * A manifest: the immutable lower layer of a workspace. Sorted entries (storage order of their
 * keys, lib/workspace/entries.ts compareKeys), each a file (its bytes at `offset` in pack
 * `packs[pack]`) or an explicit directory (path ending "/", no bytes). Written once under a
 * random id (t/<tenant>/manifests/<id>), read whole, cached per isolate by id (ManifestCache,
 * made by createApp and passed in: no module-level state).
 */
import { manifestKey } from "../layout/paths.js";
import type { StorageDriver } from "../storage/types.js";
import { compareKeys } from "../layout/key-order.js";
import { IsolateMemory, type MemoryRegion } from "../shared/isolate-memory.js";


export interface ManifestEntry {
  /** Path relative to the files prefix; an explicit directory ends with "/". */
  path: string;
  etag: string;
  size: number;
  /** Milliseconds since the epoch. */
  modified: number;
  /** Index into Manifest.packs; -1 for a directory or an empty file. */
  pack: number;
  offset: number;
}

/** Stored form: {v:1, packs, entries: [path, etag, size, modified, pack, offset][]}. */
type Row = [string, string, number, number, number, number];

export class Manifest {
  /** Values derived from the entries alone, made on first use (see derive). */
  private readonly derived = new Map<string, unknown>();

  constructor(readonly id: string, readonly packs: readonly string[], readonly entries: readonly ManifestEntry[]) {}

  /**
   * `make(this)`, made once per `key` and kept with the manifest, so as long as the isolate's
   * ManifestCache keeps it: the entries never change, so neither does anything made from them
   * alone. Values only, never a promise: the manifest outlives the request that made the value,
   * and a later request awaiting a promise another request started is cancelled by the Workers
   * runtime as hung when that request is gone ("Promise will never complete"). Keep what an
   * async step yields in the value once it is known (lib/sync/buckets.ts lowerBuckets).
   */
  derive<T>(key: string, make: (m: Manifest) => T): T {
    if (this.derived.has(key)) return this.derived.get(key) as T;
    const value = make(this);
    if (value instanceof Promise) throw new Error(`Manifest.derive(${key}) made a promise; keep values only (a promise would be awaited across requests).`);
    this.derived.set(key, value);
    return value;
  }

  /** Index of the first entry whose path is ≥ `path` (> with `strict`). */
  bound(path: string, strict = false): number {
    let lo = 0;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const c = compareKeys(this.entries[mid]!.path, path);
      if (c < 0 || (strict && c === 0)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  find(path: string): ManifestEntry | undefined {
    const e = this.entries[this.bound(path)];
    return e && e.path === path ? e : undefined;
  }

  /** Whether any entry lies below the directory prefix `dirSlash` ("a/b/"). */
  hasBelow(dirSlash: string): boolean {
    const e = this.entries[this.bound(dirSlash)];
    return !!e && e.path.startsWith(dirSlash);
  }

  encode(): string {
    return JSON.stringify({ v: 1, packs: this.packs, entries: this.entries.map((e): Row => [e.path, e.etag, e.size, e.modified, e.pack, e.offset]) });
  }

  static decode(id: string, text: string): Manifest {
    const j = JSON.parse(text) as { v: number; packs: string[]; entries: Row[] };
    if (j.v !== 1) throw new Error(`Unknown manifest version ${j.v}`);
    return new Manifest(id, j.packs, j.entries.map(([path, etag, size, modified, pack, offset]) => ({ path, etag, size, modified, pack, offset })));
  }

  static empty(): Manifest {
    return new Manifest("", [], []);
  }
}

/** Sorts entries into storage order and keeps the last of equal paths. */
export function sortEntries(entries: ManifestEntry[]): ManifestEntry[] {
  entries.sort((a, b) => compareKeys(a.path, b.path));
  const out: ManifestEntry[] = [];
  for (const e of entries) {
    if (out.length && out[out.length - 1]!.path === e.path) out[out.length - 1] = e;
    else out.push(e);
  }
  return out;
}

/** Isolate memory counted per manifest entry held (its path, etag, pack and range, mode: ~200 bytes). */
export const MANIFEST_ENTRY_BYTES = 200;

/**
 * Manifests by id, per isolate (they never change): a region of the isolate's one cache budget
 * (lib/shared/isolate-memory.ts), each weighing MANIFEST_ENTRY_BYTES per entry: the default 48 MB holds
 * ~250,000 entries if nothing else is kept (a manifest larger than the budget is still used, alone).
 */
export class ManifestCache {
  private readonly byId: MemoryRegion<Manifest>;
  constructor(memory = new IsolateMemory()) {
    this.byId = memory.region("manifests");
  }

  async load(driver: StorageDriver, tenant: string, id: string): Promise<Manifest> {
    const key = `${tenant}/${id}`;
    const hit = this.byId.get(key);
    if (hit) return hit;
    const r = await driver.get(manifestKey(tenant, id));
    if (!r) throw new Error(`Manifest ${id} of tenant ${tenant} is missing`);
    const m = Manifest.decode(id, await new Response(r.body).text());
    this.byId.set(key, m, m.entries.length * MANIFEST_ENTRY_BYTES);
    return m;
  }

  /** The manifest if this isolate holds it (no I/O): what a speculative read may use (lib/workspace/early.ts). */
  peek(tenant: string, id: string): Manifest | undefined {
    return this.byId.get(`${tenant}/${id}`);
  }

  /** A manifest this isolate just wrote. */
  remember(tenant: string, m: Manifest): void {
    this.byId.set(`${tenant}/${m.id}`, m, m.entries.length * MANIFEST_ENTRY_BYTES);
  }
}

/** Writes a manifest under its id (create-only: ids are unique). */
export async function writeManifest(driver: StorageDriver, cache: ManifestCache, tenant: string, m: Manifest): Promise<void> {
  const body = m.encode();
  await driver.put(manifestKey(tenant, m.id), body, { ifNoneMatch: "*", contentType: "application/json" });
  cache.remember(tenant, m);
}

/**
 * Where the search index lives: objects under the workspace's internal prefix
 * (`t/<tenant>/w/<ws>/x/search/v1/`), never listed as files.
 *
 *   seg/<id>_<headerEnd>_<dictEnd>_<contentBytes>_<files>   immutable segments (segment.ts)
 *   lock/<name>                                  short leases (merges)
 *   bounds.json                                  listing split points (a hint)
 *
 * Segment ids start with the creation time, so listing order is age order. Everything
 * here is a hint for speed: the file listing is the truth (see README.md).
 */
import { internalPrefix } from "../layout/paths.js";
import { isConditionFailed, type StorageDriver } from "../storage/types.js";
import { parseFileTable, SegmentHead, type BuiltSegment, type SegmentFile } from "./segment.js";
import { SegmentCache } from "./segment-cache.js";

/** Counts storage operations of one request against a ceiling (Workers: subrequests). */
export class Budget {
  used = 0;
  gets = 0;
  lists = 0;
  puts = 0;
  constructor(readonly max: number) {}
  get left(): number {
    return this.max - this.used;
  }
  take(kind: "get" | "list" | "put", n = 1): void {
    this.used += n;
    if (kind === "get") this.gets += n;
    else if (kind === "list") this.lists += n;
    else this.puts += n;
  }
}

export interface SegmentRef {
  key: string;
  id: string;
  /** End of the header JSON (the file table). */
  headerEnd: number;
  /** End of the dictionary: a read of [0, dictEnd) gives everything a query needs first. */
  dictEnd: number;
  contentBytes: number;
  files: number;
  /** Object size. */
  size: number;
}

/** Segments this small are read whole in one request. */
const READ_WHOLE_BELOW = 512 * 1024;

export class IndexStore {
  readonly base: string;
  /** segmentCache: segment bytes this isolate read before (segment-cache.ts); a hit costs no request. */
  constructor(readonly driver: StorageDriver, tenant: string, workspace: string, readonly budget: Budget = new Budget(Infinity), private readonly segmentCache?: SegmentCache) {
    this.base = `${internalPrefix(tenant, workspace)}search/v1/`;
  }

  static newId(now = Date.now()): string {
    const rand = Array.from(crypto.getRandomValues(new Uint8Array(5)), (b) => b.toString(16).padStart(2, "0")).join("");
    return `${now.toString(36).padStart(9, "0")}-${rand}`;
  }

  /** Creation time (ms) of a segment id. */
  static timeOf(id: string): number {
    return parseInt(id.slice(0, id.indexOf("-")), 36);
  }

  private parseRef(key: string, size: number): SegmentRef | null {
    const name = key.slice(`${this.base}seg/`.length);
    const m = /^([0-9a-z]+-[0-9a-f]+)_(\d+)_(\d+)_(\d+)_(\d+)$/.exec(name);
    if (!m) return null;
    return { key, id: m[1]!, headerEnd: Number(m[2]), dictEnd: Number(m[3]), contentBytes: Number(m[4]), files: Number(m[5]), size };
  }

  /** Every segment, oldest first. */
  async listSegments(): Promise<SegmentRef[]> {
    const out: SegmentRef[] = [];
    let cursor: string | undefined;
    do {
      this.budget.take("list");
      const r = await this.driver.list({ prefix: `${this.base}seg/`, ...(cursor ? { cursor } : {}) });
      for (const o of r.objects) {
        const ref = this.parseRef(o.key, o.size);
        if (ref) out.push(ref);
      }
      cursor = r.cursor;
    } while (cursor);
    return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** A fresh key for segment `s` (its id is new: the creation time and random bytes). */
  segmentKey(s: BuiltSegment): string {
    return `${this.base}seg/${IndexStore.newId()}_${s.headerEnd}_${s.dictEnd}_${s.contentBytes}_${s.files}`;
  }

  /** Stores segment `s` under `key` (default: a fresh segmentKey). */
  async putSegment(s: BuiltSegment, key = this.segmentKey(s)): Promise<SegmentRef> {
    this.budget.take("put");
    await this.driver.put(key, s.bytes, { length: s.bytes.length });
    return this.parseRef(key, s.bytes.length)!;
  }

  async deleteSegments(refs: SegmentRef[]): Promise<void> {
    if (refs.length === 0) return;
    this.budget.take("put");
    await this.driver.delete(refs.map((r) => r.key));
  }

  /** Header and dictionary of a segment (the whole object when small); null when it is gone. */
  async readHead(ref: SegmentRef): Promise<SegmentHead | null> {
    const parsed = this.segmentCache?.head(ref.key);
    if (parsed) return parsed;
    const whole = ref.size <= READ_WHOLE_BELOW || ref.dictEnd >= ref.size / 2;
    const range = whole ? undefined : { offset: 0, length: ref.dictEnd };
    // The parsed head is kept instead of its bytes (it holds them); bytes only when it is too big to keep.
    const bytes = await this.read(ref, range, false);
    if (!bytes) return null;
    const head = new SegmentHead(bytes, whole);
    // Its weight: the bytes it holds, and its parsed file table (about twice the table's JSON).
    if (this.segmentCache && !this.segmentCache.setHead(ref.key, head, bytes.length + 2 * ref.headerEnd)) this.segmentCache.set(SegmentCache.keyOf(ref.key, range), bytes);
    return head;
  }

  /** Only the file table of a segment; null when it is gone. */
  async readFileTable(ref: SegmentRef): Promise<SegmentFile[] | null> {
    const bytes = await this.read(ref, { offset: 0, length: ref.headerEnd });
    return bytes ? parseFileTable(bytes) : null;
  }

  /** A byte range of a segment (kept in the isolate's cache unless `keep` is false); null when it is gone. */
  async read(ref: SegmentRef, range?: { offset: number; length: number }, keep = true): Promise<Uint8Array | null> {
    const cacheKey = SegmentCache.keyOf(ref.key, range);
    const hit = this.segmentCache?.get(cacheKey);
    if (hit) return hit;
    this.budget.take("get");
    const r = await this.driver.get(ref.key, range ? { range } : undefined);
    if (!r) return null;
    const bytes = new Uint8Array(await new Response(r.body).arrayBuffer());
    if (keep) this.segmentCache?.set(cacheKey, bytes);
    return bytes;
  }

  // ---- leases ----

  /** Takes a lease (create-only write); a lease older than ttlMs is broken. */
  async tryLock(name: string, ttlMs: number): Promise<boolean> {
    const key = `${this.base}lock/${name}`;
    try {
      this.budget.take("put");
      await this.driver.put(key, JSON.stringify({ at: Date.now() }), { ifNoneMatch: "*" });
      return true;
    } catch (e) {
      if (!isConditionFailed(e)) throw e;
      this.budget.take("get");
      const h = await this.driver.head(key);
      if (h && Date.now() - h.modified.getTime() > ttlMs) {
        this.budget.take("put");
        await this.driver.delete(key);
      }
      return false;
    }
  }

  async unlock(name: string): Promise<void> {
    this.budget.take("put");
    await this.driver.delete(`${this.base}lock/${name}`);
  }

  // ---- listing bounds (a hint for parallel listing) ----

  async readBounds(): Promise<string[] | null> {
    this.budget.take("get");
    const r = await this.driver.get(`${this.base}bounds.json`);
    if (!r) return null;
    try {
      const v = JSON.parse(await new Response(r.body).text()) as { bounds?: unknown };
      return Array.isArray(v.bounds) && v.bounds.every((b) => typeof b === "string") ? (v.bounds as string[]) : null;
    } catch {
      return null;
    }
  }

  async writeBounds(bounds: string[]): Promise<void> {
    this.budget.take("put");
    await this.driver.put(`${this.base}bounds.json`, JSON.stringify({ v: 1, at: new Date().toISOString(), bounds }));
  }
}

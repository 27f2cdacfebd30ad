/**
 * Bytes of index segments this isolate read, kept for the next search (issue #11 §4: "cache what
 * is safe to cache inside an isolate"). Safe without any expiry: a segment is immutable (written
 * once under a fresh id: store.ts) and a search uses it only for the (path, etag) pairs the file
 * listing of that same search confirms, so bytes of a segment deleted since (merged by a vacuum)
 * say nothing wrong. Keyed by the segment's key (tenant and workspace are in it) and the range.
 * Bounded by bytes, least recently used dropped first (lib/weighted-lru.ts). Made by createApp.
 */
import { WeightedLru } from "../weighted-lru.js";

export class SegmentCache {
  private readonly byKey: WeightedLru<Uint8Array>;
  /** Ranges larger than a quarter of the bound are never kept. */
  constructor(readonly maxBytes = 16 * 1024 * 1024) {
    this.byKey = new WeightedLru(maxBytes);
  }

  static keyOf(key: string, range?: { offset: number; length: number }): string {
    return range ? `${key}@${range.offset}+${range.length}` : key;
  }

  get(k: string): Uint8Array | undefined {
    return this.byKey.get(k);
  }

  set(k: string, bytes: Uint8Array): void {
    if (bytes.length > this.maxBytes / 4 || this.byKey.has(k)) return;
    this.byKey.set(k, bytes, bytes.length);
  }

  /** Bytes held (tests). */
  get bytes(): number {
    return this.byKey.weight;
  }
}

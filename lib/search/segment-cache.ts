/**
 * Bytes of index segments this isolate read, kept for the next search (issue #11 §4: "cache what
 * is safe to cache inside an isolate"). Safe without any expiry: a segment is immutable (written
 * once under a fresh id: store.ts) and a search uses it only for the (path, etag) pairs the file
 * listing of that same search confirms, so bytes of a segment deleted since (merged by a vacuum)
 * say nothing wrong. Keyed by the segment's key (tenant and workspace are in it) and the range.
 * A region of the isolate's one cache budget (lib/shared/isolate-memory.ts), least recently used dropped
 * first. Made by createApp.
 */
import { IsolateMemory, type MemoryRegion } from "../shared/isolate-memory.js";

/** Largest range kept (and never more than a quarter of the budget). */
export const MAX_CACHED_RANGE_BYTES = 4 * 1024 * 1024;

export class SegmentCache {
  private readonly byKey: MemoryRegion<Uint8Array>;
  private readonly maxRange: number;
  constructor(memory = new IsolateMemory()) {
    this.byKey = memory.region("segments");
    this.maxRange = Math.min(MAX_CACHED_RANGE_BYTES, memory.maxBytes / 4);
  }

  static keyOf(key: string, range?: { offset: number; length: number }): string {
    return range ? `${key}@${range.offset}+${range.length}` : key;
  }

  get(k: string): Uint8Array | undefined {
    return this.byKey.get(k);
  }

  set(k: string, bytes: Uint8Array): void {
    if (bytes.length > this.maxRange || this.byKey.has(k)) return;
    this.byKey.set(k, bytes, bytes.length);
  }

  /** Bytes held (tests). */
  get bytes(): number {
    return this.byKey.bytes;
  }
}

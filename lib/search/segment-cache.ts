/**
 * Index segments this isolate read, kept for the next search (issue #11 §4: "cache what is safe to
 * cache inside an isolate"): byte ranges, and segment heads already parsed (the file table and the
 * dictionary: parsing a 10,000-file table again on every grep was a large part of a search's fixed
 * cost). Safe without any expiry: a segment is immutable (written once under a fresh id: store.ts)
 * and a search uses it only for the (path, etag) pairs the file listing of that same search
 * confirms, so a segment deleted since (merged by a vacuum) says nothing wrong. Keyed by the
 * segment's key (tenant and workspace are in it) and the range. A region of the isolate's one cache
 * budget (lib/shared/isolate-memory.ts), least recently used dropped first. Made by createApp.
 */
import { IsolateMemory, type MemoryRegion } from "../shared/isolate-memory.js";
import type { SegmentHead } from "./segment.js";

/** Largest range kept (and never more than a quarter of the budget). */
export const MAX_CACHED_RANGE_BYTES = 4 * 1024 * 1024;

/** A parsed head's key in the region (no byte range's key ends so: those end in a digit or the segment's key). */
const HEAD = "\u0000head";

export class SegmentCache {
  private readonly byKey: MemoryRegion<Uint8Array | SegmentHead>;
  private readonly maxRange: number;
  constructor(memory = new IsolateMemory()) {
    this.byKey = memory.region("segments");
    this.maxRange = Math.min(MAX_CACHED_RANGE_BYTES, memory.maxBytes / 4);
  }

  static keyOf(key: string, range?: { offset: number; length: number }): string {
    return range ? `${key}@${range.offset}+${range.length}` : key;
  }

  get(k: string): Uint8Array | undefined {
    const v = this.byKey.get(k);
    return v instanceof Uint8Array ? v : undefined;
  }

  set(k: string, bytes: Uint8Array): void {
    if (bytes.length > this.maxRange || this.byKey.has(k)) return;
    this.byKey.set(k, bytes, bytes.length);
  }

  /** The parsed head of segment `key`, when this isolate parsed it before. */
  head(key: string): SegmentHead | undefined {
    const v = this.byKey.get(key + HEAD);
    return v instanceof Uint8Array ? undefined : v;
  }

  /**
   * Keeps a parsed head at `bytes` (what it holds: the bytes it was parsed from, which it keeps,
   * and its file table); false when that is over the largest range kept.
   */
  setHead(key: string, head: SegmentHead, bytes: number): boolean {
    if (bytes > this.maxRange) return false;
    if (!this.byKey.has(key + HEAD)) this.byKey.set(key + HEAD, head, bytes);
    return true;
  }

  /** Bytes held (tests). */
  get bytes(): number {
    return this.byKey.bytes;
  }
}

/**
 * Bytes of index segments this isolate read, kept for the next search (issue #11 §4: "cache what
 * is safe to cache inside an isolate"). Safe without any expiry: a segment is immutable (written
 * once under a fresh id: store.ts) and a search uses it only for the (path, etag) pairs the file
 * listing of that same search confirms, so bytes of a segment deleted since (merged by a vacuum)
 * say nothing wrong. Keyed by the segment's key (tenant and workspace are in it) and the range.
 * Bounded by bytes, least recently used dropped first. Made by createApp (no module-level state).
 */
export class SegmentCache {
  private readonly byKey = new Map<string, Uint8Array>();
  private held = 0;
  /** Ranges larger than a quarter of the bound are never kept. */
  constructor(readonly maxBytes = 16 * 1024 * 1024) {}

  static keyOf(key: string, range?: { offset: number; length: number }): string {
    return range ? `${key}@${range.offset}+${range.length}` : key;
  }

  get(k: string): Uint8Array | undefined {
    const hit = this.byKey.get(k);
    if (hit) {
      this.byKey.delete(k);
      this.byKey.set(k, hit);
    }
    return hit;
  }

  set(k: string, bytes: Uint8Array): void {
    if (bytes.length > this.maxBytes / 4 || this.byKey.has(k)) return;
    this.byKey.set(k, bytes);
    this.held += bytes.length;
    for (const [old, v] of this.byKey) {
      if (this.held <= this.maxBytes) break;
      this.byKey.delete(old);
      this.held -= v.length;
    }
  }

  /** Bytes held (tests). */
  get bytes(): number {
    return this.held;
  }
}

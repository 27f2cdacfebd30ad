/**
 * Values of things that never change (manifests, index segments), kept per isolate up to a total
 * weight (entries, bytes): a hit makes its key the most recently used, and a value put in drops
 * the least recently used ones until the total fits again, the value just put in excepted (a
 * value heavier than the whole bound is still kept, alone). Callers made by createApp; no
 * module-level state. `dropped` is told of every entry that leaves (room made, deleted, replaced).
 */
export class WeightedLru<V> {
  private readonly byKey = new Map<string, { value: V; weight: number }>();
  private held = 0;

  constructor(
    private readonly maxWeight: number,
    private readonly dropped?: (key: string, weight: number) => void,
  ) {}

  get(key: string): V | undefined {
    const hit = this.byKey.get(key);
    if (!hit) return undefined;
    this.byKey.delete(key);
    this.byKey.set(key, hit);
    return hit.value;
  }

  has(key: string): boolean {
    return this.byKey.has(key);
  }

  set(key: string, value: V, weight: number): void {
    const old = this.byKey.get(key);
    if (old) {
      this.byKey.delete(key);
      this.held -= old.weight;
      this.dropped?.(key, old.weight);
    }
    this.byKey.set(key, { value, weight });
    this.held += weight;
    for (const [k, v] of this.byKey) {
      if (this.held <= this.maxWeight || k === key) break;
      this.byKey.delete(k);
      this.held -= v.weight;
      this.dropped?.(k, v.weight);
    }
  }

  delete(key: string): void {
    const old = this.byKey.get(key);
    if (!old) return;
    this.byKey.delete(key);
    this.held -= old.weight;
    this.dropped?.(key, old.weight);
  }

  /** The total weight held. */
  get weight(): number {
    return this.held;
  }
}

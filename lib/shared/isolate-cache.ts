/**
 * What a request reads from KV or storage on every call, cached per isolate for a few seconds
 * (issue #11 §4): tenant policies (the approval gate), custom tools, API keys (by hash), session
 * file records (lib/workspace/records.ts, which says what it may and may not conclude from them). An entry
 * changed through this isolate is seen at once (forget); one changed through another isolate
 * after at most `ttlMs` (default 5 s) on top of KV's own propagation (up to ~60 s).
 * Made by createApp (no module-level state); bounded to `maxEntries` entries (oldest dropped first).
 */
export class IsolateCache<T = unknown> {
  private readonly entries = new Map<string, { value: T; until: number }>();
  constructor(
    readonly ttlMs = 5_000,
    private readonly maxEntries = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  async get(key: string, load: () => Promise<T>): Promise<T> {
    const hit = this.peek(key);
    if (hit !== undefined) return hit;
    const value = await load();
    this.set(key, value);
    return value;
  }

  /** The entry of `key` while it is fresh, else undefined (nothing is loaded). */
  peek(key: string): T | undefined {
    const hit = this.entries.get(key);
    return hit && hit.until > this.now() ? hit.value : undefined;
  }

  /** Keeps `value` for `key` for ttlMs (what this isolate just read or wrote). */
  set(key: string, value: T): void {
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value, until: this.now() + this.ttlMs });
  }

  forget(key: string): void {
    this.entries.delete(key);
  }
}

/**
 * What a request reads from KV or storage on every call, cached per isolate for a few seconds
 * (issue #11 §4): tenant policies (the approval gate), custom tools, API keys (by hash). An entry
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
    const hit = this.entries.get(key);
    if (hit && hit.until > this.now()) return hit.value;
    const value = await load();
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value, until: this.now() + this.ttlMs });
    return value;
  }

  forget(key: string): void {
    this.entries.delete(key);
  }
}

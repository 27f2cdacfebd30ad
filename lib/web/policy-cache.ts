/**
 * Tenant policies cached per isolate for a few seconds (issue #11 §4): the approval gate reads
 * the policy on every tool call, and a KV read per call is the cost this saves. A policy changed
 * through this isolate's admin route is seen at once (forget); one changed through another
 * isolate is seen after at most `ttlMs` (default 5 s) on top of KV's own propagation (up to ~60 s).
 * Made by createApp (no module-level state); bounded to `maxTenants` entries.
 */
export class PolicyCache<T = unknown> {
  private readonly entries = new Map<string, { value: T; until: number }>();
  constructor(
    readonly ttlMs = 5_000,
    private readonly maxTenants = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  async get(tenant: string, load: () => Promise<T>): Promise<T> {
    const hit = this.entries.get(tenant);
    if (hit && hit.until > this.now()) return hit.value;
    const value = await load();
    if (this.entries.size >= this.maxTenants) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(tenant, { value, until: this.now() + this.ttlMs });
    return value;
  }

  forget(tenant: string): void {
    this.entries.delete(tenant);
  }
}

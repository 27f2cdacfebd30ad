/**
 * The concurrency of the local Invoke stand-in (local-server.ts): at most `max` invocations at
 * once, and at most `perTenant` of them for one tenant, so a tenant that floods the runner
 * fills its own share and the other tenants' commands still start. (AWS Lambda has no such
 * per-tenant bound: docs/runner-security.md, "Fair share".)
 */
export type Refusal = { scope: "tenant" | "function"; message: string };

export class TenantShare {
  private total = 0;
  private readonly byTenant = new Map<string, number>();

  constructor(
    readonly max: number,
    /** Default: a quarter of max (8 of 32), at least 1. */
    readonly perTenant = Math.max(1, Math.floor(max / 4)),
  ) {}

  /** Takes a place for `tenant`, or says why there is none (nothing is taken then). */
  take(tenant: string): Refusal | null {
    const mine = this.byTenant.get(tenant) ?? 0;
    if (mine >= this.perTenant)
      return { scope: "tenant", message: `This tenant already runs ${mine} commands at once, its share of the command runner (${this.perTenant} of ${this.max}); wait for one of them (or a background task) to finish, then retry.` };
    if (this.total >= this.max) return { scope: "function", message: `The command runner is running its most commands at once (${this.max}, all tenants together); retry in a few seconds.` };
    this.total++;
    this.byTenant.set(tenant, mine + 1);
    return null;
  }

  release(tenant: string): void {
    const mine = (this.byTenant.get(tenant) ?? 0) - 1;
    if (mine > 0) this.byTenant.set(tenant, mine);
    else this.byTenant.delete(tenant);
    this.total--;
  }

  /** Invocations running now (all tenants, or one). */
  running(tenant?: string): number {
    return tenant === undefined ? this.total : (this.byTenant.get(tenant) ?? 0);
  }
}

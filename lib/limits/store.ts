/**
 * The limits store: a tenant's limits and its counters, behind one interface. Workers: one
 * Durable Object per tenant (durable-object.ts); tests and runtimes without one: memoryLimits.
 * Every method is one round trip to the tenant's object.
 */
import { effectiveLimits, type Limits } from "./fields.js";
import { TenantLimiter, type CallDecision, type RunDecision } from "./limiter.js";

/** Who is calling: the key's id and its own limits (from its record). */
export interface Caller {
  key_id: string;
  limits?: Limits;
}

export interface LimitsStore {
  /** The tenant's own limits as set (unset fields: the defaults). */
  get(tenant: string): Promise<Limits>;
  /** Replaces the tenant's limits (fields left out go back to the defaults). */
  set(tenant: string, limits: Limits): Promise<Limits>;
  /** One call of calls_per_minute, from the tenant's bucket and the key's. */
  takeCall(tenant: string, caller: Caller): Promise<CallDecision>;
  /** A slot of concurrent_runs, leased for leaseMs (released by releaseRun, or freed when the lease ends). */
  acquireRun(tenant: string, caller: Caller, leaseMs: number): Promise<RunDecision>;
  releaseRun(tenant: string, lease: string): Promise<void>;
}

/** The operations one tenant's object answers (the Durable Object speaks the same). */
export interface TenantOps {
  get(): Limits;
  set(limits: Limits): Limits;
  takeCall(caller: Caller): CallDecision;
  acquireRun(caller: Caller, leaseMs: number): RunDecision;
  releaseRun(lease: string): boolean;
}

/** One tenant's state: its limits and a limiter. */
export function tenantOps(limiter: TenantLimiter, initial: Limits = {}): TenantOps & { limits: Limits } {
  const self = {
    limits: initial,
    get: () => self.limits,
    set(limits: Limits) {
      self.limits = limits;
      return limits;
    },
    takeCall(caller: Caller) {
      const eff = effectiveLimits(self.limits, caller.limits);
      return limiter.takeCall(caller.key_id, effectiveLimits(self.limits).calls_per_minute, eff.calls_per_minute);
    },
    acquireRun(caller: Caller, leaseMs: number) {
      return limiter.acquireRun(caller.key_id, effectiveLimits(self.limits).concurrent_runs, effectiveLimits(self.limits, caller.limits).concurrent_runs, leaseMs);
    },
    releaseRun: (lease: string) => limiter.releaseRun(lease),
  };
  return self;
}

/** Every tenant's state in this process's memory: exact within one process, for tests and single-process runtimes. */
export function memoryLimits(now: () => number = Date.now): LimitsStore {
  const tenants = new Map<string, ReturnType<typeof tenantOps>>();
  const of = (t: string) => {
    let ops = tenants.get(t);
    if (!ops) tenants.set(t, (ops = tenantOps(new TenantLimiter(now))));
    return ops;
  };
  return {
    get: async (t) => of(t).get(),
    set: async (t, l) => of(t).set(l),
    takeCall: async (t, c) => of(t).takeCall(c),
    acquireRun: async (t, c, ms) => of(t).acquireRun(c, ms),
    releaseRun: async (t, lease) => void of(t).releaseRun(lease),
  };
}

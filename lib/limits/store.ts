/**
 * The limits store: a tenant's limits and its counters, behind one interface. Workers: one
 * Durable Object per tenant (durable-object.ts); tests and runtimes without one: memoryLimits.
 * Every method is one round trip to the tenant's object.
 */
import { effectiveLimits, type Limits } from "./fields.js";
import { TenantLimiter, type CallDecision, type CallLease, type KeyBudget, type LeaseHolder, type RunDecision } from "./limiter.js";
import { TenantUsage, type ChargeOptions, type CheckpointSlotDecision, type SlotDecision, type SlotOutcome, type StorageDecision, type StorageUsage, type TaskDecision } from "./usage.js";
import { claimKey, memoryClaims, releaseClaim, type ClaimAnswer, type ClaimAsk } from "./claims.js";

/** Who is calling: the key's id and its own limits (from its record). */
export interface Caller {
  key_id: string;
  limits?: Limits;
  /**
   * The keys above it that carry limits of their own, nearest first (AuthInfo.maker_limits): a key made
   * by a limited key takes its calls and run slots from their budgets too, so making keys never
   * multiplies what a limited key may do.
   */
  maker_limits?: readonly { key_id: string; limits: Limits }[];
}

export interface LimitsStore {
  /** The tenant's own limits as set (unset fields: the defaults). */
  get(tenant: string): Promise<Limits>;
  /** Replaces the tenant's limits (fields left out go back to the defaults). */
  set(tenant: string, limits: Limits): Promise<Limits>;
  /**
   * One call of calls_per_minute, from the tenant's bucket and the key's; with `claim`, in the same
   * round trip, the Idempotency-Key's claim (claims.ts), taken only when the call passes; with `extra`,
   * up to that many calls more for the asking isolate's pool (limiter.ts leaseCap; call-leases.ts).
   */
  takeCall(tenant: string, caller: Caller, claim?: ClaimAsk, extra?: number): Promise<Admitted>;
  /** Up to `want` calls ahead for an isolate's pool, no call now (call-leases.ts refills its pool with it, after the answer). */
  leaseCalls(tenant: string, caller: Caller, want: number): Promise<CallLease>;
  /** An Idempotency-Key's claim alone (a takeover after a lease: claims.ts). */
  claimKey(tenant: string, ask: ClaimAsk): Promise<ClaimAnswer>;
  /** Drops an Idempotency-Key's claim `id` (nothing kept: a retry runs again). */
  releaseClaim(tenant: string, key: string, id: string): Promise<void>;
  /**
   * A slot of concurrent_runs, leased for leaseMs (released by releaseRun, or freed when the lease ends).
   * `holder`: the live sandbox or fresh run holding it, kept with the lease (a refusal names the holders counted: lib/exec/limited.ts acquireSlot).
   */
  acquireRun(tenant: string, caller: Caller, leaseMs: number, holder?: LeaseHolder): Promise<RunDecision>;
  releaseRun(tenant: string, lease: string): Promise<void>;
  /** Charges a workspace's change of files and bytes before it is written (negative: gives back); usage.ts. */
  chargeStorage(tenant: string, caller: Caller, ws: string, delta: StorageUsage, opts?: ChargeOptions): Promise<StorageDecision>;
  /** Sets a workspace's count after a bulk change (null: the workspace is gone). */
  setStorage(tenant: string, ws: string, usage: StorageUsage | null): Promise<void>;
  /** A pending slot of the workspaces quota, held while a create counts and writes (released by releaseWorkspace, or when the lease ends). */
  reserveWorkspace(tenant: string, caller: Caller, leaseMs: number): Promise<SlotDecision>;
  /** `outcome`: how the create ended (usage.ts SlotOutcome: a made workspace is added to a trusted count); absent: unknown. */
  releaseWorkspace(tenant: string, slot: string, outcome?: SlotOutcome): Promise<void>;
  /** A slot of checkpoints_per_workspace for checkpoint `id` of `ws`, held while it is made (released by releaseCheckpoint, or when the lease ends). */
  reserveCheckpoint(tenant: string, caller: Caller, ws: string, id: string, leaseMs: number): Promise<CheckpointSlotDecision>;
  releaseCheckpoint(tenant: string, id: string): Promise<void>;
  /** A place of background_tasks for task `id`, leased for leaseMs. */
  acquireTask(tenant: string, caller: Caller, id: string, leaseMs: number): Promise<TaskDecision>;
  releaseTasks(tenant: string, ids: readonly string[]): Promise<void>;
}

/** A call's token, its key's claim when one was asked and the call passed, and the calls given ahead (`extra`). */
export type Admitted = CallDecision & { claim?: ClaimAnswer; extra?: number };

/** The operations one tenant's object answers (the Durable Object speaks the same). */
export interface TenantOps {
  get(): Limits;
  set(limits: Limits): Limits;
  takeCall(caller: Caller, extra?: number): CallDecision & { extra: number };
  leaseCalls(caller: Caller, want: number): CallLease;
  acquireRun(caller: Caller, leaseMs: number, holder?: LeaseHolder): RunDecision;
  releaseRun(lease: string): boolean;
  chargeStorage(caller: Caller, ws: string, delta: StorageUsage, opts?: ChargeOptions): StorageDecision;
  setStorage(ws: string, usage: StorageUsage | null): void;
  reserveWorkspace(caller: Caller, leaseMs: number): SlotDecision;
  releaseWorkspace(slot: string, outcome?: SlotOutcome): void;
  reserveCheckpoint(caller: Caller, ws: string, id: string, leaseMs: number): CheckpointSlotDecision;
  releaseCheckpoint(id: string): boolean;
  acquireTask(caller: Caller, id: string, leaseMs: number): TaskDecision;
  releaseTasks(ids: readonly string[]): boolean;
}

/** The budgets above the caller's own for `field`: each maker's key that limits it, with its limit (as the tenant's bounds it). */
const makersOf = (caller: Caller, field: "calls_per_minute" | "concurrent_runs"): KeyBudget[] =>
  (caller.maker_limits ?? []).flatMap((m) => (m.limits[field] !== undefined ? [{ id: m.key_id, limit: m.limits[field] }] : []));

/** One tenant's state: its limits, a limiter and its quota counters. */
export function tenantOps(limiter: TenantLimiter, initial: Limits = {}, usage: TenantUsage = new TenantUsage()): TenantOps & { limits: Limits } {
  const self = {
    limits: initial,
    get: () => self.limits,
    set(limits: Limits) {
      self.limits = limits;
      return limits;
    },
    takeCall(caller: Caller, extra = 0) {
      return limiter.takeCall(caller.key_id, effectiveLimits(self.limits).calls_per_minute, effectiveLimits(self.limits, caller.limits).calls_per_minute, extra, makersOf(caller, "calls_per_minute"));
    },
    leaseCalls(caller: Caller, want: number) {
      return limiter.leaseCalls(caller.key_id, effectiveLimits(self.limits).calls_per_minute, effectiveLimits(self.limits, caller.limits).calls_per_minute, want, makersOf(caller, "calls_per_minute"));
    },
    acquireRun(caller: Caller, leaseMs: number, holder?: LeaseHolder) {
      return limiter.acquireRun(caller.key_id, effectiveLimits(self.limits).concurrent_runs, effectiveLimits(self.limits, caller.limits).concurrent_runs, leaseMs, holder, makersOf(caller, "concurrent_runs"));
    },
    releaseRun: (lease: string) => limiter.releaseRun(lease),
    chargeStorage: (caller: Caller, ws: string, delta: StorageUsage, opts?: ChargeOptions) => usage.chargeStorage(ws, delta, effectiveLimits(self.limits, caller.limits), opts),
    setStorage: (ws: string, u: StorageUsage | null) => usage.setStorage(ws, u),
    reserveWorkspace: (caller: Caller, leaseMs: number) => ({ ...usage.reserveSlot(leaseMs), limit: effectiveLimits(self.limits, caller.limits).workspaces }),
    releaseWorkspace: (slot: string, outcome?: SlotOutcome) => usage.releaseSlot(slot, outcome),
    reserveCheckpoint: (caller: Caller, ws: string, id: string, leaseMs: number) => ({ ...usage.reserveCheckpoint(ws, id, leaseMs), limit: effectiveLimits(self.limits, caller.limits).checkpoints_per_workspace }),
    releaseCheckpoint: (id: string) => usage.releaseCheckpoint(id),
    acquireTask: (caller: Caller, id: string, leaseMs: number) => usage.acquireTask(id, effectiveLimits(self.limits, caller.limits).background_tasks, leaseMs),
    releaseTasks: (ids: readonly string[]) => usage.releaseTasks(ids),
  };
  return self;
}

/** Every tenant's state in this process's memory: exact within one process, for tests and single-process runtimes. */
export function memoryLimits(now: () => number = Date.now): LimitsStore {
  const tenants = new Map<string, ReturnType<typeof tenantOps>>();
  const of = (t: string) => {
    let ops = tenants.get(t);
    if (!ops) tenants.set(t, (ops = tenantOps(new TenantLimiter(now), {}, new TenantUsage(now))));
    return ops;
  };
  const claims = new Map<string, ReturnType<typeof memoryClaims>>();
  const claimsOf = (t: string) => claims.get(t) ?? claims.set(t, memoryClaims()).get(t)!;
  // A claim's read and write are two awaits: one tenant's claim operations run one at a time, as the object runs them.
  const queues = new Map<string, Promise<unknown>>();
  const serial = <T>(t: string, f: () => Promise<T>): Promise<T> => {
    const p = (queues.get(t) ?? Promise.resolve()).then(f, f);
    queues.set(t, p.catch(() => {}));
    return p;
  };
  return {
    get: async (t) => of(t).get(),
    set: async (t, l) => of(t).set(l),
    async takeCall(t, c, ask, extra) {
      const d: Admitted = of(t).takeCall(c, extra);
      if (d.ok && ask) d.claim = await serial(t, () => claimKey(claimsOf(t), ask, now()));
      return d;
    },
    leaseCalls: async (t, c, want) => of(t).leaseCalls(c, want),
    claimKey: (t, ask) => serial(t, () => claimKey(claimsOf(t), ask, now())),
    releaseClaim: (t, key, id) => serial(t, async () => void (await releaseClaim(claimsOf(t), key, id))),
    acquireRun: async (t, c, ms, holder) => of(t).acquireRun(c, ms, holder),
    releaseRun: async (t, lease) => void of(t).releaseRun(lease),
    chargeStorage: async (t, c, ws, delta, opts) => of(t).chargeStorage(c, ws, delta, opts),
    setStorage: async (t, ws, u) => of(t).setStorage(ws, u),
    reserveWorkspace: async (t, c, ms) => of(t).reserveWorkspace(c, ms),
    releaseWorkspace: async (t, slot, outcome) => of(t).releaseWorkspace(slot, outcome),
    reserveCheckpoint: async (t, c, ws, id, ms) => of(t).reserveCheckpoint(c, ws, id, ms),
    releaseCheckpoint: async (t, id) => void of(t).releaseCheckpoint(id),
    acquireTask: async (t, c, id, ms) => of(t).acquireTask(c, id, ms),
    releaseTasks: async (t, ids) => void of(t).releaseTasks(ids),
  };
}

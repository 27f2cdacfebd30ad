/**
 * One tenant's counters, in one place (a Durable Object per tenant on Workers, memory in tests):
 * the token buckets of calls per minute (the tenant's and one per key) and the leases of running
 * sandbox commands. Pure state over a clock: every decision is made here, atomically, so callers
 * on any isolate or instance see one count.
 *
 * Token bucket: capacity = calls_per_minute, refilled continuously at calls_per_minute / 60 per
 * second, starting full. A call takes one token from the tenant's bucket and from its key's (both
 * or neither), and from the bucket of each key above its key that has a limit of its own (`makers`:
 * a key made through POST /v1/keys by a limited key, at any depth; all or none). Over any interval of
 * T seconds at most capacity + rate × T calls pass, whatever keys a limited key made.
 */
/** A bucket in exact integer units: one call is MINUTE_MS units, and each ms adds `capacity` units (so no float drift). */
export interface Bucket {
  units: number;
  /** When units was last brought up to date, ms. */
  at: number;
}

export interface RateState {
  /** Which bucket bounds this answer: the one with fewer tokens left. */
  policy: "tenant" | "key";
  /** Its capacity (calls per minute). */
  limit: number;
  /** Whole calls left in it after this one. */
  remaining: number;
  /** Seconds until it is full again. */
  reset: number;
}

export type CallDecision = ({ ok: true } | { ok: false; retry_after: number }) & RateState & { tenant_limit: number; key_limit: number };

/** Calls taken ahead for an isolate's own pool (lib/limits/call-leases.ts): `granted` of them, and the state of the bucket after. */
export type CallLease = RateState & { granted: number; tenant_limit: number; key_limit: number };

/**
 * Who holds a slot: a live sandbox (lib/exec/live/: its session and the generation of runner started
 * for it) or a fresh run (its run id: its record x/runs/<run>/, lib/sync/run-records.ts). A slot past
 * the limit whose holder is provably over is freed by the next acquirer (lib/exec/limited.ts
 * acquireSlot): a live holder no longer its session's current generation (a restart forgot it, its
 * runner stopped polling), a run whose runner stored its result (its API instance died before it
 * released the slot).
 */
export type LeaseHolder = LiveHolder | RunHolder;

export interface LiveHolder {
  workspace: string;
  session: string;
  generation: string;
}

export interface RunHolder {
  workspace: string;
  run: string;
}

/** The holder's own fields, nothing more (what a lease keeps). */
const holderFields = (h: LeaseHolder): LeaseHolder => ("run" in h ? { workspace: h.workspace, run: h.run } : { workspace: h.workspace, session: h.session, generation: h.generation });

export interface Lease {
  id: string;
  key: string;
  /** The keys above `key` whose concurrent_runs it counts in too (KeyBudget, the caller's makers). */
  makers?: string[];
  until: number;
  holder?: LeaseHolder;
}

/** The key's quota as RateLimit-Policy names it: the smallest of its own limit and its makers' (the budget its calls can keep up). */
const keyQuota = (keyLimit: number, makers: readonly KeyBudget[]): number => Math.min(keyLimit, ...makers.map((m) => m.limit));

/** A budget above the calling key's own: a key that made it (at any depth) and that key's own limit. */
export interface KeyBudget {
  id: string;
  limit: number;
}

/** A limiter's whole state, as a store without memory of its own keeps it (lib/limits/dynamodb.ts). */
export interface LimiterState {
  tenant?: Bucket;
  /** Key buckets used within the last minute (an older one is full, as a new one starts). */
  keys: [string, Bucket][];
  leases: Lease[];
  seq: number;
}

/**
 * Refused: `by` names whose concurrent_runs was reached, the calling key's own or the tenant's;
 * `holders`, the leases counted that name a holder (live sandboxes, fresh runs) (for the acquirer to ask whether they still run; never told to the caller).
 */
export type RunDecision =
  | { ok: true; lease: string; running: number; limit: number }
  | { ok: false; running: number; limit: number; retry_after: number; by?: "key" | "tenant"; holders?: { lease: string; holder: LeaseHolder }[] };

const MINUTE_MS = 60_000;

/**
 * How long calls taken ahead stay good (lib/limits/call-leases.ts): an isolate spends a call within
 * LEASE_MS of asking for it, or never. So over any T seconds at most capacity + rate × (T + LEASE_MS / 1000) calls pass.
 */
export const LEASE_MS = 10_000;

/** The most calls one answer gives ahead at `limit` per minute: what the bucket refills in LEASE_MS (0 under 6 a minute: every call asks). */
export const leaseCap = (limit: number) => Math.floor((limit * LEASE_MS) / MINUTE_MS);

function refill(b: Bucket, capacity: number, now: number): void {
  const full = capacity * MINUTE_MS;
  if (now > b.at) b.units += (now - b.at) * capacity;
  if (b.units > full) b.units = full;
  b.at = Math.max(b.at, now);
}

/** Whole calls a bucket holds. */
const calls = (b: Bucket) => Math.floor(b.units / MINUTE_MS);
/** Seconds until a bucket holds `units` more. */
const secondsFor = (units: number, capacity: number) => (capacity <= 0 ? 60 : Math.max(0, Math.ceil(units / capacity / 1000)));

export class TenantLimiter {
  private tenantBucket: Bucket | undefined;
  private readonly keyBuckets = new Map<string, Bucket>();
  readonly leases = new Map<string, Lease>();
  private seq = 0;

  constructor(private readonly now: () => number = Date.now) {}

  /**
   * Takes one call from the tenant's bucket and the key's, or refuses with the seconds until one is there.
   * `extra`: calls wanted ahead besides this one (an isolate's pool), given only when this one passes,
   * at most leaseCap of the smaller limit and what both buckets hold (`extra` in the answer: how many).
   */
  takeCall(keyId: string, tenantLimit: number, keyLimit: number, extra = 0, makers: readonly KeyBudget[] = []): CallDecision & { extra: number } {
    const { ok, granted, state, t, keys } = this.take([{ id: keyId, limit: keyLimit }, ...makers], tenantLimit, 1, extra);
    const limits = { tenant_limit: tenantLimit, key_limit: keyQuota(keyLimit, makers) };
    if (ok) return { ok: true, ...state, ...limits, extra: granted };
    const wait = Math.max(secondsFor(MINUTE_MS - t.units, tenantLimit), ...keys.map(({ b, limit }) => secondsFor(MINUTE_MS - b.units, limit)));
    return { ok: false, retry_after: Math.max(1, wait), ...state, ...limits, extra: 0 };
  }

  /** Up to `want` calls ahead (at most leaseCap of the smaller limit, and what every bucket holds), for no call now. */
  leaseCalls(keyId: string, tenantLimit: number, keyLimit: number, want: number, makers: readonly KeyBudget[] = []): CallLease {
    const { granted, state } = this.take([{ id: keyId, limit: keyLimit }, ...makers], tenantLimit, 0, want);
    return { ...state, granted, tenant_limit: tenantLimit, key_limit: keyQuota(keyLimit, makers) };
  }

  /** The tenant's bucket and each key's of `budgets` (the calling key's first): `need` from all or none, then up to `extra` more. */
  private take(budgets: readonly KeyBudget[], tenantLimit: number, need: 0 | 1, extra: number) {
    const now = this.now();
    const t = (this.tenantBucket ??= { units: tenantLimit * MINUTE_MS, at: now });
    refill(t, tenantLimit, now);
    const keys = budgets.map(({ id, limit }) => {
      let b = this.keyBuckets.get(id);
      if (!b) {
        if (this.keyBuckets.size >= 10_000) this.pruneKeys(now);
        b = { units: limit * MINUTE_MS, at: now };
        this.keyBuckets.set(id, b);
      }
      refill(b, limit, now);
      return { b, limit };
    });
    const all = [t, ...keys.map((k) => k.b)];
    const ok = all.every((b) => b.units >= need * MINUTE_MS);
    let granted = 0;
    if (ok) {
      for (const b of all) b.units -= need * MINUTE_MS;
      granted = Math.max(0, Math.min(Math.floor(extra), leaseCap(Math.min(tenantLimit, ...keys.map((k) => k.limit))), ...all.map(calls)));
      for (const b of all) b.units -= granted * MINUTE_MS;
    }
    // The bucket that binds: the one with fewer whole calls left (ties: the tenant's, then the calling key's own).
    const k = keys.reduce((a, x) => (calls(x.b) < calls(a.b) ? x : a));
    const byKey = calls(k.b) < calls(t);
    const [b, cap, policy] = byKey ? [k.b, k.limit, "key" as const] : [t, tenantLimit, "tenant" as const];
    const state: RateState = { policy, limit: cap, remaining: calls(b), reset: secondsFor(cap * MINUTE_MS - b.units, cap) };
    return { ok, granted, state, t, keys };
  }

  /** Full buckets say nothing a new bucket would not: dropped when the map grows large. */
  private pruneKeys(now: number): void {
    for (const [id, b] of this.keyBuckets) if (now - b.at >= MINUTE_MS) this.keyBuckets.delete(id);
  }

  /**
   * A slot for one sandbox run, held until released or until the lease ends (a crashed caller frees
   * it then): the tenant's running leases stay under tenantLimit and the key's under keyLimit.
   * `holder`: the live sandbox or run that holds it, kept with the lease and named in a refusal's `holders`.
   */
  acquireRun(keyId: string, tenantLimit: number, keyLimit: number, leaseMs: number, holder?: LeaseHolder, makers: readonly KeyBudget[] = []): RunDecision {
    const now = this.now();
    this.expire(now);
    const all = [...this.leases.values()];
    // The calling key's own budget, then each maker's: a lease counts in its key's and its makers'.
    const full = [{ id: keyId, limit: keyLimit }, ...makers]
      .map(({ id, limit }) => ({ limit, held: all.filter((l) => l.key === id || l.makers?.includes(id)) }))
      .find((k) => k.held.length >= k.limit && k.limit < tenantLimit);
    const byKey = full !== undefined;
    const [held, limit] = full ? [full.held, full.limit] : [all, tenantLimit];
    if (held.length >= limit) {
      const soonest = Math.min(...held.map((l) => l.until), now + 60_000);
      const holders = held.flatMap((l) => (l.holder ? [{ lease: l.id, holder: l.holder }] : []));
      return { ok: false, running: held.length, limit, retry_after: Math.max(1, Math.min(60, Math.ceil((soonest - now) / 1000))), by: byKey ? "key" : "tenant", ...(holders.length ? { holders } : {}) };
    }
    const id = `${now.toString(36)}-${(this.seq++).toString(36)}`;
    this.leases.set(id, { id, key: keyId, ...(makers.length ? { makers: makers.map((m) => m.id) } : {}), until: now + leaseMs, ...(holder ? { holder: holderFields(holder) } : {}) });
    return { ok: true, lease: id, running: all.length + 1, limit: tenantLimit };
  }

  /** The state to keep, without the key buckets idle for a minute (full: the same as none). */
  snapshot(): LimiterState {
    const now = this.now();
    const keys = [...this.keyBuckets].filter(([, b]) => now - b.at < MINUTE_MS);
    return { ...(this.tenantBucket ? { tenant: { ...this.tenantBucket } } : {}), keys: keys.map(([id, b]) => [id, { ...b }]), leases: [...this.leases.values()], seq: this.seq };
  }

  /** Takes up a kept state (a fresh limiter's, before any call). */
  restore(state: LimiterState): void {
    if (state.tenant) this.tenantBucket = { ...state.tenant };
    for (const [id, b] of state.keys) this.keyBuckets.set(id, { ...b });
    for (const l of state.leases) this.leases.set(l.id, l);
    this.seq = state.seq;
  }

  releaseRun(lease: string): boolean {
    return this.leases.delete(lease);
  }

  /** Leases past their end are dropped: returns whether any was. */
  expire(now = this.now()): boolean {
    let dropped = false;
    for (const [id, l] of this.leases) if (l.until <= now) dropped = this.leases.delete(id) || dropped;
    return dropped;
  }
}

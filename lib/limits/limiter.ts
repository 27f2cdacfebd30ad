/**
 * One tenant's counters, in one place (a Durable Object per tenant on Workers, memory in tests):
 * the token buckets of calls per minute (the tenant's and one per key) and the leases of running
 * sandbox commands. Pure state over a clock: every decision is made here, atomically, so callers
 * on any isolate or instance see one count.
 *
 * Token bucket: capacity = calls_per_minute, refilled continuously at calls_per_minute / 60 per
 * second, starting full. A call takes one token from the tenant's bucket and from its key's (both
 * or neither). Over any interval of T seconds at most capacity + rate × T calls pass.
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
  until: number;
  holder?: LeaseHolder;
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
  takeCall(keyId: string, tenantLimit: number, keyLimit: number, extra = 0): CallDecision & { extra: number } {
    const { ok, granted, state, t, k } = this.take(keyId, tenantLimit, keyLimit, 1, extra);
    const limits = { tenant_limit: tenantLimit, key_limit: keyLimit };
    if (ok) return { ok: true, ...state, ...limits, extra: granted };
    const wait = Math.max(secondsFor(MINUTE_MS - t.units, tenantLimit), secondsFor(MINUTE_MS - k.units, keyLimit));
    return { ok: false, retry_after: Math.max(1, wait), ...state, ...limits, extra: 0 };
  }

  /** Up to `want` calls ahead (at most leaseCap of the smaller limit, and what both buckets hold), for no call now. */
  leaseCalls(keyId: string, tenantLimit: number, keyLimit: number, want: number): CallLease {
    const { granted, state } = this.take(keyId, tenantLimit, keyLimit, 0, want);
    return { ...state, granted, tenant_limit: tenantLimit, key_limit: keyLimit };
  }

  private take(keyId: string, tenantLimit: number, keyLimit: number, need: 0 | 1, extra: number) {
    const now = this.now();
    const t = (this.tenantBucket ??= { units: tenantLimit * MINUTE_MS, at: now });
    refill(t, tenantLimit, now);
    let k = this.keyBuckets.get(keyId);
    if (!k) {
      if (this.keyBuckets.size >= 10_000) this.pruneKeys(now);
      k = { units: keyLimit * MINUTE_MS, at: now };
      this.keyBuckets.set(keyId, k);
    }
    refill(k, keyLimit, now);
    const ok = t.units >= need * MINUTE_MS && k.units >= need * MINUTE_MS;
    let granted = 0;
    if (ok) {
      t.units -= need * MINUTE_MS;
      k.units -= need * MINUTE_MS;
      granted = Math.max(0, Math.min(Math.floor(extra), leaseCap(Math.min(tenantLimit, keyLimit)), calls(t), calls(k)));
      t.units -= granted * MINUTE_MS;
      k.units -= granted * MINUTE_MS;
    }
    // The bucket that binds: the one with fewer whole calls left (ties: the tenant's).
    const byKey = calls(k) < calls(t);
    const [b, cap, policy] = byKey ? [k, keyLimit, "key" as const] : [t, tenantLimit, "tenant" as const];
    const state: RateState = { policy, limit: cap, remaining: calls(b), reset: secondsFor(cap * MINUTE_MS - b.units, cap) };
    return { ok, granted, state, t, k };
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
  acquireRun(keyId: string, tenantLimit: number, keyLimit: number, leaseMs: number, holder?: LeaseHolder): RunDecision {
    const now = this.now();
    this.expire(now);
    const all = [...this.leases.values()];
    const mine = all.filter((l) => l.key === keyId);
    const byKey = mine.length >= keyLimit && keyLimit < tenantLimit;
    const [held, limit] = byKey ? [mine, keyLimit] : [all, tenantLimit];
    if (held.length >= limit) {
      const soonest = Math.min(...held.map((l) => l.until), now + 60_000);
      const holders = held.flatMap((l) => (l.holder ? [{ lease: l.id, holder: l.holder }] : []));
      return { ok: false, running: held.length, limit, retry_after: Math.max(1, Math.min(60, Math.ceil((soonest - now) / 1000))), by: byKey ? "key" : "tenant", ...(holders.length ? { holders } : {}) };
    }
    const id = `${now.toString(36)}-${(this.seq++).toString(36)}`;
    this.leases.set(id, { id, key: keyId, until: now + leaseMs, ...(holder ? { holder: holderFields(holder) } : {}) });
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

/**
 * calls_per_minute without a round trip on the common path: an isolate's pool of calls taken ahead
 * from the tenant's limits object (made by createApp, one per isolate; lib/api/auth/rate-limit.ts
 * takes every call's token here).
 *
 * - A call spends a call of its (tenant, key)'s pool when the pool holds one: no round trip. When
 *   the pool is low (under half of what this isolate used in the last LEASE_MS), it asks the object
 *   for more after the answer (`leaseCalls`, under the request's waitUntil), never on the call's path.
 * - A call the pool cannot serve takes its token from the object as before (one round trip), and
 *   asks in the same round trip for what this isolate used in the last LEASE_MS (`extra`).
 * - The object gives at most leaseCap(limit) = what its bucket refills in LEASE_MS per answer, and
 *   only what both buckets (tenant, key) hold: every call that passes anywhere was taken from the
 *   bucket first, so a burst never passes more than the bucket held (200 concurrent calls at
 *   100/min: exactly 100, across isolates).
 * - Calls taken ahead are spent within LEASE_MS of asking for them (the isolate's own clock, from
 *   when it sent the ask), or never: over any T seconds at most capacity + rate × (T + LEASE_MS)
 *   calls pass, i.e. at most rate × LEASE_MS more than the bucket alone (a pool filled just before
 *   the bucket refilled, then spent with it). Calls a pool did not spend in time are lost to the
 *   tenant (a refusal may come while another isolate still holds some: at most leaseCap each).
 * - A key's Idempotency-Key claim is taken before its call runs, always: with the pool's call, one
 *   `claimKey` round trip, started at once and handed back unawaited (`Taken.claim`), so that the
 *   call's own reads go beside it (lib/api/idempotency.ts runs nothing before it answers); without,
 *   in the token's own round trip (`takeCall` with the claim).
 * - The RateLimit header's `remaining` of a pooled call is the bucket as this isolate last heard of
 *   it plus its pool, never more than the limit less this call. A limit lowered (PUT …/limits) binds the calls already pooled within LEASE_MS.
 */
import { finishAfterAnswer } from "../shared/after-answer.js";
import { LEASE_MS, type CallDecision, type RateState } from "./limiter.js";
import type { ClaimAnswer, ClaimAsk } from "./claims.js";
import type { Admitted, Caller, LimitsStore } from "./store.js";

/**
 * A call's token and, when a claim was asked and the call passed, the claim's answer: the token's
 * own round trip's, or (a pooled call) that of a round trip of its own, under way. It rejects when
 * the object does not answer it.
 */
export type Taken = CallDecision & { claim?: Promise<ClaimAnswer>; extra?: number };

/** The object's answer as a Taken: its claim, when it took one, already here. */
function takenOf(d: Admitted): Taken {
  const { claim, ...decision } = d;
  return (claim ? { ...decision, claim: Promise.resolve(claim) } : decision) as Taken;
}

interface Batch {
  calls: number;
  /** The isolate's clock: spent before this, or never. */
  until: number;
}

interface Pool {
  /** Calls held, the soonest to expire first. */
  batches: Batch[];
  /** The object's last word on the bucket (the headers of a pooled call). */
  state?: RateState & { tenant_limit: number; key_limit: number };
  /** When this isolate's calls of this (tenant, key) came, within the last LEASE_MS. */
  served: number[];
  /** Exchanges with the object for this pool under way. */
  inflight: Set<Promise<unknown>>;
  refilling: boolean;
  /** Last use (pools idle for LEASE_MS are dropped when the map grows). */
  used: number;
}

/** Pools kept at once; idle ones (nothing good left) are dropped past it. */
const MAX_POOLS = 10_000;

export class CallLeases {
  private readonly pools = new Map<string, Pool>();

  constructor(
    private readonly store: LimitsStore,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * One call's token (and its key's claim when `claim` is given); `later` keeps a refill alive after
   * the answer (the request's waitUntil). Rejects when the object does not answer a call the pool cannot serve.
   */
  async take(tenant: string, caller: Caller, claim?: ClaimAsk, later?: (p: Promise<unknown>) => void): Promise<Taken> {
    const pool = this.poolOf(tenant, caller.key_id);
    const now = this.now();
    pool.served.push(now);
    while (pool.served.length && pool.served[0]! <= now - LEASE_MS) pool.served.shift();
    if (pool.served.length > 10_000) pool.served.splice(0, pool.served.length - 10_000);
    const pooled = this.fromPool(tenant, caller, pool, claim, later);
    if (pooled) return pooled;
    const sent = this.now();
    const d = await this.exchange(pool, this.store.takeCall(tenant, caller, claim, pool.served.length));
    this.heard(pool, d, d.extra ?? 0, sent);
    if (d.ok) return takenOf(d);
    // A refusal may overtake an answer that brought calls to this pool: wait for those, then look again.
    if (pool.inflight.size) await Promise.allSettled([...pool.inflight]);
    return this.fromPool(tenant, caller, pool, claim, later) ?? takenOf(d);
  }

  private key = (tenant: string, keyId: string) => `${tenant}\u0000${keyId}`;

  private poolOf(tenant: string, keyId: string): Pool {
    const k = this.key(tenant, keyId);
    let pool = this.pools.get(k);
    if (!pool) {
      if (this.pools.size >= MAX_POOLS) this.prune();
      pool = { batches: [], served: [], inflight: new Set(), refilling: false, used: 0 };
      this.pools.set(k, pool);
    }
    pool.used = this.now();
    return pool;
  }

  private prune(): void {
    const now = this.now();
    for (const [k, p] of this.pools) if (!p.inflight.size && now - p.used >= LEASE_MS) this.pools.delete(k);
  }

  /** The calls a pool holds now (expired batches dropped). */
  private held(pool: Pool): number {
    const now = this.now();
    while (pool.batches.length && pool.batches[0]!.until <= now) pool.batches.shift();
    return pool.batches.reduce((n, b) => n + b.calls, 0);
  }

  /** A call from the pool, its claim asked (not awaited), a refill started when the pool runs low; undefined when the pool is empty. */
  private fromPool(tenant: string, caller: Caller, pool: Pool, claim: ClaimAsk | undefined, later: ((p: Promise<unknown>) => void) | undefined): Taken | undefined {
    if (!pool.state || this.held(pool) === 0) return undefined;
    const first = pool.batches[0]!;
    if (--first.calls === 0) pool.batches.shift();
    const left = this.held(pool);
    // Capped at the limit less this call: the bucket refills while earlier batches are still held (the overshoot bound above).
    const d: CallDecision = { ok: true, ...pool.state, remaining: Math.min(pool.state.limit - 1, pool.state.remaining + left) };
    if (left * 2 < pool.served.length) this.refill(tenant, caller, pool, later);
    if (!claim) return d;
    return { ...d, claim: this.store.claimKey(tenant, claim) };
  }

  /** Asks the object for what this isolate used in the last LEASE_MS, after the answer. */
  private refill(tenant: string, caller: Caller, pool: Pool, later: ((p: Promise<unknown>) => void) | undefined): void {
    if (pool.refilling) return;
    pool.refilling = true;
    const sent = this.now();
    const p = this.exchange(pool, this.store.leaseCalls(tenant, caller, pool.served.length))
      .then((lease) => this.heard(pool, lease, lease.granted, sent))
      .catch((e) => console.error("limits: the tenant's limits object did not answer a refill; the next call asks it", e instanceof Error ? e.message : String(e)))
      .finally(() => (pool.refilling = false));
    // Started now, not after the answer: the pool's in-flight exchange is what the next call in this isolate waits on (pool.inflight).
    finishAfterAnswer(later, "call lease refill", p);
  }

  private exchange<T>(pool: Pool, p: Promise<T>): Promise<T> {
    pool.inflight.add(p);
    const done = () => void pool.inflight.delete(p);
    p.then(done, done);
    return p;
  }

  /** The object's answer: its state, and the calls it gave ahead, good until LEASE_MS after the ask was sent. */
  private heard(pool: Pool, state: RateState & { tenant_limit: number; key_limit: number }, granted: number, sent: number): void {
    pool.state = { policy: state.policy, limit: state.limit, remaining: state.remaining, reset: state.reset, tenant_limit: state.tenant_limit, key_limit: state.key_limit };
    if (granted <= 0) return;
    pool.batches.push({ calls: granted, until: sent + LEASE_MS });
    pool.batches.sort((a, b) => a.until - b.until); // answers may come back out of order
  }
}

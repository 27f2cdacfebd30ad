/**
 * The storage quotas' charge off a write's path: an isolate's allowance per (tenant, workspace,
 * key), room the tenant's limits object holds for this isolate (usage.ts `reserve`), spent here
 * without asking (made by createApp, one per isolate; storage-quota.ts charges through it).
 *
 * - A change the allowance covers (its files and bytes; a shrink or a delete always) is taken from
 *   it here: no round trip. What was spent is told to the object after the answer (`settle`, under
 *   the request's waitUntil), which counts it and holds a new allowance in the same round trip.
 * - A change it cannot cover asks the object as before (one round trip), settling the allowance in
 *   the same request, so the isolate's own held room never refuses its own write: over a quota it
 *   is refused whole, before anything is written (QUOTA_EXCEEDED), as without allowances.
 * - No overshoot: the room of every allowance counts as used in the object until it is settled or
 *   ends (ALLOWANCE_MS), and an isolate spends only within ALLOWANCE_MS / 2 of asking (its own clock):
 *   every byte written under an allowance was held under the quota first. The cost is the other way:
 *   a write elsewhere may be refused while up to allowanceCap (at most 4 MiB and 64 files, and at most
 *   1/64 of the quota) is held for each isolate and workspace that wrote in the last ALLOWANCE_MS.
 * - What a crash can lose: spends not yet settled when an isolate dies (at most one allowance): the
 *   object releases the allowance when it ends, so those bytes are missing from the count until the
 *   workspace is counted again (a bulk change's recount). An object restart that lost the held list
 *   frees held room early (the same bound, once).
 * - One exchange with the object at a time per allowance (settles never overlap: each tells what was
 *   spent since the last). A change the allowance covers never waits for one; a change it cannot
 *   cover waits for the settle in flight (started after the previous answer), and changes wait for
 *   its own answer.
 */
import { finishAfterAnswer } from "../shared/after-answer.js";
import type { StorageDecision, StorageUsage } from "./usage.js";
import { ALLOWANCE_MS, type Allowance } from "./held-room.js";
import type { Caller, LimitsStore } from "./store.js";

/** What an isolate asks to hold ahead (the object gives at most allowanceCap of it, and what fits). */
const WANT: StorageUsage = { files: 64, bytes: 4 * 1024 * 1024 };

interface Pool {
  held?: Allowance;
  /** The isolate's clock: spent before this, or not at all. */
  until: number;
  /** The net change written under the allowance since the last settle was sent (the object has not counted it yet). */
  spent: StorageUsage;
  /** The growth taken of the allowance's room since then. */
  used: StorageUsage;
  /** The exchanges with the object, one at a time (their settles must not overlap). */
  tail: Promise<void>;
  /** A settle queued behind the exchange in flight (later changes join it). */
  queued?: Promise<void>;
  /** A change the allowance did not cover is being asked about: changes wait for its answer. */
  asking?: Promise<unknown>;
  used_at: number;
}

const MAX_POOLS = 10_000;
const ZERO: StorageUsage = { files: 0, bytes: 0 };
const plus = (a: StorageUsage, b: StorageUsage, sign = 1): StorageUsage => ({ files: a.files + sign * b.files, bytes: a.bytes + sign * b.bytes });
const growth = (d: StorageUsage): StorageUsage => ({ files: Math.max(0, d.files), bytes: Math.max(0, d.bytes) });

export class StorageAllowances {
  private readonly pools = new Map<string, Pool>();

  constructor(
    private readonly store: LimitsStore,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Charges `delta` (StorageQuota.charge): "pooled" when the allowance covers it, else the object's
   * decision. `count`: the workspace's files and bytes, for a first count.
   */
  async charge(tenant: string, caller: Caller, ws: string, delta: StorageUsage, count: () => Promise<StorageUsage>, later?: (p: Promise<unknown>) => void): Promise<StorageDecision | "pooled"> {
    const pool = this.poolOf(tenant, ws, caller.key_id);
    while (pool.asking) await pool.asking.catch(() => {});
    if (this.covers(pool, delta)) {
      this.spend(pool, delta);
      this.settleLater(tenant, caller, ws, pool, later);
      return "pooled";
    }
    const asked = this.ask(tenant, caller, ws, pool, delta, count);
    pool.asking = asked.then(
      () => void (pool.asking = undefined),
      () => void (pool.asking = undefined),
    );
    return asked;
  }

  /** A change already made (StorageQuota.settle: a delete, a give-back): true when counted through the allowance, else the caller tells the object. */
  async settle(tenant: string, caller: Caller, ws: string, delta: StorageUsage, later?: (p: Promise<unknown>) => void): Promise<boolean> {
    const pool = this.poolOf(tenant, ws, caller.key_id);
    while (pool.asking) await pool.asking.catch(() => {});
    if (!pool.held || pool.until <= this.now()) return false;
    this.spend(pool, { files: delta.files, bytes: delta.bytes });
    this.settleLater(tenant, caller, ws, pool, later);
    return true;
  }

  private poolOf(tenant: string, ws: string, keyId: string): Pool {
    const k = `${tenant}\u0000${ws}\u0000${keyId}`;
    let pool = this.pools.get(k);
    if (!pool) {
      if (this.pools.size >= MAX_POOLS) this.prune();
      pool = { until: 0, spent: ZERO, used: ZERO, tail: Promise.resolve(), used_at: 0 };
      this.pools.set(k, pool);
    }
    pool.used_at = this.now();
    return pool;
  }

  private prune(): void {
    const now = this.now();
    for (const [k, p] of this.pools) if (!p.queued && !p.asking && now - p.used_at >= ALLOWANCE_MS && !p.spent.files && !p.spent.bytes) this.pools.delete(k);
  }

  private covers(pool: Pool, delta: StorageUsage): boolean {
    if (!pool.held || pool.until <= this.now()) return false;
    const g = growth(delta);
    return g.files <= pool.held.files && g.bytes <= pool.held.bytes;
  }

  private spend(pool: Pool, delta: StorageUsage): void {
    const g = growth(delta);
    pool.spent = plus(pool.spent, delta);
    pool.used = plus(pool.used, g);
    if (pool.held) pool.held = { ...pool.held, files: pool.held.files - g.files, bytes: pool.held.bytes - g.bytes };
  }

  /** Runs `run` after the exchange in flight (settles never overlap: each names what was spent since the last). */
  private enqueue<T>(pool: Pool, run: () => Promise<T>): Promise<T> {
    const p = pool.tail.then(run);
    pool.tail = p.then(
      () => {},
      () => {},
    );
    return p;
  }

  /** One exchange: settles what was spent until now, holds a new allowance, and charges `delta`. */
  private async exchange(tenant: string, caller: Caller, ws: string, pool: Pool, delta: StorageUsage, init?: StorageUsage): Promise<StorageDecision> {
    const sent = this.now();
    const spent = pool.spent;
    const used = pool.used;
    const settle = pool.held || spent.files || spent.bytes ? { settle: { id: pool.held?.id ?? "", spent, used } } : {};
    const d = await this.store.chargeStorage(tenant, caller, ws, delta, { reserve: WANT, ...settle, ...(init ? { init } : {}) });
    // Counted: what was spent until `sent`; what was spent since is still to tell, and comes off the new allowance.
    pool.spent = plus(pool.spent, spent, -1);
    pool.used = plus(pool.used, used, -1);
    const a = d.ok ? d.allowance : undefined;
    pool.held = a ? { id: a.id, files: Math.max(0, a.files - pool.used.files), bytes: Math.max(0, a.bytes - pool.used.bytes) } : undefined;
    pool.until = sent + ALLOWANCE_MS / 2;
    return d;
  }

  /** A change the allowance cannot cover: the object's decision, with the allowance settled and renewed in the same round trip. */
  private ask(tenant: string, caller: Caller, ws: string, pool: Pool, delta: StorageUsage, count: () => Promise<StorageUsage>): Promise<StorageDecision> {
    return this.enqueue(pool, async () => {
      const d = await this.exchange(tenant, caller, ws, pool, delta);
      return !d.ok && "unknown" in d ? this.exchange(tenant, caller, ws, pool, delta, await count()) : d;
    });
  }

  /** After the answer: what was spent is counted and the allowance topped up (a failure keeps the spends for the next exchange). */
  private settleLater(tenant: string, caller: Caller, ws: string, pool: Pool, later?: (p: Promise<unknown>) => void): void {
    pool.queued ??= this.enqueue(pool, async () => {
      pool.queued = undefined;
      await this.exchange(tenant, caller, ws, pool, ZERO).catch((e) => {
        if (pool.held) pool.held = { ...pool.held, files: 0, bytes: 0 }; // spend no more of it: the next change asks
        console.error("limits: the tenant's limits object did not answer a storage settle; the next write asks it", e instanceof Error ? e.message : String(e));
      });
    });
    // Queued now, not after the answer: the pool's queue orders it before the next charge, and later changes join it (pool.queued).
    finishAfterAnswer(later, "storage allowance settle", pool.queued);
  }
}

/**
 * calls_per_minute through isolates' pools of calls taken ahead (lib/limits/call-leases.ts) over
 * one limits store (memoryLimits, the same state machine as the Durable Object and DynamoDB):
 * a burst across isolates passes exactly what the bucket holds; over any window at most
 * capacity + rate × (T + LEASE_MS) pass; a pooled call is never spent after LEASE_MS; the common
 * call asks the store nothing before it passes.
 */
import { describe, expect, it } from "vitest";
import { CallLeases } from "../../../lib/limits/call-leases.js";
import { LEASE_MS, leaseCap } from "../../../lib/limits/limiter.js";
import { memoryLimits } from "../../../lib/limits/store.js";
import { clock } from "./store-conformance.js";
import { gatedLimits } from "../../support/gated-limits.js";

/** Every promise a take handed to `later` (the refills), to wait for like a request's waitUntil. */
function laters() {
  const all: Promise<unknown>[] = [];
  return { later: (p: Promise<unknown>) => void all.push(p), settle: async () => void (await Promise.allSettled(all.splice(0))) };
}

describe("calls taken ahead into isolates' pools", () => {
  it("200 concurrent calls at 100/min through two isolates, the clock standing still: exactly 100 pass; the refused are told when to retry", async () => {
    const c = clock();
    const store = memoryLimits(c.now);
    await store.set("t", { calls_per_minute: 100 });
    const isolates = [new CallLeases(store, c.now), new CallLeases(store, c.now)];
    const ds = await Promise.all(Array.from({ length: 200 }, (_, i) => isolates[i % 2]!.take("t", { key_id: `k${i % 3}` })));
    expect(ds.filter((d) => d.ok)).toHaveLength(100);
    for (const d of ds.filter((d) => !d.ok)) expect(d).toMatchObject({ ok: false, remaining: 0, limit: 100 });
    // Nothing is left in either pool for later: the bucket's 100 calls were all spent.
    expect((await isolates[0]!.take("t", { key_id: "k0" })).ok).toBe(false);
    expect((await isolates[1]!.take("t", { key_id: "k1" })).ok).toBe(false);
  });

  it("the common call asks the store nothing before it passes: the pool serves it, and refills after it", async () => {
    const c = clock();
    const log: string[] = [];
    const { store, gate } = gatedLimits(memoryLimits(c.now), log, (label) => label === "leaseCalls");
    const leases = new CallLeases(store, c.now);
    const { later, settle } = laters();
    expect((await leases.take("t", { key_id: "k" }, undefined, later)).ok).toBe(true);
    expect(log).toEqual(["takeCall"]); // an empty pool: the store's token, and one call ahead
    for (let i = 0; i < 50; i++) {
      c.advance(100);
      log.length = 0;
      // The store answers no refill until the call has passed: a call that waited for one would never pass.
      gate.closed = true;
      const d = await leases.take("t", { key_id: "k" }, undefined, later);
      expect(d.ok).toBe(true);
      expect(log.filter((n) => n !== "held:leaseCalls")).toEqual([]); // no token asked; a refill at most started, and held
      gate.open();
      await settle();
    }
    // A keyed call with the pool's call: the key's claim is taken before it passes (one round trip, the claim alone).
    log.length = 0;
    const keyed = await leases.take("t", { key_id: "k" }, { key: "a".repeat(64), leaseMs: 1000, keepMs: 10_000 }, later);
    expect((await keyed.claim)?.taken).toBe(true);
    expect(log.filter((n) => !n.endsWith("leaseCalls"))).toEqual(["claimKey"]);
  });

  it("a pooled call is spent within LEASE_MS of its ask, or never", async () => {
    const c = clock();
    const log: string[] = [];
    const leases = new CallLeases(gatedLimits(memoryLimits(c.now), log).store, c.now);
    const { later, settle } = laters();
    for (let i = 0; i < 5; i++) {
      await leases.take("t", { key_id: "k" }, undefined, later);
      await settle();
    }
    log.length = 0;
    c.advance(LEASE_MS);
    expect((await leases.take("t", { key_id: "k" })).ok).toBe(true);
    expect(log).toEqual(["takeCall"]); // the pool's calls expired: the store is asked again
  });

  it("a key under 6 calls a minute gets nothing ahead: every call asks, and exactly its limit passes", async () => {
    expect(leaseCap(5)).toBe(0);
    const c = clock();
    const log: string[] = [];
    const leases = new CallLeases(gatedLimits(memoryLimits(c.now), log).store, c.now);
    const small = { key_id: "small", limits: { calls_per_minute: 3 } };
    const ok: boolean[] = [];
    for (let i = 0; i < 5; i++) ok.push((await leases.take("t", small)).ok);
    expect(ok).toEqual([true, true, true, false, false]);
    expect(log.filter((n) => n === "takeCall")).toHaveLength(5);
  });

  it("over any window of T seconds at most capacity + rate × (T + LEASE_MS) pass, through three isolates with bursts and pauses", async () => {
    const c = clock(0);
    const store = memoryLimits(c.now);
    const perMinute = 120;
    await store.set("t", { calls_per_minute: perMinute });
    const isolates = [0, 1, 2].map(() => new CallLeases(store, c.now));
    const { later, settle } = laters();
    const passed: number[] = [];
    for (let step = 0; step < 1200; step++) {
      // 100 ms steps: 0.5 s bursts of 1-6 calls per isolate per step, then 4.5 s of a trickle (pools fill, the bucket refills).
      const burst = step % 50 < 5;
      const ds = await Promise.all(isolates.flatMap((iso, n) => Array.from({ length: burst ? 1 + ((step + n) % 6) : step % 7 === n ? 1 : 0 }, () => iso.take("t", { key_id: `k${n}` }, undefined, later))));
      for (const d of ds) if (d.ok) passed.push(c.now());
      await settle();
      c.advance(100);
    }
    const rate = perMinute / 60_000; // calls per ms
    let worst = 0;
    for (let i = 0; i < passed.length; i++) {
      for (let j = i; j < passed.length; j++) {
        const T = passed[j]! - passed[i]!;
        const bound = perMinute + rate * (T + LEASE_MS);
        worst = Math.max(worst, j - i + 1 - bound);
      }
    }
    expect(worst, `calls past the bound in some window (of ${passed.length} passed)`).toBeLessThanOrEqual(0);
    // And the pools do not starve the tenant: over the 120 s, at least the bucket's own bound less one pool per isolate.
    expect(passed.length).toBeGreaterThan(perMinute + 120 * 2 - 3 * leaseCap(perMinute) - 100);
  });
  it("the RateLimit header never says more remain than the limit: a pool held while its bucket refills", async () => {
    const c = clock();
    const store = memoryLimits(c.now);
    await store.set("t", { calls_per_minute: 1200 });
    const leases = new CallLeases(store, c.now);
    const { later, settle } = laters();
    let most = 0;
    for (let i = 0; i < 400; i++) {
      const d = await leases.take("t", { key_id: "k" }, undefined, later);
      expect(d.ok).toBe(true);
      most = Math.max(most, d.remaining);
      expect(d.remaining).toBeLessThanOrEqual(d.limit);
      await settle();
      c.advance(i % 40 === 0 ? 5_000 : 20); // calls in bursts, pauses that refill the bucket while the pool still holds calls
    }
    expect(most).toBe(1200 - 1); // what a full bucket less this call says
  });
});

import { describe, expect, it } from "vitest";
import { checkLimits, DEFAULT_LIMITS, effectiveLimits } from "../../../lib/limits/fields.js";
import { TenantLimiter } from "../../../lib/limits/limiter.js";
import { memoryLimits } from "../../../lib/limits/store.js";
import { rateLimitHeaders } from "../../../lib/limits/headers.js";

const clock = (start = 1_000_000) => {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
};

describe("effective limits", () => {
  it("the tenant's over the defaults, then each key field the smaller of the key's and the tenant's", () => {
    expect(effectiveLimits({})).toEqual(DEFAULT_LIMITS);
    const e = effectiveLimits({ calls_per_minute: 100, workspaces: 5 }, { calls_per_minute: 500, workspaces: 2, concurrent_runs: 1 });
    expect(e).toMatchObject({ calls_per_minute: 100, workspaces: 2, concurrent_runs: 1, storage_bytes: DEFAULT_LIMITS.storage_bytes });
  });
  it("refuses unknown fields and values that are not whole non-negative numbers", () => {
    expect(checkLimits({ workspaces: 3 })).toEqual({ workspaces: 3 });
    expect(() => checkLimits({ calls: 3 })).toThrow(/Unknown limit 'calls'/);
    expect(() => checkLimits({ workspaces: -1 })).toThrow(/whole number/);
    expect(() => checkLimits({ workspaces: 1.5 })).toThrow(/whole number/);
    expect(() => checkLimits([])).toThrow(/object/);
  });
});

describe("calls per minute (token bucket)", () => {
  it("200 concurrent calls at 100/min: exactly 100 pass while the clock stands still; the rest are told when to retry", async () => {
    const c = clock();
    const store = memoryLimits(c.now);
    await store.set("t", { calls_per_minute: 100 });
    const ds = await Promise.all(Array.from({ length: 200 }, (_, i) => store.takeCall("t", { key_id: `k${i % 3}` })));
    expect(ds.filter((d) => d.ok)).toHaveLength(100);
    const refused = ds.filter((d) => !d.ok);
    expect(refused).toHaveLength(100);
    for (const d of refused) expect(d).toMatchObject({ ok: false, retry_after: 1, remaining: 0, limit: 100 });
  });
  it("refills continuously: calls_per_minute / 60 per second, never past the capacity", () => {
    const c = clock();
    const l = new TenantLimiter(c.now);
    for (let i = 0; i < 60; i++) expect(l.takeCall("k", 60, 60).ok).toBe(true);
    expect(l.takeCall("k", 60, 60)).toMatchObject({ ok: false, retry_after: 1, reset: 60 });
    c.advance(1000);
    expect(l.takeCall("k", 60, 60)).toMatchObject({ ok: true, remaining: 0 });
    expect(l.takeCall("k", 60, 60).ok).toBe(false);
    c.advance(10 * 60_000);
    expect(l.takeCall("k", 60, 60)).toMatchObject({ ok: true, remaining: 59 });
  });
  it("over any T seconds at most capacity + rate × T pass (the documented bound)", () => {
    const c = clock();
    const l = new TenantLimiter(c.now);
    let passed = 0;
    for (let ms = 0; ms <= 30_000; ms += 50) {
      for (let i = 0; i < 5; i++) if (l.takeCall("k", 100, 100).ok) passed++;
      c.advance(50);
    }
    // 30.05 s at 100/min: 100 + floor(100 × 30.05 / 60) = 150.
    expect(passed).toBe(150);
  });
  it("a key's own limit bounds it alone; the tenant's bucket bounds every key together", () => {
    const c = clock();
    const l = new TenantLimiter(c.now);
    let a = 0;
    for (let i = 0; i < 20; i++) if (l.takeCall("a", 30, 10).ok) a++;
    expect(a).toBe(10);
    expect(l.takeCall("a", 30, 10)).toMatchObject({ ok: false, policy: "key", limit: 10 });
    let b = 0;
    for (let i = 0; i < 40; i++) if (l.takeCall("b", 30, 30).ok) b++;
    expect(b).toBe(20); // the tenant's 30, less a's 10
    expect(l.takeCall("b", 30, 30)).toMatchObject({ ok: false, policy: "tenant", limit: 30 });
  });
  it("a limit lowered below what a bucket holds takes effect at once", () => {
    const c = clock();
    const l = new TenantLimiter(c.now);
    expect(l.takeCall("k", 1000, 1000).ok).toBe(true);
    let n = 0;
    for (let i = 0; i < 10; i++) if (l.takeCall("k", 3, 3).ok) n++;
    expect(n).toBe(3);
  });
});

describe("headers (draft-ietf-httpapi-ratelimit-headers)", () => {
  it("RateLimit-Policy names each policy; RateLimit the binding one; Retry-After only on a refusal", () => {
    const l = new TenantLimiter(clock().now);
    const ok = l.takeCall("k", 100, 100);
    expect(rateLimitHeaders(ok)).toEqual({ "RateLimit-Policy": '"tenant";q=100;w=60', RateLimit: '"tenant";r=99;t=1' });
    for (let i = 0; i < 10; i++) l.takeCall("k2", 100, 10);
    const refused = l.takeCall("k2", 100, 10);
    expect(rateLimitHeaders(refused)).toEqual({ "RateLimit-Policy": '"tenant";q=100;w=60, "key";q=10;w=60', RateLimit: '"key";r=0;t=60', "Retry-After": "6" });
  });

  it("a key whose maker's budget is smaller names that budget's quota in RateLimit-Policy, as RateLimit counts from it", () => {
    const l = new TenantLimiter(clock().now);
    const makers = [{ id: "maker", limit: 4 }];
    const first = l.takeCall("child", 100, 60, 0, makers);
    expect(rateLimitHeaders(first)).toEqual({ "RateLimit-Policy": '"tenant";q=100;w=60, "key";q=4;w=60', RateLimit: '"key";r=3;t=15' });
    for (let i = 0; i < 3; i++) l.takeCall("sibling", 100, 60, 0, makers);
    const refused = l.takeCall("child", 100, 60, 0, makers);
    expect(refused.ok).toBe(false);
    expect(rateLimitHeaders(refused)["RateLimit-Policy"]).toBe('"tenant";q=100;w=60, "key";q=4;w=60');
    expect(rateLimitHeaders(refused).RateLimit).toMatch(/^"key";r=0;t=/);
  });
});

describe("concurrent runs (leases)", () => {
  it("at most the limit hold a slot; a release frees one; a lease nobody releases ends on its own", () => {
    const c = clock();
    const l = new TenantLimiter(c.now);
    const a = l.acquireRun("k", 2, 2, 10_000);
    const b = l.acquireRun("k", 2, 2, 60_000);
    expect(a.ok && b.ok).toBe(true);
    expect(l.acquireRun("k", 2, 2, 10_000)).toMatchObject({ ok: false, running: 2, limit: 2, retry_after: 10 });
    if (b.ok) expect(l.releaseRun(b.lease)).toBe(true);
    expect(l.acquireRun("k", 2, 2, 10_000).ok).toBe(true);
    expect(l.acquireRun("k", 2, 2, 10_000).ok).toBe(false);
    c.advance(10_000); // both 10 s leases end: the crashed caller's slot comes back
    expect(l.acquireRun("k", 2, 2, 10_000)).toMatchObject({ ok: true, running: 1 });
  });
  it("a key's concurrent_runs counts its own runs; the tenant's counts all", () => {
    const l = new TenantLimiter(clock().now);
    expect(l.acquireRun("a", 3, 1, 1000).ok).toBe(true);
    expect(l.acquireRun("a", 3, 1, 1000)).toMatchObject({ ok: false, running: 1, limit: 1, by: "key" });
    expect(l.acquireRun("b", 3, 3, 1000).ok).toBe(true);
    expect(l.acquireRun("b", 3, 3, 1000).ok).toBe(true);
    expect(l.acquireRun("b", 3, 3, 1000)).toMatchObject({ ok: false, running: 3, limit: 3, by: "tenant" });
  });
});

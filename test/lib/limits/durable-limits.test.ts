/**
 * The limits store on its real engine: the LIMITS Durable Object (wrangler.toml) in workerd,
 * shared by two app instances as two isolates would share it.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { durableLimits } from "../../../lib/limits/durable-object.js";
import type { Lease } from "../../../lib/limits/limiter.js";
import { memoryLimits } from "../../../lib/limits/store.js";
import { admin, newTenant, testApp, upload } from "../../helpers.js";
import { describeWriteBackHolds } from "./hold-conformance.js";

const limits = () => durableLimits(env.LIMITS);

describeWriteBackHolds("the LIMITS Durable Object", () => ({ a: limits(), b: limits() }));

describe("calls_per_minute through the LIMITS Durable Object", () => {
  it("200 concurrent calls at 100/min through two app instances (each with its pool of calls taken ahead): 100 pass, plus at most what the bucket refills meanwhile; the rest 429 with Retry-After", async () => {
    // Made and limited through a third app: the two below start with empty pools (calls taken ahead under the
    // old limit would pass within LEASE_MS of their ask: lib/limits/call-leases.ts).
    const setup = testApp({ limits: limits() });
    const t = await newTenant(setup);
    expect((await admin(setup, `/v1/admin/tenants/${t.tenant}/limits`, { calls_per_minute: 100 }, "PUT")).status).toBe(200);
    const one = testApp({ limits: limits() });
    const two = testApp({ limits: limits() }); // another isolate: its own caches and pool of calls, the same object
    const started = Date.now();
    const responses = await Promise.all(
      Array.from({ length: 200 }, (_, i) => (i % 2 ? two : one).request("/v1/workspaces", { headers: { authorization: `Bearer ${t.key}` } })),
    );
    const seconds = (Date.now() - started) / 1000;
    const passed = responses.filter((r) => r.status === 200);
    const refused = responses.filter((r) => r.status === 429);
    expect(passed.length + refused.length).toBe(200);
    // The bucket was full (lowering the limit clamps it to the new capacity): at least 100 pass. The
    // overshoot bound (docs/limits-and-quotas.md): capacity + rate × elapsed, the refill while the burst lasted.
    const seen = `${passed.length} passed in ${seconds.toFixed(1)} s`;
    expect(passed.length, seen).toBeGreaterThanOrEqual(100);
    expect(passed.length, seen).toBeLessThanOrEqual(100 + Math.floor((100 / 60) * seconds));
    for (const r of passed) {
      expect(r.headers.get("ratelimit-policy")).toBe('"tenant";q=100;w=60');
      expect(r.headers.get("ratelimit")).toMatch(/^"tenant";r=\d+;t=\d+$/);
    }
    const r = refused[0]!;
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(r.headers.get("ratelimit")).toMatch(/^"tenant";r=0;t=\d+$/);
    const body = (await r.json()) as any;
    expect(body.error).toMatchObject({ code: "RATE_LIMITED", details: { limit: "calls_per_minute", quota: 100, remaining: 0 } });
  }, 120_000); // 200 calls on a busy 2-core machine

  it("a key's own limits apply as the smaller of the key's and the tenant's; a tool call carries the headers too", async () => {
    const app = testApp({ limits: limits() });
    const t = await newTenant(app);
    const k = await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { name: "small", limits: { calls_per_minute: 3 } });
    expect(k.status).toBe(201);
    expect(k.body.limits).toEqual({ calls_per_minute: 3 });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await app.request(`/v1/workspaces/${t.ws}/tools/ls`, { method: "POST", headers: { authorization: `Bearer ${k.body.key}`, "content-type": "application/json" }, body: "{}" });
      statuses.push(res.status);
      expect(res.headers.get("ratelimit-policy")).toContain('"key";q=3;w=60');
      if (res.status === 429) expect(((await res.json()) as any).error.details).toMatchObject({ policy: "key", quota: 3 });
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    // The tenant's other key is not held back by this one's bucket.
    expect((await t.req("/v1/workspaces")).status).toBe(200);
  });

  it("a key made by a key with limits draws from its maker's bucket too: making keys never multiplies a limited key's calls", async () => {
    const app = testApp({ limits: limits() });
    const t = await newTenant(app);
    const maker = await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read", "manage"], limits: { calls_per_minute: 3 } });
    const send = (key: string, path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" } });
    const child = await send(maker.body.key, "/v1/keys", { method: "POST", body: JSON.stringify({ name: "end user" }) }); // the maker's 1st call
    expect(child.status).toBe(201);
    const made = (await child.json()) as any;
    expect(made.limits).toEqual({ calls_per_minute: 3 });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await send(made.key, "/v1/workspaces")).status);
    expect(statuses).toEqual([200, 200, 429]); // was 200 × 3: a bucket of its own, as full as its maker's
    expect((await send(maker.body.key, "/v1/keys")).status).toBe(429); // the maker's 3 went: 1 its own, 2 its key's
    expect((await t.req("/v1/workspaces")).status).toBe(200); // the tenant's other keys are not held back
  });

  it("GET and PUT /v1/admin/tenants/{t}/limits: as set and as they apply; unknown fields and bad values are refused", async () => {
    const app = testApp({ limits: limits() });
    const t = await newTenant(app);
    const got = await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, undefined, "GET");
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ tenant: t.tenant, limits: {}, effective: { calls_per_minute: 1200, workspaces: 1000 } });
    const put = await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, { workspaces: 2, storage_bytes: 1000 }, "PUT");
    expect(put.body).toMatchObject({ limits: { workspaces: 2, storage_bytes: 1000 }, effective: { workspaces: 2, calls_per_minute: 1200 } });
    expect((await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, undefined, "GET")).body.limits).toEqual({ workspaces: 2, storage_bytes: 1000 });
    expect((await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, { workspace: 2 }, "PUT")).status).toBe(400);
    expect((await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, { workspaces: -1 }, "PUT")).status).toBe(400);
    expect((await admin(app, `/v1/admin/tenants/nobody-here/limits`, undefined, "GET")).status).toBe(404);
  });
});

describe("the headers on every tenant answer", () => {
  it("a raw file (a Response the handler built) and a refusal below the guard carry them; admin and public routes do not", async () => {
    const app = testApp({ limits: limits() });
    const t = await newTenant(app);
    await upload(t, "a.txt", "hello");
    const raw = await t.req(`/v1/workspaces/${t.ws}/files/a.txt`);
    expect(await raw.text()).toBe("hello");
    expect(raw.headers.get("ratelimit")).toMatch(/^"tenant";r=\d+;t=\d+$/);
    const missing = await t.req(`/v1/workspaces/${t.ws}/files/nope.txt`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get("ratelimit-policy")).toBe('"tenant";q=1200;w=60');
    expect((await app.request("/healthz")).headers.get("ratelimit")).toBeNull();
    const res = await app.request(`/v1/admin/tenants/${t.tenant}/limits`, { headers: { authorization: "Bearer test-admin-token" } });
    expect(res.headers.get("ratelimit")).toBeNull();
  });

  it("a limits store that fails lets the call through, without headers (a counter outage does not take the API down)", async () => {
    const broken = { ...memoryLimits(), takeCall: () => Promise.reject(new Error("limits object unreachable")) };
    const app = testApp({ limits: broken });
    const t = await newTenant(app);
    const res = await t.req("/v1/workspaces");
    expect(res.status).toBe(200);
    expect(res.headers.get("ratelimit")).toBeNull();
  });
});

describe("concurrent_runs leases in the Durable Object", () => {
  it("at most the limit run at once, across stores; a release frees a slot; leases survive the object's restart of memory (kept in its storage)", async () => {
    const a = limits();
    const b = limits();
    const tenant = `t-runs-${Date.now()}`;
    await a.set(tenant, { concurrent_runs: 2 });
    const [x, y, z] = await Promise.all([a.acquireRun(tenant, { key_id: "k" }, 60_000), b.acquireRun(tenant, { key_id: "k" }, 60_000), a.acquireRun(tenant, { key_id: "k" }, 60_000)]);
    expect([x, y, z].filter((d) => d.ok)).toHaveLength(2);
    const refused = [x, y, z].find((d) => !d.ok)!;
    expect(refused).toMatchObject({ ok: false, running: 2, limit: 2 });
    const held = [x, y, z].find((d) => d.ok)!;
    if (held.ok) await b.releaseRun(tenant, held.lease);
    expect((await a.acquireRun(tenant, { key_id: "k" }, 60_000)).ok).toBe(true);
    expect((await a.acquireRun(tenant, { key_id: "k" }, 60_000)).ok).toBe(false);
  });

  it("a key made by a key with limits counts in its maker's concurrent_runs too (and its maker's runs in its own: one budget)", async () => {
    const a = limits();
    const tenant = `t-maker-runs-${Date.now()}`;
    const maker = { key_id: "m", limits: { concurrent_runs: 1 } };
    const child = { key_id: "c", limits: { concurrent_runs: 1 }, maker_limits: [maker] };
    const held = await a.acquireRun(tenant, child, 60_000);
    expect(held.ok).toBe(true);
    expect(await a.acquireRun(tenant, maker, 60_000)).toMatchObject({ ok: false, running: 1, limit: 1, by: "key" });
    expect(await a.acquireRun(tenant, { ...child, key_id: "c2" }, 60_000)).toMatchObject({ ok: false, by: "key" }); // a sibling: was ok
    if (held.ok) await a.releaseRun(tenant, held.lease);
    expect((await a.acquireRun(tenant, maker, 60_000)).ok).toBe(true);
    expect((await a.acquireRun(tenant, { key_id: "other" }, 60_000)).ok).toBe(true); // a key of no lineage
  });

  it("a lease's holder (a live sandbox, a fresh run) round-trips through the object: a refusal names it with its lease, its storage keeps it", async () => {
    const a = limits();
    const tenant = `t-holders-${Date.now()}`;
    await a.set(tenant, { concurrent_runs: 3 });
    const holder = { workspace: "w-1", session: "chat/ü 1", generation: "g_0123456789abcdef" };
    const runHolder = { workspace: "w-1", run: "r0123456789abcde" };
    const live = await a.acquireRun(tenant, { key_id: "k" }, 60_000, holder);
    expect((await limits().acquireRun(tenant, { key_id: "k" }, 60_000)).ok).toBe(true); // no holder
    const ran = await limits().acquireRun(tenant, { key_id: "k" }, 60_000, runHolder);
    const refused = await limits().acquireRun(tenant, { key_id: "k" }, 60_000, holder);
    expect(refused).toMatchObject({ ok: false, running: 3, limit: 3 });
    expect(!refused.ok && refused.holders).toEqual([{ lease: live.ok ? live.lease : "", holder }, { lease: ran.ok ? ran.lease : "", holder: runHolder }]);
    // Kept in the object's storage with its lease (what a restarted object loads).
    const stub = env.LIMITS.get(env.LIMITS.idFromName(tenant));
    const kept = await runInDurableObject(stub, (_: unknown, state: DurableObjectState) => state.storage.get<Lease[]>("leases"));
    expect(kept?.find((l) => live.ok && l.id === live.lease)).toMatchObject({ holder });
    expect(kept?.find((l) => ran.ok && l.id === ran.lease)).toMatchObject({ holder: runHolder });
  });
});

/**
 * GC on a schedule (lib/layers/gc-schedule.ts; the Workers `scheduled` entry), in workerd over
 * local R2 and KV: every tenant is reached tick after tick, a failing tenant does not stop the
 * others, and the cron entry runs a tick. "Old" is simulated by moving the clock past the grace.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../../infra/cloudflare.js";
import { GC_CURSOR_KEY, gcTick } from "../../../lib/layers/gc-schedule.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { workersKeyValue } from "../../../lib/storage/kv-workers.js";
import { newTenant, testApp, type Tenant } from "../../helpers.js";
import { tar } from "../archive/archives.js";
import { countObjects, importReq } from "../archive/helpers.js";

const app = testApp();
const deps = { storage: r2Driver(env.FILES), kv: workersKeyValue(env.KV) };
const LATER = () => Date.now() + 2 * 3600 * 1000;
const quiet = () => {};

const layerObjects = async (t: Tenant) => (await countObjects(`t/${t.tenant}/manifests/`)) + (await countObjects(`t/${t.tenant}/packs/`));

/** A tenant whose workspace `gone` (imported, so it has a manifest and a pack) was deleted: garbage. */
async function tenantWithGarbage(): Promise<Tenant> {
  const t = await newTenant(app);
  expect((await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "gone" }) })).status).toBe(201);
  const r = await importReq(t, tar([{ name: "a.txt", body: "doomed\n" }]), "?mode=replace", {}, "gone");
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect((await t.req("/v1/workspaces/gone", { method: "DELETE" })).status).toBe(200);
  expect(await layerObjects(t)).toBe(2);
  return t;
}

describe("scheduled GC", () => {
  it("one tick with room for every tenant collects each tenant's garbage and leaves no cursor", async () => {
    const a = await tenantWithGarbage();
    const b = await tenantWithGarbage();
    const r = await gcTick(deps, { now: LATER, maxTenants: 10_000, log: quiet });
    const done = r.tenants.map((x) => x.tenant);
    expect(done).toContain(a.tenant);
    expect(done).toContain(b.tenant);
    expect(r.cursor).toBeNull();
    expect(await env.KV.get(GC_CURSOR_KEY)).toBeNull();
    expect(await layerObjects(a)).toBe(0);
    expect(await layerObjects(b)).toBe(0);
  });

  it("nothing is collected inside the grace period (the clock as it is)", async () => {
    const t = await tenantWithGarbage();
    await gcTick(deps, { maxTenants: 10_000, log: quiet });
    expect(await layerObjects(t)).toBe(2);
  });

  it("ticks of one tenant each go on from the cursor, in storage order, reach every tenant once, then wrap", async () => {
    const made = [await tenantWithGarbage(), await tenantWithGarbage(), await tenantWithGarbage()].map((t) => t.tenant);
    await env.KV.delete(GC_CURSOR_KEY);
    const order: string[] = [];
    for (let i = 0; i < 200; i++) {
      const r = await gcTick(deps, { now: LATER, maxTenants: 1, log: quiet });
      expect(r.tenants.length).toBe(1);
      order.push(r.tenants[0]!.tenant);
      expect(await env.KV.get(GC_CURSOR_KEY)).toBe(r.cursor);
      if (r.cursor === null) break;
    }
    // Every tenant of the bucket once, in key order (t/<id>/), the made ones among them.
    const keyOrder = [...order].sort((x, y) => (`t/${x}/` < `t/${y}/` ? -1 : 1));
    expect(order).toEqual(keyOrder);
    expect(new Set(order).size).toBe(order.length);
    for (const id of made) expect(order).toContain(id);
    // The next tick starts at the first tenant again.
    const again = await gcTick(deps, { now: LATER, maxTenants: 1, log: quiet });
    expect(again.tenants[0]!.tenant).toBe(order[0]);
  });

  it("a tenant whose GC fails is reported and logged; the tenants after it are still collected", async () => {
    const bad = await tenantWithGarbage();
    const good = await tenantWithGarbage();
    // A checkpoint record that is not JSON: that tenant's GC stops (nothing of it is deleted).
    await env.FILES.put(`t/${bad.tenant}/w/main/x/checkpoints/0000000000000000.json`, "{not json");
    // From the first tenant: a cursor left by an earlier tick may lie past the new tenants' random ids.
    await env.KV.delete(GC_CURSOR_KEY);
    const lines: string[] = [];
    const r = await gcTick(deps, { now: LATER, maxTenants: 10_000, log: (l) => lines.push(l) });
    const failed = r.tenants.find((x) => x.tenant === bad.tenant);
    expect(failed && "error" in failed ? failed.error : "").toMatch(/not valid JSON/);
    expect(lines.some((l) => l.includes(bad.tenant) && l.includes("error"))).toBe(true);
    expect(await layerObjects(bad)).toBe(2);
    expect(await layerObjects(good)).toBe(0);
    await env.FILES.delete(`t/${bad.tenant}/w/main/x/checkpoints/0000000000000000.json`);
  });

  it("the Workers entry's scheduled handler runs a tick (waitUntil)", async () => {
    await env.KV.delete(GC_CURSOR_KEY);
    const waits: Promise<unknown>[] = [];
    const ctx = { waitUntil: (p: Promise<unknown>) => void waits.push(p), passThroughOnException: () => {}, props: {} } as unknown as ExecutionContext;
    worker.scheduled({ cron: "*/30 * * * *", scheduledTime: Date.now(), noRetry: () => {} } as ScheduledController, env as never, ctx);
    expect(waits.length).toBe(1);
    await waits[0];
    // Within the grace period nothing goes, but every tenant was visited: the cursor wrapped (absent).
    expect(await env.KV.get(GC_CURSOR_KEY)).toBeNull();
  });
});

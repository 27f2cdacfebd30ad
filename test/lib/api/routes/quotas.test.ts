/** The workspaces quota: refused at create, fork and create-with-archive before anything is written. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { memoryLimits } from "../../../../lib/limits/store.js";
import { durableLimits } from "../../../../lib/limits/durable-object.js";
import { admin, newTenant, testApp } from "../../../helpers.js";
import { snapshot } from "../../archive/helpers.js";
import { tar } from "../../archive/archives.js";

describe("workspaces quota", () => {
  it("the tenant's limit: create, fork and an archive create past it are QUOTA_EXCEEDED naming quota, usage and limit, and storage is byte-identical", async () => {
    const app = testApp({ limits: memoryLimits() });
    const t = await newTenant(app); // one workspace: main
    await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, { workspaces: 2 }, "PUT");
    const post = (body: BodyInit, type = "application/json", q = "") => t.req(`/v1/workspaces${q}`, { method: "POST", headers: { "content-type": type }, body });
    expect((await post(JSON.stringify({ id: "second" }))).status).toBe(201);
    const before = await snapshot(t.tenant);
    for (const res of [await post(JSON.stringify({ id: "third" })), await post(JSON.stringify({ id: "forked", from_workspace: "main" })), await post(tar([{ name: "a.txt", body: "x" }]), "application/x-tar", "?id=packed")]) {
      expect(res.status).toBe(413);
      const body = (await res.json()) as any;
      expect(body.error).toMatchObject({ code: "QUOTA_EXCEEDED", details: { quota: "workspaces", usage: 2, limit: 2 } });
      expect(body.error.message).toContain("workspaces quota is 2");
      expect(body.error.message).toContain("PUT /v1/admin/tenants/{tenant}/limits");
    }
    expect(await snapshot(t.tenant)).toEqual(before);
    // Deleting one frees its slot.
    expect((await t.req("/v1/workspaces/second", { method: "DELETE" })).status).toBe(200);
    expect((await post(JSON.stringify({ id: "third" }))).status).toBe(201);
  });

  it("a key's own workspaces limit is the smaller one: it is refused where the tenant's other key is not, told it is the key's limit (raising the tenant's would not help)", async () => {
    const app = testApp({ limits: memoryLimits() });
    const t = await newTenant(app);
    const k = await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { name: "one-ws", limits: { workspaces: 1 } });
    const res = await app.request("/v1/workspaces", { method: "POST", headers: { authorization: `Bearer ${k.body.key}`, "content-type": "application/json" }, body: JSON.stringify({ id: "nope" }) });
    expect(res.status).toBe(413);
    const error = ((await res.json()) as any).error;
    expect(error.details).toEqual({ quota: "workspaces", usage: 1, limit: 1, by: "key" });
    expect(error.message).toContain("this API key's own workspaces limit is 1");
    expect(error.message).not.toContain("PUT /v1/admin/tenants"); // was: ask the operator to raise the tenant's limit
    expect((await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "yes" }) })).status).toBe(201);
  });

  it("creates racing for the last slot: of 12 concurrent creates through two app instances sharing the limits object, exactly one passes", async () => {
    const one = testApp({ limits: durableLimits(env.LIMITS) });
    const two = testApp({ limits: durableLimits(env.LIMITS) });
    const t = await newTenant(one); // main
    await admin(one, `/v1/admin/tenants/${t.tenant}/limits`, { workspaces: 2 }, "PUT");
    const res = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? two : one).request("/v1/workspaces", { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json" }, body: JSON.stringify({ id: `race-${i}` }) })));
    expect(res.filter((r) => r.status === 201).length).toBe(1);
    expect(res.filter((r) => r.status === 413).length).toBe(11);
    const listed = (await (await t.req("/v1/workspaces")).json()) as any;
    expect(listed.workspaces.length).toBe(2);
    // The slots are released: with one deleted, the next create passes.
    const made = listed.workspaces.find((w: any) => w.id !== "main").id;
    expect((await t.req(`/v1/workspaces/${made}`, { method: "DELETE" })).status).toBe(200);
    expect((await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "after" }) })).status).toBe(201);
  }, 120_000);
});

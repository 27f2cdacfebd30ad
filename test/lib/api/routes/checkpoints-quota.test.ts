/**
 * The checkpoints_per_workspace quota: a checkpoint (POST checkpoints, or the one a fork makes of its
 * origin) past it is QUOTA_EXCEEDED naming quota, usage and limit, before anything is sealed or written;
 * a fork from a given checkpoint, or of a workspace no key may write (no checkpoint made), is not counted.
 * Strict under concurrency: a checkpoint holds a slot in the tenant's limits object while it is made.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { durableLimits } from "../../../../lib/limits/durable-object.js";
import { memoryLimits } from "../../../../lib/limits/store.js";
import { DEFAULT_LIMITS } from "../../../../lib/limits/fields.js";
import { admin, newTenant, testApp } from "../../../helpers.js";
import { snapshot } from "../../archive/helpers.js";

const json = (body: unknown) => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

describe("checkpoints_per_workspace", () => {
  it("defaults to 100 and is shown with the other limits", async () => {
    expect(DEFAULT_LIMITS.checkpoints_per_workspace).toBe(100);
    const app = testApp({ limits: memoryLimits() });
    const t = await newTenant(app);
    const got = await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, { checkpoints_per_workspace: 3 }, "PUT");
    expect(got.body.effective.checkpoints_per_workspace).toBe(3);
  });

  it("past the limit: POST checkpoints and a fork that would checkpoint its origin are refused, storage byte-identical; a fork from a given checkpoint passes; a delete frees room", async () => {
    const app = testApp({ limits: memoryLimits() });
    const t = await newTenant(app); // workspace main
    await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, { checkpoints_per_workspace: 2 }, "PUT");
    await t.req("/v1/workspaces/main/files/a.txt", { method: "PUT", body: "one" });
    const first = (await (await t.req("/v1/workspaces/main/checkpoints", json({ name: "one" }))).json()) as any;
    await t.req("/v1/workspaces/main/files/a.txt", { method: "PUT", body: "two" });
    expect((await t.req("/v1/workspaces/main/checkpoints", json({ name: "two" }))).status).toBe(201);
    await t.req("/v1/workspaces/main/files/a.txt", { method: "PUT", body: "three" }); // an upper file a checkpoint would seal
    const before = await snapshot(t.tenant);
    for (const res of [await t.req("/v1/workspaces/main/checkpoints", json({ name: "three" })), await t.req("/v1/workspaces", json({ id: "forked", from_workspace: "main" }))]) {
      expect(res.status).toBe(413);
      const body = (await res.json()) as any;
      expect(body.error).toMatchObject({ code: "QUOTA_EXCEEDED", details: { quota: "checkpoints_per_workspace", usage: 2, limit: 2 } });
      expect(body.error.message).toContain("DELETE /v1/workspaces/main/checkpoints/{id}");
    }
    expect(await snapshot(t.tenant)).toEqual(before); // nothing sealed, no workspace made
    expect((await t.req("/v1/workspaces", json({ id: "from-one", from_workspace: "main", checkpoint: first.id }))).status).toBe(201);
    expect((await t.req(`/v1/workspaces/main/checkpoints/${first.id}`, { method: "DELETE" })).status).toBe(200);
    expect((await t.req("/v1/workspaces/main/checkpoints", json({ name: "three" }))).status).toBe(201);
  });

  it("a key's own limit is the smaller one; another workspace has room of its own", async () => {
    const app = testApp({ limits: memoryLimits() });
    const t = await newTenant(app);
    const k = await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { name: "one-cp", limits: { checkpoints_per_workspace: 1 } });
    const asKey = (path: string, body: unknown) => app.request(path, { ...json(body), headers: { authorization: `Bearer ${k.body.key}`, "content-type": "application/json" } });
    expect((await asKey("/v1/workspaces/main/checkpoints", {})).status).toBe(201);
    const refused = await asKey("/v1/workspaces/main/checkpoints", {});
    expect(refused.status).toBe(413);
    expect(((await refused.json()) as any).error.details).toEqual({ quota: "checkpoints_per_workspace", usage: 1, limit: 1, by: "key" }); // the key's own limit binds
    expect((await t.req("/v1/workspaces/main/checkpoints", json({}))).status).toBe(201); // the tenant's key: the default 100
    expect((await t.req("/v1/workspaces", json({ id: "other" }))).status).toBe(201);
    expect((await asKey("/v1/workspaces/other/checkpoints", {})).status).toBe(201);
  });

  it("a missing workspace is NOT_FOUND, not a quota answer", async () => {
    const app = testApp({ limits: memoryLimits() });
    const t = await newTenant(app);
    await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, { checkpoints_per_workspace: 0 }, "PUT");
    expect((await t.req("/v1/workspaces/nope/checkpoints", json({}))).status).toBe(404);
    expect((await t.req("/v1/workspaces/main/checkpoints", json({}))).status).toBe(413);
  });

  it("checkpoints racing for the room: of 20 concurrent POST checkpoints of one workspace through two app instances sharing the limits object, exactly the limit land; the slots are released", async () => {
    const one = testApp({ limits: durableLimits(env.LIMITS) });
    const two = testApp({ limits: durableLimits(env.LIMITS) });
    const t = await newTenant(one);
    await admin(one, `/v1/admin/tenants/${t.tenant}/limits`, { checkpoints_per_workspace: 4 }, "PUT");
    expect((await t.req("/v1/workspaces/main/checkpoints", json({ name: "first" }))).status).toBe(201); // main has a base now, nothing to seal: every checkpoint that passes the quota lands
    const post = (app: typeof one, i: number) => app.request("/v1/workspaces/main/checkpoints", { ...json({ name: `race-${i}` }), headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json" } });
    const res = await Promise.all(Array.from({ length: 20 }, (_, i) => post(i % 2 ? two : one, i)));
    expect(res.map((r) => r.status).sort()).toEqual([...Array(3).fill(201), ...Array(17).fill(413)]);
    for (const r of res.filter((r) => r.status === 413)) expect(((await r.json()) as any).error.details).toMatchObject({ quota: "checkpoints_per_workspace", limit: 4 });
    const listed = (await (await t.req("/v1/workspaces/main/checkpoints")).json()) as any;
    expect(listed.checkpoints.length).toBe(4);
    // Every slot was released: with one deleted, the next checkpoint passes, and the one after is refused.
    expect((await t.req(`/v1/workspaces/main/checkpoints/${listed.checkpoints[0].id}`, { method: "DELETE" })).status).toBe(200);
    expect((await t.req("/v1/workspaces/main/checkpoints", json({ name: "after" }))).status).toBe(201);
    expect((await t.req("/v1/workspaces/main/checkpoints", json({ name: "past" }))).status).toBe(413);
  }, 120_000);
});

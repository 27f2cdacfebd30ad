/**
 * The checkpoints_per_workspace quota: a checkpoint (POST checkpoints, or the one a fork makes of its
 * origin) past it is QUOTA_EXCEEDED naming quota, usage and limit, before anything is sealed or written;
 * a fork from a given checkpoint, or of a workspace no key may write (no checkpoint made), is not counted.
 */
import { describe, expect, it } from "vitest";
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
    expect(((await refused.json()) as any).error.details).toEqual({ quota: "checkpoints_per_workspace", usage: 1, limit: 1 });
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
});

/**
 * A fork that fails leaves storage as it was (docs/versions.md, Fork): a fork into an id that is
 * already a workspace is ALREADY_EXISTS before its origin is checkpointed or its storage charged, and
 * one that loses the create to another writer deletes the checkpoint it made of its origin, so
 * failed forks neither pile up checkpoints (nor the versions they keep) nor fill checkpoints_per_workspace.
 */
import { describe, expect, it } from "vitest";
import { memoryLimits } from "../../../lib/limits/store.js";
import { admin, newTenant, testApp, upload } from "../../helpers.js";
import { importReq, snapshot } from "../archive/helpers.js";
import { tar } from "../archive/archives.js";

const json = (body: unknown) => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

describe("a failed fork", () => {
  it("into an existing id: ALREADY_EXISTS, the origin's checkpoints and every object of the tenant as they were", async () => {
    const app = testApp({ limits: memoryLimits() });
    const t = await newTenant(app);
    await upload(t, "a.txt", "one\n"); // an upper file a checkpoint would seal
    expect((await t.req("/v1/workspaces", json({ id: "taken" }))).status).toBe(201);
    await upload(t, "b.txt", "two\n");
    const before = await snapshot(t.tenant);
    for (let i = 0; i < 3; i++) {
      const res = await t.req("/v1/workspaces", json({ id: "taken", from_workspace: "main" }));
      expect(res.status).toBe(409);
      expect(((await res.json()) as any).error.code).toBe("ALREADY_EXISTS");
    }
    expect(await snapshot(t.tenant)).toEqual(before);
    expect(((await (await t.req("/v1/workspaces/main/checkpoints")).json()) as any).checkpoints).toEqual([]);
  });

  it("does not use up checkpoints_per_workspace: at the limit's edge a fork into a free id still passes", async () => {
    const app = testApp({ limits: memoryLimits() });
    const t = await newTenant(app);
    await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, { checkpoints_per_workspace: 1 }, "PUT");
    await upload(t, "a.txt", "one\n");
    expect((await t.req("/v1/workspaces", json({ id: "taken" }))).status).toBe(201);
    expect((await t.req("/v1/workspaces", json({ id: "taken", from_workspace: "main" }))).status).toBe(409);
    const fork = await t.req("/v1/workspaces", json({ id: "free", from_workspace: "main" }));
    expect(fork.status, await fork.clone().text()).toBe(201);
  });

  it("that loses its create to a concurrent one deletes the checkpoint it made of its origin", async () => {
    const app = testApp({ limits: memoryLimits() });
    const t = await newTenant(app);
    // Imported: in packs, nothing upper, so the forks' checkpoints switch nothing and all reach the create.
    expect((await importReq(t, tar([{ name: "a.txt", body: "one\n" }]))).status).toBe(200);
    const all = await Promise.all(Array.from({ length: 6 }, () => t.req("/v1/workspaces", json({ id: "same", from_workspace: "main" }))));
    const statuses = all.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.every((s) => s === 201 || s === 409)).toBe(true); // ALREADY_EXISTS, or CONFLICT (another fork's checkpoint switched the origin first)
    const made = ((await (await t.req("/v1/workspaces/same")).json()) as any).base as string;
    const cps = ((await (await t.req("/v1/workspaces/main/checkpoints")).json()) as any).checkpoints as { manifest: string }[];
    expect(cps.map((c) => c.manifest)).toEqual([made]); // the winner's stays (its fork stands on it); no loser's
  });

  it("a checkpoint without from_workspace: INVALID_ARGUMENT naming the fix, no workspace made", async () => {
    const app = testApp({ limits: memoryLimits() });
    const t = await newTenant(app);
    const before = await snapshot(t.tenant);
    const res = await t.req("/v1/workspaces", json({ id: "lost", checkpoint: "cp_1" }));
    expect(res.status).toBe(400);
    const err = ((await res.json()) as any).error;
    expect(err.code).toBe("INVALID_ARGUMENT");
    expect(err.message).toMatch(/add from_workspace/);
    expect(err.message).toMatch(/checkpoints\/cp_1\/restore/);
    expect((await t.req("/v1/workspaces/lost")).status).toBe(404);
    expect(await snapshot(t.tenant)).toEqual(before);
  });
});

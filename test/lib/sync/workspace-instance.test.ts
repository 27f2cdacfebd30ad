/**
 * A sync token is for one instance of its workspace: a workspace deleted and made again with the
 * same id is another workspace, and a run or a live sandbox of the first never reaches the second.
 * A fresh run's token (its write-back) and a live sandbox's (its final write-back of background
 * processes' changes) outlive the call that minted them; the sync server refuses them once the
 * workspace they were minted for is gone, made again or not (lib/sync/server.ts), and a call of a
 * session in the new workspace never runs in the sandbox of the old one (lib/exec/live/run-live.ts
 * sandboxOf). On the real app with local R2/KV and the LIVE Durable Object, over a fake live runner.
 */
import { describe, expect, it } from "vitest";
import { admin, newTenant, testApp, UNGATED, upload, type Tenant } from "../../helpers.js";
import { fakeLiveRunner } from "../../support/fake-live-runner.js";
import { liveApp, SECRET } from "../exec/live/live-app.js";
import { runIdFor } from "../../../lib/sync/run-records.js";
import { mintSyncToken } from "../../../lib/sync/token.js";

const SYNC = { syncSecret: SECRET, syncUrl: "http://toolshed.internal" };

/** Deletes the tenant's workspace and makes one again under the same id, with `file` in it. */
async function remake(t: Tenant, file: string) {
  expect((await t.req(`/v1/workspaces/${t.ws}`, { method: "DELETE" })).status).toBe(200);
  expect((await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: t.ws }) })).status).toBe(201);
  await upload(t, file, "the new workspace's\n");
}

const bodyOf = async (r: Response) => ({ status: r.status, text: await r.text() });

describe("a sync token is for one instance of its workspace", () => {
  it("a run's token, its workspace deleted and made again under the same id: every sync route refuses it (404), nothing of the old run lands in the new one", async () => {
    // The fake runner's fresh runs keep their requests (their sync tokens).
    const runner = fakeLiveRunner();
    const runs = runner.fresh;
    const app = testApp({ executor: runner.executor, ...SYNC });
    const t = await newTenant(app, UNGATED);
    expect((await t.call("bash", { command: "true" })).status).toBe(200);
    const token = runs[0]!.sync.token;
    const sync = (path: string, init: RequestInit = {}) => app.request(`/v1/sync/${path}`, { ...init, headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string> | undefined) } });
    // The token works on the workspace it was minted for.
    expect((await sync("files/before.txt", { method: "PUT", headers: { "if-none-match": "*" }, body: "old run\n" })).status).toBeLessThan(300);
    await remake(t, "kept.txt");
    const tries = [
      await sync("files/late.txt", { method: "PUT", headers: { "if-none-match": "*" }, body: "old run, late\n" }),
      await sync("files/kept.txt"),
      await sync("files/kept.txt", { method: "DELETE", headers: { "if-match": "*" } }),
      await sync("manifest"),
      await sync("manifest", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ buckets: 1 }) }),
      await sync("fetch", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ paths: ["kept.txt"] }) }),
    ];
    for (const r of tries) {
      const { status, text } = await bodyOf(r);
      expect(status, text).toBe(404);
      expect(text).not.toContain("the new workspace's");
    }
    const listed = await (await t.req(`/v1/workspaces/${t.ws}/files/`)).json() as { entries: { path: string }[] };
    expect(listed.entries.map((e) => e.path)).toEqual(["kept.txt"]);
    // A run of the new workspace gets a token that works there.
    expect((await t.call("bash", { command: "true" })).status).toBe(200);
    const fresh = runs[1]!.sync.token;
    expect((await app.request("/v1/sync/files/kept.txt", { headers: { authorization: `Bearer ${fresh}` } })).status).toBe(200);
  });

  it("a background task's record routes, its workspace deleted and made again: the task is told to stop, and nothing of it lands in the new one (bash_output of its id is NOT_FOUND)", async () => {
    // Before, the run routes skipped the workspace's record: an old background task went on writing its output
    // and result under the new workspace's prefix (bash_output there handed them out), and nobody could stop it.
    const app = testApp(SYNC);
    const t = await newTenant(app, UNGATED);
    const meta = (await (await t.req(`/v1/workspaces/${t.ws}`)).json()) as { created_at: string };
    // The token a background task's runner holds (lib/exec/tool-support.ts): this instance, a meter (m) naming the
    // key that started it, which stands (a key gone would stop the task too: lib/sync/starting-key.ts).
    const keyId = (await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, undefined, "GET")).body.keys[0].key_id as string;
    const token = await mintSyncToken(SECRET, { t: t.tenant, w: t.ws, i: meta.created_at, r: "bg-1", m: { k: keyId } }, 600);
    const run = (path: string, init: RequestInit = {}) => app.request(`/v1/sync/run${path}`, { ...init, headers: { authorization: `Bearer ${token}` } });
    expect(await (await run("/output/1", { method: "PUT", body: "before\n" })).json()).toEqual({ kill: false });
    expect(await (await run("/kill")).json()).toEqual({ kill: false });
    await remake(t, "kept.txt");
    const chunk = await run("/output/2", { method: "PUT", body: "the old run's line\n" });
    expect(chunk.status).toBe(200);
    expect(await chunk.json()).toEqual({ kill: true }); // its runner stops the command
    expect(await (await run("/kill")).json()).toEqual({ kill: true });
    // Its result is taken (its end is billed, docs/usage.md) but not stored: 204, so the runner does not send it again.
    expect((await run("/result", { method: "PUT", body: JSON.stringify({ ok: false, error: { code: "INTERNAL", message: "the old run's end" } }) })).status).toBe(204);
    for (const r of [await run("/claim", { method: "POST", body: "{}" }), await run("")]) {
      const { status, text } = await bodyOf(r);
      expect(status, text).toBe(404);
    }
    const polled = await t.call("bash_output", { task_id: await runIdFor(t.tenant, t.ws, "bg-1") });
    expect(polled.status).toBe(404);
    expect(JSON.stringify(polled.body)).not.toContain("the old run");
  });

  it("a live sandbox of the old workspace: the session's next call in the new one gets a sandbox of its own, the old one ends; the old sandbox's token writes nothing there", async () => {
    const { runner, app } = liveApp();
    const t = await newTenant(app, UNGATED);
    const first = await t.call("bash", { command: "server &", keep_alive: true, timeout: 2 }, "chat-1");
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const old = runner.generations[0]!;
    await remake(t, "kept.txt");
    const next = await t.call("bash", { command: "echo hi", keep_alive: true, timeout: 2 }, "chat-1");
    expect(next.status, JSON.stringify(next.body)).toBe(200);
    expect(next.body.output).not.toContain(`gen=${old.generation}`);
    expect(runner.generations).toHaveLength(2);
    // The delete ended it at once (lib/exec/workspace-gone.ts); before, the next call's instance check replaced it here ("end:replaced").
    expect(await old.done).toBe("end:workspace_deleted");
    // The old sandbox's live token (its final write-back's) reaches nothing of the new workspace.
    const late = await app.request("/v1/sync/files/late.txt", { method: "PUT", headers: { authorization: `Bearer ${old.start.sync.token}`, "if-none-match": "*" }, body: "old sandbox\n" });
    expect(late.status).toBe(404);
    expect((await t.req(`/v1/workspaces/${t.ws}/files/late.txt`)).status).toBe(404);
    await t.req(`/v1/workspaces/${t.ws}/sessions/chat-1/sandbox`, { method: "DELETE" });
  });
});

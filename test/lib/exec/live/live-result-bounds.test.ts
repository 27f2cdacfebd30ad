/**
 * The live runner's answer as its next poll (POST /v1/sync/live/result with `poll`,
 * lib/sync/live-server.ts servePoll), attacked with signed tokens of other runners: a token of
 * tenant 1, of another workspace, of another session of the same workspace, posting an answer for
 * a command another session waits on, and polling for its next command; an answer sent again (the
 * same seq, another body), an answer after the sandbox ended, after its key was revoked. The rule
 * they meet: the session is the token's (its claims, never the body), and a command's answer is
 * taken once, from its own generation, while it waits (session-runner.ts `result`). On the real app
 * with the LIVE Durable Object, over the fake live runner (test/support/fake-live-runner.ts).
 */
import { env } from "cloudflare:workers";
import { liveMarkerKey } from "../../../../lib/layout/live-markers.js";
import { describe, expect, it } from "vitest";
import { mintSyncToken } from "../../../../lib/sync/token.js";
import { ADMIN, admin, newTenant, UNGATED, type Tenant, type TestApp } from "../../../helpers.js";
import { liveApp, okOutput, SECRET } from "./live-app.js";

const setup = () => liveApp();

const status = (generation: string) => ({ generation, started_at: 1, last_used_at: 1, processes: [{ pid: 666, command: "forged" }], ports: [], wall_ms: 1 });
const forgedAnswer = (generation: string, seq: number) => ({
  generation, seq, status: status(generation),
  response: { ok: true, result: { run_id: "x", stdout: "FORGED\n", stderr: "", output: "FORGED\n", exit_code: 0, duration_ms: 1, timed_out: false, killed: false, truncated: false, files_changed: [], files_created: [], files_deleted: [], conflicts: [], skipped: [], discarded: [], sync: { cache: "warm", manifest_files: 0, downloaded_files: 0, downloaded_bytes: 0, uploaded_files: 0, uploaded_bytes: 0, deleted_files: 0, sync_in_ms: 0, sync_out_ms: 0 } } },
});
/** POST /v1/sync/live/result with `token`: the answer and, with `poll`, the next poll. */
async function postResult(app: TestApp, token: string, body: unknown) {
  const r = await app.request("/v1/sync/live/result", { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: r.status, body: r.status === 204 ? null : ((await r.json()) as any) };
}
const bash = (t: Tenant, command: string, session: string) => t.call("bash", { command, keep_alive: true, timeout: 5 }, session);

describe("a runner's answer and its next poll reach only its own session", () => {
  it("tokens of tenant 2, of another workspace, of another session: their answer for the waiting command is not taken, their poll takes no command of it", async () => {
    const { app, runner } = setup();
    const victim = await newTenant(app, UNGATED);
    const other = await newTenant(app, UNGATED);
    okOutput(await bash(victim, "first", "s-a"));
    const g = runner.generations[0]!;
    // The victim's next command waits in its runner (seq 2), its answer not yet posted.
    const waiting = bash(victim, "__block", "s-a");
    await runner.blockedOne();
    const ws2 = "ws-two";
    expect((await victim.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: ws2 }) })).status).toBe(201);
    const forgers = [
      await mintSyncToken(SECRET, { t: other.tenant, w: victim.ws, r: "x", l: { s: "s-a", g: g.generation } }, 60), // tenant 2, same ids
      await mintSyncToken(SECRET, { t: victim.tenant, w: ws2, r: "x", l: { s: "s-a", g: g.generation } }, 60), // another workspace of the tenant
      await mintSyncToken(SECRET, { t: victim.tenant, w: victim.ws, r: "x", l: { s: "s-b", g: g.generation } }, 60), // another session of the workspace
    ];
    for (const token of forgers) {
      const r = await postResult(app, token, { ...forgedAnswer(g.generation, 2), poll: {} });
      expect(r, "their own session has no such runner: told to end").toEqual({ status: 200, body: { end: "replaced" } });
    }
    runner.release();
    const out = okOutput(await waiting);
    expect(out).toContain(`gen=${g.generation} n=2 cmd=__block`);
    expect(out).not.toContain("FORGED");
    const view = (await (await victim.req(`/v1/workspaces/${victim.ws}/sessions/s-a/sandbox`)).json()) as any;
    expect(JSON.stringify(view)).not.toContain("forged");
    // The session goes on with its own runner.
    expect(okOutput(await bash(victim, "third", "s-a"))).toContain(`gen=${g.generation} n=3 cmd=third`);
    await victim.req(`/v1/workspaces/${victim.ws}/sessions/s-a/sandbox`, { method: "DELETE" });
  });

  it("its own token: an answer sent again for a command already answered changes nothing; the next command's answer is its runner's", async () => {
    const { app, runner } = setup();
    const t = await newTenant(app, UNGATED);
    okOutput(await bash(t, "first", "s-a"));
    const g = runner.generations[0]!;
    const token = g.start.sync.token;
    // seq 1 was answered: sent again (another body), alone and as a poll, it is not taken.
    expect((await postResult(app, token, forgedAnswer(g.generation, 1))).status).toBe(204);
    const waiting = bash(t, "__block", "s-a");
    await runner.blockedOne();
    expect((await postResult(app, token, forgedAnswer(g.generation, 1))).status).toBe(204);
    // An answer for a seq never handed over: nothing.
    expect((await postResult(app, token, forgedAnswer(g.generation, 99))).status).toBe(204);
    // Nor does an answer not taken change what the session shows of its sandbox (its processes: what a loss would list).
    const view = (await (await t.req(`/v1/workspaces/${t.ws}/sessions/s-a/sandbox`)).json()) as any;
    expect(JSON.stringify(view.processes)).not.toContain("forged");
    // A generation the token was not issued for: refused before anything is read.
    expect((await postResult(app, token, forgedAnswer("g_other", 2))).status).toBe(403);
    runner.release();
    const out = okOutput(await waiting);
    expect(out).toContain(`gen=${g.generation} n=2 cmd=__block`);
    expect(out).not.toContain("FORGED");
    await t.req(`/v1/workspaces/${t.ws}/sessions/s-a/sandbox`, { method: "DELETE" });
  });

  it("after the sandbox ended (DELETE), or its key was revoked: an answer is not taken and the poll it carries is told the end", async () => {
    const { app, runner } = setup();
    const t = await newTenant(app, UNGATED);
    okOutput(await bash(t, "first", "s-a"));
    const g = runner.generations[0]!;
    expect((await t.req(`/v1/workspaces/${t.ws}/sessions/s-a/sandbox`, { method: "DELETE" })).status).toBe(200);
    expect(await g.done).toBe("end:ended");
    const late = await postResult(app, g.start.sync.token, { ...forgedAnswer(g.generation, 2), poll: {} });
    expect(late.status).toBe(200);
    expect(late.body).toHaveProperty("end");
    const next = okOutput(await bash(t, "after", "s-a"));
    expect(next).not.toContain("FORGED");
    expect(runner.generations).toHaveLength(2);
    await t.req(`/v1/workspaces/${t.ws}/sessions/s-a/sandbox`, { method: "DELETE" });

    // A key of its own starts a sandbox; revoked, that sandbox's answer-and-poll is told revoked.
    const made = (await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read", "write", "execute"] })).body as { key: string; key_id: string };
    const started = await app.request(`/v1/workspaces/${t.ws}/tools/bash`, { method: "POST", headers: { authorization: `Bearer ${made.key}`, "content-type": "application/json", "x-session-id": "s-k" }, body: JSON.stringify({ command: "one", keep_alive: true, timeout: 5 }) });
    expect(started.status).toBe(200);
    const gk = runner.generations[2]!;
    expect((await app.request(`/v1/admin/tenants/${t.tenant}/keys/${made.key_id}`, { method: "DELETE", headers: { authorization: `Bearer ${ADMIN}` } })).status).toBeLessThan(300);
    expect(await gk.done).toBe("end:revoked");
    const revoked = await postResult(app, gk.start.sync.token, { ...forgedAnswer(gk.generation, 2), poll: {} });
    expect(revoked.body).toHaveProperty("end");
  });
});

describe("a live sandbox whose workspace is deleted", () => {
  it("ends at once, told workspace_deleted, and nothing of it answers a workspace made again under the id", async () => {
    const { app, runner } = setup();
    const t = await newTenant(app, UNGATED);
    okOutput(await bash(t, "first", "s-a"));
    const g = runner.generations[0]!;
    expect((await t.req(`/v1/workspaces/${t.ws}`, { method: "DELETE" })).status).toBe(200);
    expect(await g.done).toBe("end:workspace_deleted");
    expect((await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: t.ws }) })).status).toBe(201);
    const again = okOutput(await bash(t, "second", "s-a"));
    expect(runner.generations).toHaveLength(2);
    expect(again).toContain(`gen=${runner.generations[1]!.generation} n=1 cmd=second`);
    expect(again).not.toMatch(/live sandbox (lost|ended)/);
    // A sandbox's marker lives as long as it does: its end's accounting deletes it.
    const marker = liveMarkerKey(t.tenant, t.ws, "s-a", runner.generations[1]!.generation);
    expect(await env.FILES.head(marker)).not.toBeNull();
    await t.req(`/v1/workspaces/${t.ws}/sessions/s-a/sandbox`, { method: "DELETE" });
    expect(await env.FILES.head(marker)).toBeNull();
  });

  it("one the delete did not find (its marker missing: started as the delete listed) ends at its runner's next idle poll (not its idle end)", async () => {
    const { app, runner } = setup();
    const t = await newTenant(app, UNGATED);
    okOutput(await bash(t, "first", "s-a"));
    const g = runner.generations[0]!;
    const marker = liveMarkerKey(t.tenant, t.ws, "s-a", g.generation);
    expect(await env.FILES.head(marker)).not.toBeNull(); // put beside its runner's start
    await env.FILES.delete(marker);
    expect((await t.req(`/v1/workspaces/${t.ws}`, { method: "DELETE" })).status).toBe(200);
    // The idle poll (FAST: held 300 ms) finds the workspace gone; before that rule the sandbox lived to its idle end.
    expect(await g.done).toBe("end:workspace_deleted");
  });
});

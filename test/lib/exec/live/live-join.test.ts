/**
 * Later calls of a session without keep_alive (docs/live-sessions.md, "Later calls"): on the real
 * app with local R2/KV and the LIVE Durable Object, with the fake live runner (whose fresh runs
 * answer `fresh cmd=...`). Omitted, a call of a session holding a live sandbox runs in it and never
 * starts one; keep_alive: false runs fresh and says the live one was left alone; a session without
 * one is as before. What each costs is pinned in live-cost.test.ts.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { memoryLiveCoordinator } from "../../../../lib/exec/live/memory.js";
import { durableLiveCoordinator, type LiveObjects } from "../../../../lib/runtime/live-coordinator.js";
import { admin, newTenant, testApp, UNGATED, type Tenant } from "../../../helpers.js";
import { fakeLiveRunner } from "../../../support/fake-live-runner.js";
import { STEADY } from "./coordinator-conformance.js";

const SECRET = "sync-secret-for-tests-0123456789";

function setup() {
  const runner = fakeLiveRunner();
  const app = testApp({ executor: runner.executor, syncSecret: SECRET, syncUrl: "http://toolshed.internal", liveCoordinator: durableLiveCoordinator(env.LIVE as unknown as LiveObjects, STEADY), liveBusyWaitMs: 100 });
  runner.attach(app);
  return { runner, app };
}

const okOutput = (r: { status: number; body: any }) => {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.output as string;
};
const bash = (t: Tenant, command: string, more: Record<string, unknown> = {}, session = "chat-1") => t.call("bash", { command, timeout: 2, ...more }, session).then(okOutput);
const sandbox = (t: Tenant, session: string, method = "GET") => t.req(`/v1/workspaces/${t.ws}/sessions/${session}/sandbox`, { method });
const LEFT_ALONE = "[keep_alive: false: this call ran in a fresh sandbox; the session's live sandbox was left alone (its processes, /tmp and HOME are not seen here; calls without keep_alive run in it)]\n";

describe("calls without keep_alive in a session that holds a live sandbox", () => {
  it("run in it (bash and run_code, its shell's state kept); keep_alive: false runs fresh and says the live one was left alone; later calls are in it again", async () => {
    const { app, runner } = setup();
    const t = await newTenant(app, UNGATED);
    expect(await bash(t, "cd sub", { keep_alive: true })).toContain("[live sandbox started");
    const g = runner.generations[0]!.generation;
    expect(await bash(t, "pwd")).toBe(`gen=${g} n=2 cmd=pwd\n`);
    expect(okOutput(await t.call("run_code", { language: "python", code: "print(1)" }, "chat-1"))).toBe(`gen=${g} n=3 cmd=python3 -\n`);

    expect(await bash(t, "pwd", { keep_alive: false })).toBe(`${LEFT_ALONE}fresh cmd=pwd\n`);
    expect(runner.fresh.at(-1)!.shell).toEqual({ keep: "cwd", state: { cwd: "sub" } }); // the saved shell, replayed
    expect(okOutput(await t.call("run_code", { language: "python", code: "print(1)", keep_alive: false }, "chat-1"))).toBe(`${LEFT_ALONE}fresh cmd=python3 -\n`);
    expect((await sandbox(t, "chat-1")).status).toBe(200); // left alone
    expect(await bash(t, "true")).toBe(`gen=${g} n=4 cmd=true\n`);
    expect(runner.generations).toHaveLength(1);
    await sandbox(t, "chat-1", "DELETE");
  });

  it("after it ended: the next call says what was lost and runs fresh, starting nothing; the one after is as in a session that never had one", async () => {
    const { app, runner } = setup();
    const t = await newTenant(app, UNGATED);
    await bash(t, "cd sub", { keep_alive: true });
    expect((await sandbox(t, "chat-1", "DELETE")).status).toBe(200);
    const after = await bash(t, "pwd");
    expect(after).toMatch(/^\[live sandbox ended: you or the app you run in ended it on purpose \(DELETE .*Gone with it: .*1 process \(python3 -m http\.server 8123\).*Files are safe.*\]\n\[this call ran in a fresh sandbox: a call without keep_alive never starts a live one \(keep_alive: true does\)\]\nfresh cmd=pwd\n$/s);
    expect(await bash(t, "pwd")).toBe("fresh cmd=pwd\n");
    expect(okOutput(await t.call("run_code", { language: "python", code: "print(1)" }, "chat-1"))).toBe("fresh cmd=python3 -\n");
    expect(await bash(t, "pwd", { keep_alive: false })).toBe("fresh cmd=pwd\n"); // nothing to leave alone: no note
    expect(runner.generations).toHaveLength(1);
    expect((await sandbox(t, "chat-1")).status).toBe(404);
  });

  it("run_code's start is seen by bash without keep_alive, and bash's by run_code; other sessions and the unnamed one stay fresh", async () => {
    const { app, runner } = setup();
    const t = await newTenant(app, UNGATED);
    okOutput(await t.call("run_code", { language: "bash", code: "true", keep_alive: true }, "chat-rc"));
    const g = runner.generations[0]!.generation;
    expect(await bash(t, "pwd", {}, "chat-rc")).toBe(`gen=${g} n=2 cmd=pwd\n`);
    expect(await bash(t, "pwd", {}, "chat-other")).toBe("fresh cmd=pwd\n");
    const unnamed = await t.req(`/v1/workspaces/${t.ws}/tools/bash`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ command: "pwd" }) });
    expect(((await unnamed.json()) as any).output).toBe("fresh cmd=pwd\n");
    await sandbox(t, "chat-rc", "DELETE");
  });

  it("a sandbox started with other access (network) is left alone by a call without keep_alive, which says so and runs fresh", async () => {
    const { app, runner } = setup();
    const t = await newTenant(app, { ...UNGATED, scopes: ["read", "write", "execute", "network"] });
    await bash(t, "true", { keep_alive: true });
    expect(runner.generations[0]!.start.network).toBe(true);
    const k = await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read", "write", "execute"] });
    const r = await app.request(`/v1/workspaces/${t.ws}/tools/bash`, { method: "POST", headers: { authorization: `Bearer ${k.body.key}`, "content-type": "application/json", "x-session-id": "chat-1" }, body: JSON.stringify({ command: "pwd", timeout: 2 }) });
    expect(((await r.json()) as any).output).toMatch(/^\[this session's live sandbox was started by another API key or with other network access, web domain lists or secrets than this call has: it was left alone.*\]\nfresh cmd=pwd\n$/);
    expect(runner.generations).toHaveLength(1);
    expect((await sandbox(t, "chat-1")).status).toBe(200);
    await sandbox(t, "chat-1", "DELETE");
  });

  it("the Anthropic-compat bash: without X-Toolshed-Keep-Alive it runs in the session's live sandbox; with false, fresh (said); with true, as keep_alive", async () => {
    const { app, runner } = setup();
    const t = await newTenant(app, UNGATED);
    const compat = async (command: string, header?: string) => {
      const r = await t.req(`/v1/workspaces/${t.ws}/compat/anthropic/bash`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-session-id": "chat-c", ...(header ? { "x-toolshed-keep-alive": header } : {}) },
        body: JSON.stringify({ command }),
      });
      const body = (await r.json()) as any;
      expect(r.status, JSON.stringify(body)).toBe(200);
      return body.content[0].text as string;
    };
    expect(await compat("pwd")).toContain("fresh cmd=pwd");
    expect(await compat("cd sub", "true")).toContain("live sandbox started");
    const g = runner.generations[0]!.generation;
    expect(await compat("pwd")).toContain(`gen=${g} n=2 cmd=pwd`);
    const fresh = await compat("pwd", "false");
    expect(fresh).toContain("the session's live sandbox was left alone");
    expect(fresh).toContain("fresh cmd=pwd");
    await sandbox(t, "chat-c", "DELETE");
  });

  it("a coordinator that forgot the session (restarted, redeployed) while its saved shell says it holds a sandbox: the next call says the sandbox is gone, once", async () => {
    const { app, runner } = setup();
    const t = await newTenant(app, UNGATED);
    await bash(t, "cd sub; export X=1", { keep_alive: true });
    // The same storage and runner behind a coordinator that knows nothing of the session (as after a restart of npm start).
    const restarted = testApp({ executor: runner.executor, syncSecret: SECRET, syncUrl: "http://toolshed.internal", liveCoordinator: memoryLiveCoordinator(STEADY), liveBusyWaitMs: 100 });
    const t2: Tenant = { ...t, app: restarted, call: async (tool, args, session) => {
      const r = await restarted.request(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", ...(session ? { "x-session-id": session } : {}) }, body: JSON.stringify(args) });
      return { status: r.status, body: await r.json() };
    } };
    const after = await bash(t2, "pwd");
    expect(after).toMatch(/^\[live sandbox lost: the session's live sandbox is no longer there, and what it held is not known .*Gone with it: its shell state .*Files are safe.*\]\n\[this call ran in a fresh sandbox: a call without keep_alive never starts a live one \(keep_alive: true does\)\]\nfresh cmd=pwd\n$/s);
    expect(await bash(t2, "pwd")).toBe("fresh cmd=pwd\n"); // told once: the hint is cleared
    await sandbox(t, "chat-1", "DELETE");
  });

  it("the same with keep_alive: true: the call that starts the new sandbox says the old one is gone before it says it started, once (seen through HTTP after a reload of npm start: only \"started\" was said)", async () => {
    const { app, runner } = setup();
    const t = await newTenant(app, UNGATED);
    await bash(t, "cd sub; export X=1", { keep_alive: true });
    const restarted = testApp({ executor: runner.executor, syncSecret: SECRET, syncUrl: "http://toolshed.internal", liveCoordinator: memoryLiveCoordinator(STEADY), liveBusyWaitMs: 100 });
    runner.attach(restarted); // the new sandbox's runner polls the coordinator that made it
    const t2: Tenant = { ...t, app: restarted, call: async (tool, args, session) => {
      const r = await restarted.request(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", ...(session ? { "x-session-id": session } : {}) }, body: JSON.stringify(args) });
      return { status: r.status, body: await r.json() };
    } };
    const after = await bash(t2, "pwd", { keep_alive: true });
    expect(after).toMatch(/^\[live sandbox lost: the session's live sandbox is no longer there, and what it held is not known .*Files are safe.*\]\n\[live sandbox started for this session/s);
    expect(after).not.toContain("[this call ran in a fresh sandbox");
    const again = await bash(t2, "pwd", { keep_alive: true });
    expect(again).not.toContain("[live sandbox lost"); // told once: the new sandbox holds the session now
    expect(again).not.toContain("[live sandbox started");
    await restarted.request(`/v1/workspaces/${t.ws}/sessions/chat-1/sandbox`, { method: "DELETE", headers: { authorization: `Bearer ${t.key}` } });
    await sandbox(t, "chat-1", "DELETE");
  });

  it("run_code with keep_alive: true says the same as bash (one note): the old sandbox is gone, then that it started one, once (it said only \"started\")", async () => {
    const { app, runner } = setup();
    const t = await newTenant(app, UNGATED);
    expect(okOutput(await t.call("run_code", { language: "python", code: "print(1)", keep_alive: true }, "chat-1"))).toContain("[live sandbox started");
    const restarted = testApp({ executor: runner.executor, syncSecret: SECRET, syncUrl: "http://toolshed.internal", liveCoordinator: memoryLiveCoordinator(STEADY), liveBusyWaitMs: 100 });
    runner.attach(restarted);
    const code = async (keep_alive?: boolean) => {
      const r = await restarted.request(`/v1/workspaces/${t.ws}/tools/run_code`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": "chat-1" }, body: JSON.stringify({ language: "python", code: "print(1)", ...(keep_alive ? { keep_alive } : {}) }) });
      return okOutput({ status: r.status, body: await r.json() });
    };
    const after = await code(true);
    expect(after).toMatch(/^\[live sandbox lost: the session's live sandbox is no longer there, and what it held is not known .*Files are safe.*\]\n\[live sandbox started for this session/s);
    const again = await code(true);
    expect(again).not.toContain("[live sandbox lost"); // told once
    expect(again).not.toContain("[live sandbox started");
    await restarted.request(`/v1/workspaces/${t.ws}/sessions/chat-1/sandbox`, { method: "DELETE", headers: { authorization: `Bearer ${t.key}` } });
    await sandbox(t, "chat-1", "DELETE");
  });
});

/**
 * What a live call costs the API (docs/live-sessions-internals.md, "Storage operations per call"): its requests to the
 * session's coordinator and its operations on the session's saved shell, counted on the real app
 * (local R2/KV, the LIVE Durable Object) with the fake live runner (test/support/fake-live-runner.ts,
 * whose shell reports its state as a live shell's). On a sandbox that has answered before, with the
 * shell unchanged: ONE coordinator request and nothing on the saved shell. A call that moves the
 * shell: that request, the state's PUT, then the turn given back. A new sandbox (the session's
 * first call, the call after a DELETE): the saved shell is read for its first command, which restores it.
 * Calls without keep_alive: the coordinator is asked only when the saved shell's hint says the session
 * may hold a live sandbox (bash reads that shell anyway; run_code reads it for the hint).
 */
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { durableLiveCoordinator, type LiveObjects } from "../../../../lib/runtime/live-coordinator.js";
import type { LiveCoordinator } from "../../../../lib/exec/live/types.js";
import { countingStores } from "../../../support/counting-stores.js";
import { fakeLiveRunner } from "../../../support/fake-live-runner.js";
import { newTenant, testApp, UNGATED } from "../../../helpers.js";
import { STEADY } from "./coordinator-conformance.js";

const SECRET = "sync-secret-for-tests-0123456789";

/** The coordinator with the tool side's requests logged (begin, call, run, release, status); the runner's own (next, result, ended) are not. */
function countingCoordinator(base: LiveCoordinator) {
  const log: string[] = [];
  const toolSide = new Set(["begin", "call", "run", "release", "status"]);
  const coordinator = Object.fromEntries(
    Object.entries(base).map(([op, f]) => [op, (...args: unknown[]) => {
      if (toolSide.has(op)) log.push(op);
      return (f as (...a: unknown[]) => unknown)(...args);
    }]),
  ) as unknown as LiveCoordinator;
  return { coordinator, log };
}

/** An app over counted storage and a counted coordinator, with the fake live runner attached (`deps`: for another isolate of it). */
function liveApp() {
  const stores = countingStores();
  const runner = fakeLiveRunner();
  const live = countingCoordinator(durableLiveCoordinator(env.LIVE as unknown as LiveObjects, STEADY));
  const deps = { storage: stores.storage, kv: stores.kv, executor: runner.executor, syncSecret: SECRET, syncUrl: "http://toolshed.internal", liveCoordinator: live.coordinator, undoPruneEvery: 0 };
  const app = testApp(deps);
  runner.attach(app);
  return { stores, runner, live, app, deps };
}

it("a live call: one coordinator request and nothing on the saved shell when the sandbox answered before and its shell did not move; the state is read only for a sandbox's first command", async () => {
  const { stores, runner, live, app } = liveApp();
  const t = await newTenant(app, UNGATED);
  const call = async (tool: string, args: Record<string, unknown>) => {
    live.log.length = 0;
    stores.log.length = 0;
    const r = await t.call(tool, { ...args, keep_alive: true, timeout: 5 }, "chat-1");
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return { coordinator: [...live.log], shells: stores.log.filter((o) => o.endsWith(" internal:shells")), storage: [...stores.log], output: r.body.output as string };
  };
  const bash = (command: string) => call("bash", { command });

  // The session's first call: begun (a runner to start), the saved shell read for its first command, run, the turn given back; the new state saved (a new one: the workspace's states pruned).
  const first = await bash("cd sub");
  expect(first.coordinator).toEqual(["call", "run", "release"]);
  expect(first.shells).toEqual(["r2.get internal:shells", "r2.put internal:shells", "r2.list internal:shells"]);

  // Nothing changed: one request, the shell neither read nor written.
  const same = await bash("true");
  expect(same.coordinator).toEqual(["call"]);
  expect(same.shells).toEqual([]);
  expect(same.output).toBe(`gen=${runner.generations[0]!.generation} n=2 cmd=true\n`);
  const g = runner.generations[0]!;
  expect(g.requests[1]!.shell).toEqual({ keep: "cwd" }); // sent without the saved state: the live shell holds it
  const rc = await call("run_code", { language: "python", code: "print(1)" });
  expect(rc.coordinator).toEqual(["call"]);
  expect(rc.shells).toEqual([]);

  // The shell moved: the state saved, then the turn given back.
  const moved = await bash("cd other");
  expect(moved.coordinator).toEqual(["call", "release"]);
  expect(moved.shells).toEqual(["r2.put internal:shells"]);

  // A new sandbox (after DELETE) starts from the saved state: it was current.
  expect((await t.req(`/v1/workspaces/${t.ws}/sessions/chat-1/sandbox`, { method: "DELETE" })).status).toBe(200);
  const after = await bash("pwd");
  expect(after.output).toContain("[live sandbox ended: you or the app you run in ended it");
  expect(after.coordinator).toEqual(["call", "run", "release"]);
  expect(after.shells).toEqual(["r2.get internal:shells", "r2.put internal:shells"]);
  const g2 = runner.generations[1]!;
  expect(g2.requests[0]!.shell).toEqual({ keep: "cwd", state: { cwd: "other" } });
  const again = await bash("true");
  expect(again.coordinator).toEqual(["call"]);
  expect(again.shells).toEqual([]);
  await t.req(`/v1/workspaces/${t.ws}/sessions/chat-1/sandbox`, { method: "DELETE" });

  // A live sandbox's first command that ends in the root still saves the state (its later saves count on it: the workspace's
  // states are pruned when a session's first is saved); only a fresh sandbox's command skips that (shell-session.ts skipFresh).
  live.log.length = 0;
  stores.log.length = 0;
  const root = await t.call("bash", { command: "true", keep_alive: true, timeout: 5 }, "chat-2");
  expect(root.status, JSON.stringify(root.body)).toBe(200);
  expect(stores.log.filter((o) => o.endsWith(" internal:shells"))).toEqual(["r2.get internal:shells", "r2.put internal:shells", "r2.list internal:shells"]);
  await t.req(`/v1/workspaces/${t.ws}/sessions/chat-2/sandbox`, { method: "DELETE" });
});

it("calls without keep_alive: a session without a live sandbox asks the coordinator nothing (bash: its shell's GET as before; run_code: that GET for the hint); one holding one: one coordinator request, after that GET unless this isolate ran a command of the session lately", async () => {
  const { stores, runner, live, app, deps } = liveApp();
  const other = testApp(deps); // another isolate: the same storage and coordinator, a memo of its own
  const t = await newTenant(app, UNGATED);
  const call = async (tool: string, args: Record<string, unknown>, via = app) => {
    live.log.length = 0;
    stores.log.length = 0;
    const res = await via.request(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": "chat-1" }, body: JSON.stringify({ ...args, timeout: 5 }) });
    const body = (await res.json()) as any;
    expect(res.status, JSON.stringify(body)).toBe(200);
    return { coordinator: [...live.log], shells: stores.log.filter((o) => o.endsWith(" internal:shells")), output: body.output as string };
  };
  const py = { language: "python", code: "print(1)" };

  // No live sandbox: as before, plus run_code's read of the hint.
  expect(await call("bash", { command: "true" })).toEqual({ coordinator: [], shells: ["r2.get internal:shells"], output: "fresh cmd=true\n" });
  expect(await call("run_code", py)).toEqual({ coordinator: [], shells: ["r2.get internal:shells"], output: "fresh cmd=python3 -\n" });
  expect((await call("bash", { command: "true", keep_alive: false })).coordinator).toEqual([]);

  // A live sandbox (its start saves the hint with the shell). Through the isolate that ran it: one coordinator request, as a keep_alive call's.
  expect((await call("bash", { command: "true", keep_alive: true })).coordinator).toEqual(["call", "run", "release"]);
  const g = runner.generations[0]!.generation;
  expect(await call("bash", { command: "true" })).toEqual({ coordinator: ["call"], shells: [], output: `gen=${g} n=2 cmd=true\n` });
  expect(await call("run_code", py)).toEqual({ coordinator: ["call"], shells: [], output: `gen=${g} n=3 cmd=python3 -\n` });
  // Through another isolate: the saved shell's hint read first, then that request.
  expect(await call("bash", { command: "true" }, other)).toEqual({ coordinator: ["call"], shells: ["r2.get internal:shells"], output: `gen=${g} n=4 cmd=true\n` });
  expect(await call("run_code", py, other)).toEqual({ coordinator: ["call"], shells: [], output: `gen=${g} n=5 cmd=python3 -\n` }); // that isolate ran one now
  // keep_alive: false: the coordinator's status, beside the fresh run (the note); the hint stays.
  const fresh = await call("bash", { command: "true", keep_alive: false });
  expect(fresh.coordinator).toEqual(["status"]);
  expect(fresh.shells).toEqual(["r2.get internal:shells", "r2.put internal:shells"]); // the state it ended in, hint kept: as every fresh command of a session with a saved shell
  expect(fresh.output).toContain("the session's live sandbox was left alone");

  // Ended: the first call after it is told (this isolate's memo: asked at once), runs fresh and clears the hint (its shell's GET for the
  // fresh run, one PUT); the next calls, through either isolate, ask the coordinator nothing.
  expect((await t.req(`/v1/workspaces/${t.ws}/sessions/chat-1/sandbox`, { method: "DELETE" })).status).toBe(200);
  const told = await call("bash", { command: "true" });
  expect(told.coordinator).toEqual(["call"]);
  expect(told.shells).toEqual(["r2.get internal:shells", "r2.put internal:shells"]);
  expect(told.output).toContain("[live sandbox ended: you or the app you run in ended it");
  expect(await call("bash", { command: "true" })).toEqual({ coordinator: [], shells: ["r2.get internal:shells", "r2.put internal:shells"], output: "fresh cmd=true\n" });
  expect((await call("bash", { command: "true" }, other)).coordinator).toEqual(["call"]); // its memo, stale: one request, told nothing (the loss was told), forgotten
  expect((await call("bash", { command: "true" }, other)).coordinator).toEqual([]);
  expect(runner.generations).toHaveLength(1);
});

it("a live call on a layered workspace whose record this isolate knows: no GET of meta.json on the tool's side (the runner's manifest reads it; known-workspace.ts)", async () => {
  const { stores, runner, live, app } = liveApp();
  const t = await newTenant(app, UNGATED);
  expect((await t.call("write", { file_path: "a.txt", content: "a\n" })).status).toBe(200);
  const cp = await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "base" }) });
  expect(cp.status).toBe(201); // layered now: a lower layer under the upper one
  const bash = async () => {
    stores.log.length = 0;
    const r = await t.call("bash", { command: "true", keep_alive: true, timeout: 5 }, "chat-1");
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return stores.log.filter((o) => o.includes("meta.json"));
  };
  expect(await bash()).toEqual(["r2.get meta.json"]); // the checkpoint's write made this isolate forget the record: read once
  expect(await bash()).toEqual([]);
  expect(await bash()).toEqual([]);
  await t.req(`/v1/workspaces/${t.ws}/sessions/chat-1/sandbox`, { method: "DELETE" });
});

it("the OpenAI-compat shell beside a session's live sandbox: each command runs fresh at the root and leaves it alone (before: its restart ended the sandbox, the processes another door started gone); the hint stays, so another isolate's later call still runs in it", async () => {
  const { stores, runner, live, app, deps } = liveApp();
  const other = testApp(deps); // another isolate: the same storage and coordinator, a memo of its own
  const t = await newTenant(app, UNGATED);
  const bash = async (args: Record<string, unknown>, via = app) => {
    const res = await via.request(`/v1/workspaces/${t.ws}/tools/bash`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": "chat-o" }, body: JSON.stringify({ ...args, timeout: 5 }) });
    const body = (await res.json()) as any;
    expect(res.status, JSON.stringify(body)).toBe(200);
    return body.output as string;
  };
  expect(await bash({ command: "cd sub", keep_alive: true })).toContain("live sandbox started");
  const g = runner.generations[0]!.generation;

  live.log.length = 0;
  stores.log.length = 0;
  const res = await t.req(`/v1/workspaces/${t.ws}/compat/openai/shell`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": "chat-o" }, body: JSON.stringify({ type: "shell_call", call_id: "c1", action: { commands: ["pwd", "ls"] } }) });
  const item = (await res.json()) as any;
  expect(res.status, JSON.stringify(item)).toBe(200);
  expect(item.output.map((o: any) => o.stdout)).toEqual(["fresh cmd=pwd\n", "fresh cmd=ls\n"]);
  // Per command: the coordinator's status (is the sandbox there?), the saved shell read and put back at the root with the hint (a restart's DELETE before).
  expect(live.log).toEqual(["status", "status"]);
  expect(stores.log.filter((o) => o.endsWith(" internal:shells"))).toEqual(["r2.get internal:shells", "r2.put internal:shells", "r2.get internal:shells", "r2.put internal:shells"]);

  expect((await t.req(`/v1/workspaces/${t.ws}/sessions/chat-o/sandbox`)).status).toBe(200);
  expect(await bash({ command: "pwd" })).toBe(`gen=${g} n=2 cmd=pwd\n`);
  expect(await bash({ command: "pwd" }, other)).toBe(`gen=${g} n=3 cmd=pwd\n`); // no memo there: the saved shell's hint
  expect(runner.generations).toHaveLength(1);
  await t.req(`/v1/workspaces/${t.ws}/sessions/chat-o/sandbox`, { method: "DELETE" });
});

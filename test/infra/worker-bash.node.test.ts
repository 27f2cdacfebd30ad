/**
 * bash end to end as `npm start` runs it: the app in the Workers runtime (wrangler dev) calls the
 * runner through @aws-sdk/client-lambda InvokeCommand against the local Invoke stand-in, and the
 * runner reaches the workspace only through the Worker's /v1/sync (a short-lived token).
 */
import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { LocalInvokeServer } from "../../infra/container/local-server.js";
import { startWorkerWithRunner, type WorkerWithRunner } from "../support/worker-with-runner.js";
import { setupTenant, type WorkerProcess } from "../support/wrangler-dev.js";
import { readEvents } from "../support/sse-events.js";

let w: WorkerProcess;
let runner: LocalInvokeServer;
let toolshed: WorkerWithRunner;

beforeAll(async () => {
  toolshed = await startWorkerWithRunner("worker-bash");
  ({ worker: w, runner } = toolshed);
}, 120_000);

afterAll(async () => {
  await toolshed?.stop();
});

it("runs a command from the Worker through the Invoke API and writes its changes back", async () => {
  const t = await setupTenant(w, "wb");
  expect((await t.call("write", { file_path: "a.txt", content: "one\n" })).ok).toBe(true);
  const r = await t.call("bash", { command: "cat a.txt && echo two >> a.txt && echo new > b.txt && echo done" });
  expect(r.ok).toBe(true);
  expect(r.output).toContain("one\ndone");
  expect(r.data.exit_code).toBe(0);
  expect(r.data.files_changed).toEqual(expect.arrayContaining(["a.txt", "b.txt"]));
  const a = await t.call("read", { file_path: "a.txt" });
  expect(a.output).toBe("     1\tone\n     2\ttwo");
  const b = await t.call("read", { file_path: "b.txt" });
  expect(b.output).toBe("     1\tnew");
  const py = await t.call("run_code", { language: "python", code: "print(6 * 7)" });
  expect(py.data.stdout).toBe("42\n");
}, 120_000);

it("a bash run's write-back is undone whole through the Worker (R2): call_id in the result, POST /undo", async () => {
  const t = await setupTenant(w, "wbu");
  expect((await t.call("write", { file_path: "a.txt", content: "one\n" })).ok).toBe(true);
  expect((await t.call("write", { file_path: "gone.txt", content: "keep me\n" })).ok).toBe(true);
  const r = await t.call("bash", { command: "echo two >> a.txt && echo new > b.txt && rm gone.txt" });
  expect(r.ok, JSON.stringify(r)).toBe(true);
  expect(typeof r.call_id).toBe("string");
  expect(r.data.call_id).toBe(r.call_id);
  const u = await fetch(`${t.base}/undo`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify({ call_id: r.call_id }) });
  const ub = (await u.json()) as any;
  expect(u.status, JSON.stringify(ub)).toBe(200);
  expect(ub.restored.map((x: any) => `${x.path}:${x.action}`).sort()).toEqual(["a.txt:restored", "b.txt:deleted", "gone.txt:recreated"]);
  const after = await t.call("bash", { command: "cat a.txt gone.txt; ls" });
  expect(after.output).toBe("one\nkeep me\na.txt\ngone.txt\n");
}, 120_000);

it("background tasks through the Worker: one asynchronous Invoke each; bash_output and kill_shell use the run record in R2, never the runner", async () => {
  const t = await setupTenant(w, "bg");
  const seen = runner.invocations.length;
  const started = await t.call("bash", { command: "sleep 2; echo done", run_in_background: true });
  expect(started.ok, JSON.stringify(started)).toBe(true);
  const id = started.data.task_id;
  const first = await t.call("bash_output", { task_id: id });
  expect(first.data.status).toBe("running");
  const done = await t.call("bash_output", { task_id: id, wait: true, timeout: 30 });
  expect(done.data).toMatchObject({ status: "completed", exit_code: 0 });
  expect(first.data.output + done.data.output).toBe("done\n");

  const long = await t.call("bash", { command: "echo changed > killed.txt; sleep 1000", run_in_background: true });
  await new Promise((r) => setTimeout(r, 1500));
  expect((await t.call("kill_shell", { task_id: long.data.task_id })).data.status).toBe("killed");
  const after = await t.call("bash_output", { task_id: long.data.task_id });
  expect(after.data.status).toBe("killed");
  expect((await t.call("read", { file_path: "killed.txt" })).error.code).toBe("NOT_FOUND");

  // Another tenant, or another workspace of the same tenant, cannot see or kill the tasks.
  const other = await setupTenant(w, "bg-other");
  expect((await other.call("bash_output", { task_id: id })).error.code).toBe("NOT_FOUND");
  expect((await other.call("kill_shell", { task_id: long.data.task_id })).error.code).toBe("NOT_FOUND");
  const otherWs = await setupTenant(w, "bg", "second");
  expect((await otherWs.call("bash_output", { task_id: id })).error.code).toBe("NOT_FOUND");
  // The function was invoked twice, asynchronously; polls and kills never reached it.
  expect(runner.invocations.slice(seen)).toEqual([
    { tenant: "bg", type: "Event" },
    { tenant: "bg", type: "Event" },
  ]);
}, 120_000);

/** Whether a process whose command line contains `pattern` runs on this host (the sandbox's pid namespace is nested in ours). */
function running(pattern: string): boolean {
  return spawnSync("pgrep", ["-f", pattern]).status === 0;
}

it("SSE through the Worker: bash output arrives before the result; a client that goes away kills the command", async () => {
  const t = await setupTenant(w, "sse");
  const headers = { authorization: `Bearer ${t.key}`, "content-type": "application/json", accept: "text/event-stream" };
  const res = await fetch(`${t.base}/tools/bash`, { method: "POST", headers, body: JSON.stringify({ command: "echo first; sleep 2; echo second" }) });
  const events = await readEvents(res);
  const first = events.find((e) => e.event === "progress" && e.data.text.includes("first"));
  expect(first, JSON.stringify(events)).toBeDefined();
  expect(events.at(-1)!.at - first!.at).toBeGreaterThanOrEqual(1000);
  expect(events.at(-1)!.data).toMatchObject({ ok: true, output: "first\nsecond\n", data: { exit_code: 0 } });

  const marker = `sleep 29.${process.pid}`;
  const ctrl = new AbortController();
  const long = await fetch(`${t.base}/tools/bash`, { method: "POST", headers, signal: ctrl.signal, body: JSON.stringify({ command: `echo changed > gone.txt; echo started; ${marker}` }) });
  let sawProcess = false;
  await readEvents(long, (e) => {
    if (e.event === "progress" && e.data.text.includes("started")) {
      sawProcess = running(marker);
      ctrl.abort();
    }
  });
  expect(sawProcess).toBe(true);
  const abortedAt = Date.now();
  while (running(marker) && Date.now() - abortedAt < 8000) await new Promise((r) => setTimeout(r, 100));
  expect(running(marker), "the command still runs 8 s after the client went away").toBe(false);
  await new Promise((r) => setTimeout(r, 1000));
  expect((await t.call("read", { file_path: "gone.txt" })).error.code).toBe("NOT_FOUND");
}, 120_000);

it("a write-back past the files_per_workspace quota over real HTTP: refused whole (none of its files lands), each named in the output the model reads", async () => {
  const t = await setupTenant(w, "wbq");
  const limits = await fetch(`${w.url}/v1/admin/tenants/wbq/limits`, { method: "PUT", headers: { authorization: `Bearer ${w.adminToken}`, "content-type": "application/json" }, body: JSON.stringify({ files_per_workspace: 2 }) });
  expect(limits.status).toBe(200);
  expect((await t.call("write", { file_path: "a.txt", content: "a\n" })).ok).toBe(true);
  const r = await t.call("bash", { command: "echo 1 > n1.txt; echo 2 > n2.txt; echo 3 > n3.txt; echo done" });
  expect(r.ok, JSON.stringify(r)).toBe(true);
  const landed = ["n1.txt", "n2.txt", "n3.txt"].filter((p) => ((r.data.files_changed ?? []) as string[]).includes(p));
  expect(landed, JSON.stringify(r)).toEqual([]);
  expect(r.output).toMatch(/\[not written back: 3 changed files \(n1\.txt, n2\.txt, n3\.txt\)/);
  expect(r.output).toContain("the files_per_workspace quota is 2");
  expect(r.output).toContain("NOT in the workspace");
  expect((await t.call("bash", { command: "ls n*.txt 2>&1 | head -1" })).output).toContain("No such file");
}, 120_000);

it("a write-back that deletes as it writes over real HTTP (the LIMITS Durable Object holds its room): lands where its delete makes the room", async () => {
  const t = await setupTenant(w, "wbh");
  const limits = await fetch(`${w.url}/v1/admin/tenants/wbh/limits`, { method: "PUT", headers: { authorization: `Bearer ${w.adminToken}`, "content-type": "application/json" }, body: JSON.stringify({ files_per_workspace: 3 }) });
  expect(limits.status).toBe(200);
  for (const p of ["a.txt", "b.txt"]) expect((await t.call("write", { file_path: p, content: `${p}\n` })).ok).toBe(true);
  const r = await t.call("bash", { command: "rm b.txt && echo 1 > n1.txt && echo 2 > n2.txt && echo done" });
  expect(r.ok, JSON.stringify(r)).toBe(true);
  expect(r.output, JSON.stringify(r)).not.toContain("not written back");
  expect([...((r.data.files_changed ?? []) as string[])].sort()).toEqual(["n1.txt", "n2.txt"]);
  expect((await t.call("bash", { command: "ls" })).output.split("\n").filter(Boolean).sort()).toEqual(["a.txt", "n1.txt", "n2.txt"]);
}, 120_000);

it("a packed write-back past storage_bytes over real HTTP: the early 413 (its hold, before any stage request) reaches the runner; nothing is written back and the model is told why", async () => {
  const t = await setupTenant(w, "wbpq");
  const limits = await fetch(`${w.url}/v1/admin/tenants/wbpq/limits`, { method: "PUT", headers: { authorization: `Bearer ${w.adminToken}`, "content-type": "application/json" }, body: JSON.stringify({ storage_bytes: 1024 * 1024 }) });
  expect(limits.status).toBe(200);
  const r = await t.call("bash", { command: "mkdir -p big && head -c 16384 /dev/zero > big/f1 && for i in $(seq 2 300); do cp big/f1 big/f$i; done && echo made" });
  expect(r.ok, JSON.stringify(r).slice(0, 600)).toBe(true);
  expect(r.output).toContain("[not written back: 300 changed files (big/f1, big/f10, big/f100, big/f101, big/f102, ...). The write-back's 4915200 bytes of files are more than the 1048576 the storage quota could take");
  expect(r.output).toContain("the storage_bytes quota is 1048576");
  expect((await t.call("bash", { command: "ls big 2>&1 | head -1" })).output).toContain("No such file");
}, 120_000);

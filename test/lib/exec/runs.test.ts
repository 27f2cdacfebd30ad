/** Run records (lib/sync/run-records.ts) and their sync routes (lib/sync/runs.ts) in workerd, over the real local R2. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { randomId } from "../../../lib/shared/hash.js";
import { runIdFor } from "../../../lib/sync/run-records.js";
import { runForeground } from "../../../lib/exec/runs.js";
import { housekeepRuns, killTask, MAX_RUNNING_TASKS, pollTask, RECORD_KEEP_MS, startTask } from "../../../lib/exec/tasks.js";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { httpRunRecords } from "../../../lib/sync/runs.js";
import { handleSync } from "../../../lib/sync/server.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import type { Executor, RunRequest, RunResult } from "../../../lib/exec/types.js";
import { internalPrefix, runPrefix } from "../../../lib/layout/paths.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { workersKeyValue } from "../../../lib/storage/kv-workers.js";
import { workspaceRecord } from "../../support/workspace-record.js";

const SECRET = "a-test-secret-of-some-length";
const driver = r2Driver(env.FILES);
const fetchFn = ((input: RequestInfo | URL, init?: RequestInit) => handleSync(new Request(input, init), { driver, kv: workersKeyValue(env.KV), secret: SECRET })) as typeof fetch;
const access = async (t: string, w: string, r: string) => ({ url: "https://api.example", token: await mintSyncToken(SECRET, { t, w, r }, 600), fetch: fetchFn });
const tid = () => `t-${randomId(8)}`;

/** An executor that hands nothing over: the test plays the runner through the sync routes. */
const idle: Executor = { run: async () => ({}) as RunResult, start: async () => {} };
const request = (tenant: string, key: string): RunRequest => ({ version: 1, idempotency_key: key, tenant, workspace: "main", command: "true", timeout_ms: 60_000, sync: { url: "https://api.example", token: "" } });
const fakeResult = (over: Partial<RunResult>): RunResult => ({
  run_id: "r0", stdout: "", stderr: "", output: "", exit_code: 0, duration_ms: 1, timed_out: false, killed: false, truncated: false,
  files_changed: [], files_created: [], files_deleted: [], conflicts: [], skipped: [], discarded: [],
  sync: { cache: "cold", manifest_files: 0, downloaded_files: 0, downloaded_bytes: 0, uploaded_files: 0, uploaded_bytes: 0, deleted_files: 0, sync_in_ms: 0, sync_out_ms: 0 },
  ...over,
});

describe("run record sync routes", () => {
  it("a claim rides on the manifest request: taken once, the same attempt told claimed again, another attempt (a retried invocation) finds it taken", async () => {
    const t = tid();
    await workspaceRecord(driver, t, "main");
    const sync = httpSyncClient(await access(t, "main", "k1"));
    const records = httpRunRecords(await access(t, "main", "k1"));
    const first = await sync.manifestWithClaim({ buckets: 1 }, { task: false, attempt: "attempt-one" });
    expect(first?.claim).toEqual({ claimed: true, kill: false });
    expect(first?.answer).toMatchObject({ count: 0, buckets: 1, files: [] });
    // The same attempt again (its answer lost, or its claim sent alone after the carrying request failed): still its own.
    expect(await records.claim({ task: false, attempt: "attempt-one" })).toEqual({ claimed: true, kill: false });
    expect((await sync.manifestWithClaim({ buckets: 1 }, { task: false, attempt: "attempt-one" }))?.claim).toEqual({ claimed: true, kill: false });
    // Another attempt, carried or alone, and a claim without an attempt (an older runner): taken, nothing to run.
    expect((await sync.manifestWithClaim({ buckets: 1 }, { task: false, attempt: "attempt-two" }))?.claim).toMatchObject({ claimed: false, claim: { run_id: await runIdFor(t, "main", "k1") }, result: null });
    expect(await records.claim({ task: false })).toMatchObject({ claimed: false, result: null });
    // Once the result is stored, even the attempt that claimed is not told claimed again (it would run twice).
    await records.finish({ ok: true, result: { n: 1 } });
    expect(await records.claim({ task: false, attempt: "attempt-one" })).toMatchObject({ claimed: false, result: { ok: true, result: { n: 1 } } });
    // A manifest request without a claim answers no claim (an older runner claims alone); a bad attempt is refused.
    expect(await sync.manifestWithClaim({ buckets: 1 }, { task: false, attempt: "x" }).catch((e: Error) => e.message)).toMatch(/attempt/);
    const plain = await fetchFn("https://api.example/v1/sync/manifest", { method: "POST", headers: { authorization: `Bearer ${(await access(t, "main", "k1")).token}` }, body: JSON.stringify({ buckets: 1 }) });
    expect(await plain.json()).not.toHaveProperty("claim");
  });

  it("a token reaches its own run's record only; claims and results are created once; the files never show it", async () => {
    const t = tid();
    const a = httpRunRecords(await access(t, "main", "k1"));
    expect(await a.claim({ task: false })).toEqual({ claimed: true, kill: false });
    const again = await a.claim({ task: true });
    expect(again).toMatchObject({ claimed: false, claim: { run_id: await runIdFor(t, "main", "k1"), task: false }, result: null });
    // Another run of the same workspace, and the same key in another workspace, are other records.
    const b = httpRunRecords(await access(t, "main", "k2"));
    expect(await b.state()).toEqual({ claim: null, result: null });
    expect((await b.claim({ task: false })).claimed).toBe(true);
    expect(await httpRunRecords(await access(t, "other", "k1")).state()).toEqual({ claim: null, result: null });

    await a.finish({ ok: true, result: { n: 1 } });
    await a.finish({ ok: true, result: { n: 2 } });
    await a.release(); // finished: the claim stays
    expect(await a.state()).toMatchObject({ claim: { task: false }, result: { ok: true, result: { n: 1 } } });

    const keys = (await driver.list({ prefix: `t/${t}/` })).objects.map((o) => o.key);
    const runs = [await runIdFor(t, "main", "k1"), await runIdFor(t, "main", "k2")].map((id) => runPrefix(t, "main", id));
    expect(keys.every((k) => runs.some((p) => k.startsWith(p)))).toBe(true);
    expect(keys.every((k) => k.startsWith(internalPrefix(t, "main")))).toBe(true);
    // The run routes need no workspace record; the files' routes do (a deleted workspace is NOT_FOUND there).
    await expect(httpSyncClient(await access(t, "main", "k1")).manifest()).rejects.toMatchObject({ code: "NOT_FOUND", details: { status: 404 } });
    await workspaceRecord(driver, t, "main");
    expect(await httpSyncClient(await access(t, "main", "k1")).manifest()).toEqual([]);
  });

  it("refuses a token that names no run, a bad one, and an unknown route", async () => {
    const t = tid();
    await expect(httpRunRecords(await access(t, "main", "")).state()).rejects.toThrow(/401/);
    await expect(httpRunRecords({ url: "https://api.example", token: "x.y", fetch: fetchFn }).claim({ task: false })).rejects.toThrow(/401/);
    const res = await fetchFn("https://api.example/v1/sync/run/../../files/x", { headers: { authorization: `Bearer ${(await access(t, "main", "k")).token}` } });
    expect(res.status).toBe(404);
    const bad = await fetchFn("https://api.example/v1/sync/run/nope", { headers: { authorization: `Bearer ${(await access(t, "main", "k")).token}` } });
    expect(bad.status).toBe(404);
  });
});

describe("background tasks in storage: start, poll, kill", () => {
  it("output chunks are handed out once, in order; many are cut to head and tail", async () => {
    const t = tid();
    const { task_id } = await startTask(driver, idle, request(t, "out"));
    const ref = { tenant: t, workspace: "main", task_id };
    expect(await pollTask(driver, ref)).toMatchObject({ task_id, status: "running", output: "", exit_code: null });
    const runner = httpRunRecords(await access(t, "main", "out"));
    expect((await runner.claim({ task: true })).claimed).toBe(true);
    await runner.output(1, "one\n");
    await runner.output(1, "repeated\n"); // a retried upload
    await runner.output(2, "two\n");
    expect((await pollTask(driver, ref)).output).toBe("one\ntwo\n");
    expect((await pollTask(driver, ref)).output).toBe("");
    const line = "x".repeat(999) + "\n";
    for (let i = 3; i < 300; i++) await runner.output(i, i === 3 ? "FIRST" + line.slice(5) : i === 299 ? line.slice(4) + "LAST" : line);
    const cut = (await pollTask(driver, ref)).output;
    expect(cut.startsWith("FIRST")).toBe(true);
    expect(cut.endsWith("LAST")).toBe(true);
    expect(cut).toMatch(/\[\d+ bytes of output omitted\]/);
    expect(cut.length).toBeLessThan(110_000);
    await runner.finish({ ok: true, result: fakeResult({ output: "done", exit_code: 3 }) });
    expect(await pollTask(driver, ref)).toMatchObject({ status: "completed", exit_code: 3, output: "" });
    expect(await killTask(driver, ref)).toEqual({ status: "already_completed" });
  });

  it("kill sets the flag the runner sees; the task's answer decides the status", async () => {
    const t = tid();
    await workspaceRecord(driver, t, "main"); // the kill check also asks whether the workspace is still there (lib/sync/runs.ts killAsked)
    const { task_id } = await startTask(driver, idle, request(t, "kill"));
    const ref = { tenant: t, workspace: "main", task_id };
    const runner = httpRunRecords(await access(t, "main", "kill"));
    expect((await runner.claim({ task: true })).claimed).toBe(true);
    expect(await runner.killRequested()).toBe(false);
    expect(await killTask(driver, ref, { wait_ms: 100 })).toEqual({ status: "stopping" });
    expect(await runner.killRequested()).toBe(true);
    expect(await runner.output(1, "bye\n")).toEqual({ kill: true });
    const killing = killTask(driver, ref, { wait_ms: 5000 });
    await runner.finish({ ok: true, result: fakeResult({ killed: true, exit_code: null }) });
    expect(await killing).toEqual({ status: "killed" });
    expect(await pollTask(driver, ref)).toMatchObject({ status: "killed", output: "bye\n" });
    // A kill that reaches a runner that failed: killed too, with the error.
    const other = await startTask(driver, idle, request(t, "kill2"));
    const r2 = httpRunRecords(await access(t, "main", "kill2"));
    await r2.claim({ task: true });
    await killTask(driver, { ...ref, task_id: other.task_id }, { wait_ms: 0 });
    await r2.finish({ ok: false, error: { code: "UNAVAILABLE", message: "sync down" } });
    expect(await pollTask(driver, { ...ref, task_id: other.task_id })).toMatchObject({ status: "killed", error: { code: "UNAVAILABLE" } });
  });

  it("a foreground run can be followed but not killed; a task past its deadline without an answer is reported lost", async () => {
    const t = tid();
    const fg = httpRunRecords(await access(t, "main", "fg"));
    await fg.claim({ task: false });
    const ref = { tenant: t, workspace: "main", task_id: await runIdFor(t, "main", "fg") };
    expect((await pollTask(driver, ref)).status).toBe("running");
    await expect(killTask(driver, ref)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await fg.finish({ ok: true, result: fakeResult({ output: "all of it\n" }) });
    expect(await pollTask(driver, ref)).toMatchObject({ status: "completed", output: "all of it\n" });

    const lostId = await runIdFor(t, "main", "lost");
    await driver.put(`${runPrefix(t, "main", lostId)}task.json`, JSON.stringify({ task_id: lostId, created_at: 0, deadline: Date.now() - 1 }));
    const lost = await pollTask(driver, { ...ref, task_id: lostId }, { wait_ms: 5000 });
    expect(lost).toMatchObject({ status: "timed_out", error: { code: "INTERNAL" } });
    expect(lost.error!.message).toContain("stopped without reporting");
    expect(await killTask(driver, { ...ref, task_id: lostId })).toEqual({ status: "already_completed" });
  });

  it("a failed hand-over leaves no task behind", async () => {
    const t = tid();
    const failing: Executor = { ...idle, start: async () => { throw new Error("invoke failed"); } };
    await expect(startTask(driver, failing, request(t, "fail"))).rejects.toThrow("invoke failed");
    await expect(pollTask(driver, { tenant: t, workspace: "main", task_id: await runIdFor(t, "main", "fail") })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});

describe("run record housekeeping", () => {
  it(`at most ${MAX_RUNNING_TASKS} tasks run at once in a workspace; a finished one frees its place; other workspaces are not counted`, async () => {
    const t = tid();
    for (let i = 0; i < MAX_RUNNING_TASKS; i++) await startTask(driver, idle, request(t, `cap${i}`));
    const refused = await startTask(driver, idle, request(t, "cap-over")).catch((e) => e);
    expect(refused).toMatchObject({ code: "RATE_LIMITED", details: { running: MAX_RUNNING_TASKS, max: MAX_RUNNING_TASKS } });
    expect(refused.message).toContain("kill_shell");
    // Refused before anything was written: no record, nothing to poll.
    await expect(pollTask(driver, { tenant: t, workspace: "main", task_id: await runIdFor(t, "main", "cap-over") })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await startTask(driver, idle, { ...request(t, "cap-other"), workspace: "other" });
    const first = httpRunRecords(await access(t, "main", "cap0"));
    await first.claim({ task: true });
    await first.finish({ ok: true, result: fakeResult({}) });
    expect((await startTask(driver, idle, request(t, "cap-over"))).task_id).toBe(await runIdFor(t, "main", "cap-over"));
  });

  it("deletes records a day after their run ended, keeps the running and the recent ones", async () => {
    const t = tid();
    const done = await startTask(driver, idle, request(t, "old-done"));
    const runner = httpRunRecords(await access(t, "main", "old-done"));
    await runner.claim({ task: true });
    await runner.output(1, "x\n");
    await runner.finish({ ok: true, result: fakeResult({}) });
    const running = await startTask(driver, idle, request(t, "old-running"));
    const fg = httpRunRecords(await access(t, "main", "old-fg")); // a foreground leftover (e.g. answered CONFLICT)
    await fg.claim({ task: false });
    const keys = async () => (await driver.list({ prefix: `${internalPrefix(t, "main")}runs/` })).objects.map((o) => o.key);
    const all = await keys();

    expect(await housekeepRuns(driver, t, "main")).toEqual({ running: 1, deleted: 0, next: null });
    expect(await keys()).toEqual(all);
    // A day after the finished run: it goes (task, claim, an unread chunk, result). The task
    // without an answer no longer counts as running (past the longest life a task has), but
    // keeps its record for a day after that, like the foreground leftover.
    expect(await housekeepRuns(driver, t, "main", Date.now() + RECORD_KEEP_MS + 60_000)).toEqual({ running: 0, deleted: 4, next: null });
    expect((await keys()).some((k) => k.includes(done.task_id))).toBe(false);
    await expect(pollTask(driver, { tenant: t, workspace: "main", task_id: done.task_id })).rejects.toMatchObject({ code: "NOT_FOUND" });
    // Long after: the dead task and the leftover go too; another workspace's records are untouched.
    await startTask(driver, idle, { ...request(t, "elsewhere"), workspace: "other" });
    expect(await housekeepRuns(driver, t, "main", Date.now() + 2 * RECORD_KEEP_MS)).toMatchObject({ running: 0 });
    expect(await keys()).toEqual([]);
    expect((await driver.list({ prefix: `${internalPrefix(t, "other")}runs/` })).objects.length).toBe(1);
    expect(running.task_id).toMatch(/^r[0-9a-f]{15}$/);
  });
});

describe("foreground run records", () => {
  /** An executor that plays the runner: claims the run and stores its result through the sync routes, then answers. */
  const answering: Executor = {
    async run(req) {
      const rec = httpRunRecords(await access(req.tenant, req.workspace, req.idempotency_key));
      await rec.claim({ task: false });
      const result = fakeResult({ stdout: "fg\n" });
      await rec.finish({ ok: true, result });
      return result;
    },
    start: async () => {},
  };
  const keys = async (t: string) => (await driver.list({ prefix: `${internalPrefix(t, "main")}runs/` })).objects.map((o) => o.key);

  it("the record is deleted before the answer without waitUntil, after it with waitUntil", async () => {
    const t = tid();
    expect((await runForeground(driver, answering, request(t, "fg-1"))).stdout).toBe("fg\n");
    expect(await keys(t)).toEqual([]);

    const later: Promise<unknown>[] = [];
    expect((await runForeground(driver, answering, request(t, "fg-2"), (p) => later.push(p))).stdout).toBe("fg\n");
    expect(later).toHaveLength(1); // handed to the runtime: the answer did not wait for it
    await Promise.all(later);
    expect(await keys(t)).toEqual([]);
  });
});

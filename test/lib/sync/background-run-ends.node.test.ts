/**
 * Every end of a background run makes exactly one usage record (route "background run", its sandbox
 * time): it ran to its end, kill_shell stopped it, its timeout stopped it, or its workspace was deleted
 * under it (docs/usage.md), that last one also when the answer to its result PUT is lost and the runner
 * sends it again. The real app (memory storage) with the real sandbox (local executor, bubblewrap); the
 * records counted a while after each end, or after the result PUT sent again, so a second one would be seen.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { UsageRecord } from "../../../lib/run/metering/record.js";
import { runPrefix, workspacePrefix } from "../../../lib/layout/paths.js";
import { keysOf } from "../../../lib/sync/run-records.js";
import { fromBase64Url } from "../../../lib/shared/text.js";
import { sandboxApp, type Tenant } from "../doors/sandbox-app.js";
import { hostPids, until } from "../../infra/container/live-helpers.js";

/** The answers of result PUTs (PUT /v1/sync/run/result) of workspace "lossy": the first is dropped after the app answered it, as a network fault would. */
const lossyAnswers: number[] = [];
/** The runner's fetch: a result PUT of "lossy" reaches the app; its first answer never reaches the runner, which sends it again. */
const dropFirstLossyAnswer = (f: typeof fetch): typeof fetch => (async (u: string, init?: RequestInit) => {
  const res = await f(u, init);
  const auth = new Headers(init?.headers).get("authorization") ?? "";
  if (init?.method !== "PUT" || !u.endsWith("/v1/sync/run/result") || JSON.parse(fromBase64Url(auth.slice("Bearer ".length).split(".")[0]!)).w !== "lossy") return res;
  lossyAnswers.push(res.status);
  if (lossyAnswers.length === 1) throw new TypeError("fetch failed (the answer was lost)");
  return res;
}) as typeof fetch;
const { usage, post, tenant, close, storage } = sandboxApp({}, dropFirstLossyAnswer);
let t: Tenant;
beforeAll(async () => {
  t = await tenant("bgends", ["main", "doomed", "lossy"]);
});
afterAll(close);

const runsOf = (ws: string): UsageRecord[] => usage.filter((u) => u.route === "background run" && u.workspace === ws);
const bash = (ws: string, args: Record<string, unknown>) => post(`/v1/workspaces/${ws}/tools/bash`, args, t.key);

/** Waits for the run's record, then a little longer: one record, never two. */
async function theOneRecord(ws: string, before: number): Promise<UsageRecord> {
  await until(() => runsOf(ws).length > before, "the background run's usage record", 30_000);
  await new Promise((r) => setTimeout(r, 2500)); // a repeated result (the runner retries a refused PUT) would land by now
  const fresh = runsOf(ws).slice(before);
  expect(fresh).toHaveLength(1);
  return fresh[0]!;
}

it("a background run that ends on its own, one killed by kill_shell and one stopped by its timeout each make one record with their sandbox time", async () => {
  const done = await bash("main", { command: "sleep 0.5; echo ok", run_in_background: true });
  expect(done.status, JSON.stringify(done.body)).toBe(200);
  expect(await theOneRecord("main", 0)).toMatchObject({ ok: true, key: t.keyId });

  const killed = await bash("main", { command: "sleep 7654331", run_in_background: true });
  await until(() => hostPids("sleep 7654331").length > 0, "the task running");
  await new Promise((r) => setTimeout(r, 1000));
  const kill = await post("/v1/workspaces/main/tools/kill_shell", { task_id: killed.body.data.task_id }, t.key);
  expect(kill.status, JSON.stringify(kill.body)).toBe(200);
  const k = await theOneRecord("main", 1);
  expect(k).toMatchObject({ ok: false, code: "CANCELLED", key: t.keyId });
  expect(k.sandbox_ms).toBeGreaterThanOrEqual(1000);

  const slow = await bash("main", { command: "sleep 7654332", run_in_background: true, timeout: 2 });
  expect(slow.status, JSON.stringify(slow.body)).toBe(200);
  const o = await theOneRecord("main", 2);
  expect(o).toMatchObject({ ok: false, code: "TIMEOUT" });
  expect(o.sandbox_ms).toBeGreaterThanOrEqual(2000);
}, 120_000);

it("a background run whose workspace is deleted under it makes one record with its sandbox time, and nothing of it but its billed mark is kept in the gone workspace", async () => {
  const started = await bash("doomed", { command: "sleep 7654333", run_in_background: true });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  await until(() => hostPids("sleep 7654333").length > 0, "the task running");
  await new Promise((r) => setTimeout(r, 1500));
  expect((await post("/v1/workspaces/doomed", undefined, t.key, "DELETE")).status).toBe(200);
  const r = await theOneRecord("doomed", 0);
  expect(r).toMatchObject({ ok: false, code: "CANCELLED", key: t.keyId, workspace: "doomed" });
  expect(r.sandbox_ms).toBeGreaterThanOrEqual(1500);
  expect(hostPids("sleep 7654333")).toEqual([]);
  // Nothing of the run is kept but its billed mark (create-only: its one billing), a leftover GC's tick collects.
  const task = keysOf(runPrefix(t.id, "doomed", started.body.data.task_id));
  expect((await storage.list({ prefix: workspacePrefix(t.id, "doomed") })).objects.map((o) => o.key)).toEqual([task.billed]);
}, 120_000);

it("a background run ended by its workspace's delete whose result PUT's 204 was lost, and sent again, is billed once", async () => {
  const started = await bash("lossy", { command: "sleep 7654334", run_in_background: true });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  await until(() => hostPids("sleep 7654334").length > 0, "the task running");
  expect((await post("/v1/workspaces/lossy", undefined, t.key, "DELETE")).status).toBe(200);
  // The runner's first result PUT was answered 204 and the answer dropped; it sent the result again (its retry, 0.5 s later), answered too.
  await until(() => lossyAnswers.length >= 2, "the result PUT sent again", 30_000);
  expect(lossyAnswers).toEqual([204, 204]);
  expect(hostPids("sleep 7654334")).toEqual([]);
  expect(runsOf("lossy")).toEqual([expect.objectContaining({ ok: false, code: "CANCELLED", key: t.keyId, workspace: "lossy" })]);
}, 120_000);

/**
 * Every end of a background run makes exactly one usage record (route "background run", its sandbox
 * time): it ran to its end, kill_shell stopped it, its timeout stopped it, or its workspace was deleted
 * under it (docs/usage.md). The real app (memory storage) with the real sandbox (local executor,
 * bubblewrap); the records counted a while after each end, so a second one would be seen.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { UsageRecord } from "../../../lib/run/metering/record.js";
import { workspacePrefix } from "../../../lib/layout/paths.js";
import { sandboxApp, type Tenant } from "../doors/sandbox-app.js";
import { hostPids, until } from "../../infra/container/live-helpers.js";

const { usage, post, tenant, close, storage } = sandboxApp();
let t: Tenant;
beforeAll(async () => {
  t = await tenant("bgends", ["main", "doomed"]);
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

it("a background run whose workspace is deleted under it makes one record with its sandbox time, and nothing is kept in the gone workspace", async () => {
  const started = await bash("doomed", { command: "sleep 7654333", run_in_background: true });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  await until(() => hostPids("sleep 7654333").length > 0, "the task running");
  await new Promise((r) => setTimeout(r, 1500));
  expect((await post("/v1/workspaces/doomed", undefined, t.key, "DELETE")).status).toBe(200);
  const r = await theOneRecord("doomed", 0);
  expect(r).toMatchObject({ ok: false, code: "CANCELLED", key: t.keyId, workspace: "doomed" });
  expect(r.sandbox_ms).toBeGreaterThanOrEqual(1500);
  expect(hostPids("sleep 7654333")).toEqual([]);
  expect((await storage.list({ prefix: workspacePrefix(t.id, "doomed") })).objects.map((o) => o.key)).toEqual([]);
}, 120_000);

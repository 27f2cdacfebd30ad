/**
 * DELETE /v1/workspaces/{ws} ends what runs in the workspace at once (docs/live-sessions.md, "Limits
 * and cost"; docs/storage.md, "What deletion keeps"): its live sandboxes (reason workspace_deleted,
 * their concurrent_runs slots released, their usage recorded, no audit entry written into the gone
 * workspace, no loss told to a later call) and its background tasks (their processes killed, their
 * background_tasks places freed). The real app (memory storage, the in-memory coordinator with the
 * production timings: a runner's poll is held 20 s) and the real runner in bubblewrap.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { memoryLiveCoordinator } from "../../../../lib/exec/live/memory.js";
import { LIVE_TIMINGS } from "../../../../lib/exec/live/service.js";
import { memoryLimits } from "../../../../lib/limits/store.js";
import { runPrefix, workspacePrefix } from "../../../../lib/layout/paths.js";
import { keysOf } from "../../../../lib/sync/run-records.js";
import { memoryDriver } from "../../../../lib/storage/drivers/memory.js";
import type { StorageDriver } from "../../../../lib/storage/types.js";
import { sandboxApp, type Tenant } from "../../doors/sandbox-app.js";
import { hostPids, until } from "../../../infra/container/live-helpers.js";

const limits = memoryLimits();
const coordinator = memoryLiveCoordinator(LIVE_TIMINGS);
/** Every key written once the delete began: none may be the gone workspace's (an audit entry there would be a leftover). */
const writtenSince: string[] = [];
let deleting = false;
const inner = memoryDriver();
const storage: StorageDriver = { ...inner, put: (key, ...rest) => (deleting && writtenSince.push(key), inner.put(key, ...rest)) };
const { app, usage, post, tenant, close } = sandboxApp({ liveCoordinator: coordinator, limits, storage });
let t: Tenant;

async function tool(ws: string, name: string, args: unknown, session = "s1") {
  const r = await app.request(`/v1/workspaces/${ws}/tools/${name}`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": session }, body: JSON.stringify(args) });
  return { status: r.status, body: (await r.json()) as any };
}

/** Distinct command lines: the host sees the sandbox's processes by them. */
const LIVE_SLEEPER = "sleep 7654321";
const TASK_SLEEPER = "sleep 7654322";

beforeAll(async () => {
  t = await tenant("wsdel", ["gone", "other"]);
  await limits.set(t.id, { concurrent_runs: 1, background_tasks: 1 });
});
afterAll(async () => {
  for (const ws of ["gone", "other"]) await coordinator.end({ tenant: t.id, workspace: ws, session: "s1" }, "ended").catch(() => {});
  await close();
});

it("a workspace's delete ends its live sandbox and its background task at once: processes dead, slot and place free, usage kept, nothing written into it after", async () => {
  const live = await tool("gone", "bash", { command: `${LIVE_SLEEPER} >/dev/null 2>&1 & echo up`, keep_alive: true });
  expect(live.status, JSON.stringify(live.body)).toBe(200);
  expect(live.body.output).toContain("[live sandbox started");
  const bg = await tool("gone", "bash", { command: `${TASK_SLEEPER}; echo never`, run_in_background: true });
  expect(bg.status, JSON.stringify(bg.body)).toBe(200);
  await until(() => hostPids(LIVE_SLEEPER).length > 0 && hostPids(TASK_SLEEPER).length > 0, "both sleepers running");
  // The slot and the place are held: nothing more runs beside them.
  expect((await tool("other", "bash", { command: "true", keep_alive: true })).body.error).toMatchObject({ code: "RATE_LIMITED", details: { limit: "concurrent_runs" } });

  deleting = true;
  const del = await post("/v1/workspaces/gone", undefined, t.key, "DELETE");
  expect(del.status, JSON.stringify(del.body)).toBe(200);

  // At once (the runner's held poll would have seen the delete only at its end, 20 s on): the slot and the place are free.
  const next = await tool("other", "bash", { command: "echo next", keep_alive: true });
  expect(next.status, JSON.stringify(next.body)).toBe(200);
  expect(next.body.output).toContain("next");
  const task = await tool("other", "bash", { command: "echo bg", run_in_background: true });
  expect(task.status, JSON.stringify(task.body)).toBe(200);

  await until(() => hostPids(LIVE_SLEEPER).length === 0 && hostPids(TASK_SLEEPER).length === 0, "both sleepers killed", 10_000);
  expect((await coordinator.status({ tenant: t.id, workspace: "gone", session: "s1" })).sandbox).toBeNull();
  const view = await app.request(`/v1/workspaces/gone/sessions/s1/sandbox`, { headers: { authorization: `Bearer ${t.key}` } });
  expect(view.status).toBe(404);

  // Its usage goes to the tenant's records; nothing is written into the gone workspace (no audit entry, no marker left) but the
  // background task's billed mark (create-only: its end billed once however often its runner sends its result; a leftover GC's tick collects).
  const record = await until(() => usage.find((u) => u.route === "live sandbox" && u.workspace === "gone"), "the live sandbox's usage record");
  expect(record.sandbox_ms).toBeGreaterThan(0);
  await new Promise((r) => setTimeout(r, 1000)); // the runner's last word (its end, its refused write-back) has landed
  const billed = keysOf(runPrefix(t.id, "gone", bg.body.data.task_id)).billed;
  expect((await storage.list({ prefix: workspacePrefix(t.id, "gone") })).objects.map((o) => o.key)).toEqual([billed]);
  expect(writtenSince.filter((k) => k.startsWith(workspacePrefix(t.id, "gone")))).toEqual([billed]);

  // bash_output on the task: the workspace is gone, and the answer says so.
  const out = await tool("gone", "bash_output", { task_id: bg.body.data.task_id });
  expect(out.body.error).toMatchObject({ code: "NOT_FOUND", details: { workspace: "gone" } });
  expect(out.body.error.message).toMatch(/^Workspace not found: gone\./);

  // A workspace made again under the id: the session's first call is told of no loss (it was not this workspace's).
  expect((await post("/v1/workspaces", { id: "gone" }, t.key)).status).toBe(201);
  expect((await app.request("/v1/workspaces/other/sessions/s1/sandbox", { method: "DELETE", headers: { authorization: `Bearer ${t.key}` } })).status).toBe(200); // its slot, for the call below
  const again = await tool("gone", "bash", { command: "echo again", keep_alive: true });
  expect(again.status, JSON.stringify(again.body)).toBe(200);
  expect(again.body.output).not.toMatch(/live sandbox (lost|ended)/);
}, 120_000);

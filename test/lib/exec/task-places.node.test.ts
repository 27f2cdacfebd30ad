/** background_tasks per tenant: a leased place per task; finished tasks' places are found and freed when the limit is reached. */
import { describe, expect, it } from "vitest";
import { startTask } from "../../../lib/exec/tasks.js";
import { taskLeaseMs } from "../../../lib/exec/task-places.js";
import type { Executor, RunRequest } from "../../../lib/exec/types.js";
import { memoryLimits } from "../../../lib/limits/store.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { keysOf, runIdFor } from "../../../lib/sync/run-records.js";
import { runPrefix } from "../../../lib/layout/paths.js";

const idle: Executor = { run: async () => { throw new Error("not here"); }, start: async () => {} };
const req = (workspace: string, key: string): RunRequest => ({ version: 1, idempotency_key: key, tenant: "acme", workspace, command: "sleep 60", timeout_ms: 60_000, sync: { url: "http://x", token: "t" } });

describe("background_tasks", () => {
  it("the task past the tenant's limit (across workspaces) is RATE_LIMITED naming it, before its marker is written; a task that ended frees its place; a crashed one when its lease ends", async () => {
    let now = 1_000_000;
    const limits = memoryLimits(() => now);
    await limits.set("acme", { background_tasks: 2 });
    const storage = memoryDriver();
    const places = { limits, caller: { key_id: "k" } };
    const first = await startTask(storage, idle, req("w1", "one"), undefined, places);
    await startTask(storage, idle, req("w2", "two"), undefined, places);
    const refused = await startTask(storage, idle, req("w3", "three"), undefined, places).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "RATE_LIMITED", details: { limit: "background_tasks", running: 2, quota: 2 } });
    expect((refused as Error).message).toContain("kill_shell");
    const third = await runIdFor("acme", "w3", "three");
    expect(await storage.head(keysOf(runPrefix("acme", "w3", third)).task)).toBeNull(); // nothing of it written
    // The first task ends (its result is in its record): its place is free for the next start.
    await storage.put(keysOf(runPrefix("acme", "w1", first.task_id)).result, JSON.stringify({ ok: true, result: { exit_code: 0 } }));
    await startTask(storage, idle, req("w3", "three"), undefined, places);
    await expect(startTask(storage, idle, req("w4", "four"), undefined, places)).rejects.toMatchObject({ code: "RATE_LIMITED" });
    // Crashed runners never report: their places end with their leases.
    now += taskLeaseMs(60_000);
    await startTask(storage, idle, req("w4", "four"), undefined, places);
  });

  it("a task whose start failed gives its place back; a retried start (same key) keeps its one place", async () => {
    const limits = memoryLimits();
    await limits.set("acme", { background_tasks: 1 });
    const storage = memoryDriver();
    const places = { limits, caller: { key_id: "k" } };
    const failing: Executor = { ...idle, start: async () => { throw new Error("invoke failed"); } };
    await expect(startTask(storage, failing, req("w", "x"), undefined, places)).rejects.toThrow("invoke failed");
    await startTask(storage, idle, req("w", "y"), undefined, places);
    expect((await limits.acquireTask("acme", { key_id: "k" }, "w/" + (await runIdFor("acme", "w", "y")), 1000)).ok).toBe(true);
  });
});

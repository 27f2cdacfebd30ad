/**
 * background_tasks per tenant: a place in the tenant's limits object (lib/limits/usage.ts) for
 * each background task, leased for the task's whole life (its timeout + the margin its runner has
 * to report), so a task whose runner crashed frees its place when the lease ends, never later.
 * Nobody has to release a finished task's place: when the limit is reached, the places held are
 * checked against the tasks' results in storage (one HEAD each, on that path only) and the
 * finished ones released before the object decides again. Over the limit: 429 RATE_LIMITED naming
 * background_tasks (the same code as the per-workspace cap and concurrent_runs: it is about what
 * runs now, and waiting frees it).
 */
import { ToolError } from "../shared/errors.js";
import { runPrefix } from "../layout/paths.js";
import type { StorageDriver } from "../storage/types.js";
import type { Caller, LimitsStore } from "../limits/store.js";
import { keysOf, RUN_MARGIN_MS } from "../sync/run-records.js";

/** How long a task's place is leased: its timeout, the margin its runner has to report, and a minute. */
export const taskLeaseMs = (timeoutMs: number): number => timeoutMs + RUN_MARGIN_MS + 60_000;

/** A place's id: the task's workspace and run id (its record: t/<tenant>/w/<ws>/x/runs/<run>/). */
const placeId = (workspace: string, runId: string) => `${workspace}/${runId}`;

/**
 * Takes a place for task `runId` of `workspace`, or throws RATE_LIMITED. Returns its release (for
 * a task that then failed to start). Without a limits store, or when the object cannot be reached: no place, no limit.
 */
export async function takeTaskPlace(limits: LimitsStore | undefined, storage: StorageDriver, tenant: string, caller: Caller, workspace: string, runId: string, timeoutMs: number): Promise<() => Promise<void>> {
  if (!limits) return async () => {};
  const id = placeId(workspace, runId);
  const release = () => limits.releaseTasks(tenant, [id]).catch(() => {});
  try {
    let d = await limits.acquireTask(tenant, caller, id, taskLeaseMs(timeoutMs));
    if (!d.ok) {
      const done = await finishedAmong(storage, tenant, d.tasks);
      if (done.length) {
        await limits.releaseTasks(tenant, done);
        d = await limits.acquireTask(tenant, caller, id, taskLeaseMs(timeoutMs));
      }
    }
    if (d.ok) return release;
    throw new ToolError("RATE_LIMITED", `This tenant already runs ${d.running} background task${d.running === 1 ? "" : "s"} (background_tasks: ${d.limit}). Wait for one to finish (bash_output with wait: true), or stop one with kill_shell, then start this again; or run the command in the foreground.`, { limit: "background_tasks", running: d.running, quota: d.limit, retry_after: d.retry_after });
  } catch (e) {
    if (e instanceof ToolError) throw e;
    console.error("limits: the tenant's limits object did not answer; the task starts uncounted", e instanceof Error ? e.message : String(e));
    return async () => {};
  }
}

/** Frees the places of tasks `runIds` of `workspace` (its delete: they are told to stop, and will never report). Never throws. */
export async function releaseTaskPlaces(limits: LimitsStore | undefined, tenant: string, workspace: string, runIds: readonly string[]): Promise<void> {
  if (limits && runIds.length) await limits.releaseTasks(tenant, runIds.map((id) => placeId(workspace, id))).catch(() => {}); // missed: the leases end on their own
}

/** The places whose task has a result (it ended), among `ids`: one HEAD each, 8 at a time. */
async function finishedAmong(storage: StorageDriver, tenant: string, ids: readonly string[]): Promise<string[]> {
  const done: string[] = [];
  for (let i = 0; i < ids.length; i += 8) {
    await Promise.all(ids.slice(i, i + 8).map(async (id) => {
      const [ws, run] = id.split("/");
      try {
        if (await storage.head(keysOf(runPrefix(tenant, ws!, run!)).result)) done.push(id);
      } catch {
        // a malformed id cannot end: its lease will
      }
    }));
  }
  return done;
}

/**
 * concurrent_runs: an Executor that holds a slot of the tenant's limits object (lib/limits/)
 * while a foreground command runs. The slot is leased for the command's timeout plus its
 * write-back and margin, and released as soon as the run answers: an isolate that dies
 * mid-run frees its slot when the lease ends. Over the limit: RATE_LIMITED naming
 * concurrent_runs, before the runner is invoked.
 *
 * A streamed command (SSE, MCP progress) reaches the runner through start, and holds its slot the same
 * way while it is followed to its result (foreground: lib/exec/stream-run.ts). Background tasks (start
 * alone) are not counted here: they have background_tasks (lib/exec/task-places.ts).
 */
import { ToolError } from "../shared/errors.js";
import type { Caller, LimitsStore } from "../limits/store.js";
import type { Executor, RunRequest } from "./types.js";

/** How long a run's slot is leased: its timeout, the write-back after it (at least max(10 s, timeout / 4)), and a minute's margin. */
export const runLeaseMs = (req: RunRequest): number => req.timeout_ms + Math.max(10_000, req.timeout_ms / 4) + 60_000;

/** What a refused run is told to wait, at most (seconds). */
const RETRY_RUN_S = 5;

/**
 * The one answer past concurrent_runs, for a fresh run and for a live sandbox's start alike: the slots are
 * shared, and an idle live sandbox holds one for its life, so waiting alone may never free one.
 */
export function concurrentRunsRefused(d: { running: number; limit: number; retry_after: number; by?: "key" | "tenant" }): ToolError {
  // A run usually ends long before its lease: a few seconds is the better guess of when a slot is free.
  const retry = Math.min(d.retry_after, RETRY_RUN_S);
  const what = d.running === 1 ? "command or live sandbox" : "commands or live sandboxes";
  const who = d.by === "key" ? "This API key" : "This tenant";
  const limit = d.by === "key" ? `the key's own concurrent_runs: ${d.limit}` : `concurrent_runs: ${d.limit}`;
  return new ToolError("RATE_LIMITED", `${who} already runs ${d.running} ${what} at once (${limit}; a live sandbox holds one for its life, idle or not). Retry in ${retry} s, when one has finished, or end an idle live sandbox (DELETE /v1/workspaces/{ws}/sessions/{session}/sandbox).`, { limit: "concurrent_runs", running: d.running, quota: d.limit, retry_after: retry, ...(d.by ? { by: d.by } : {}) });
}

export function limitedExecutor(executor: Executor, limits: LimitsStore): Executor {
  /** `work` under a slot of the tenant's concurrent_runs (and of the caller's key's own), released once it ended. */
  async function holding<T>(req: RunRequest, work: () => Promise<T>, caller: Caller = { key_id: "" }): Promise<T> {
    let d;
    try {
      d = await limits.acquireRun(req.tenant, caller, runLeaseMs(req));
    } catch (e) {
      console.error("limits: the tenant's limits object did not answer; the run goes on uncounted", e instanceof Error ? e.message : String(e));
      return work();
    }
    if (!d.ok) throw concurrentRunsRefused(d);
    try {
      return await work();
    } finally {
      // Before the answer, not after it (#31 §4 weighed it): released later, the slot would still be held when
      // the agent's next command arrives, and on another isolate (nothing orders its acquireRun after this
      // release) a tenant running concurrent_runs commands with this one just ended would be refused.
      await limits.releaseRun(req.tenant, d.lease).catch(() => {}); // missed: the lease ends on its own
    }
  }
  return {
    run: (req, caller) => holding(req, () => executor.run(req), caller),
    start: (req) => executor.start(req),
    foreground: holding,
  };
}

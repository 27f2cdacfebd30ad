/**
 * The usage records of work that goes on after its call answered, each written once where the work
 * ends, whether or not anyone reads its result (docs/usage.md):
 * - a background run (bash or run_code with run_in_background), where its result is stored (the sync
 *   server's PUT /v1/sync/run/result, lib/sync/runs.ts); tenant, workspace and key are the sync token's;
 * - a background subagent (task with background: true), where its loop ends (lib/tools/task/background.ts,
 *   through the run path's SubCalls.workEnded: lib/run/run-tool.ts).
 */
import type { RunResult } from "../../exec/types.js";
import type { RunEnded } from "../../sync/server-deps.js";
import type { UsageRecord } from "./record.js";
import { netUsage } from "./usage.js";
import { runStorageBytes } from "../../exec/tool-support.js";

/** The usage record's route name of a background run's sandbox time. */
export const BACKGROUND_RUN_ROUTE = "background run";

/** How the run ended, as bash would have answered it: stopped by its timeout, a disk limit or a kill, or the runner's error. */
function endCode(end: RunEnded): string | undefined {
  if (!end.result.ok) return end.result.error.code;
  const run = end.result.result as Partial<RunResult>;
  if (run.timed_out) return "TIMEOUT";
  if (run.limit_exceeded?.disk_mb !== undefined) return "QUOTA_EXCEEDED";
  if (run.killed) return "CANCELLED";
  return undefined;
}

/**
 * The sandbox's wall time: the run's own `duration_ms` (what a foreground run's record carries, so a
 * command costs the same either way); a run that reported none (the runner's error) from its claim to
 * its result by the API's clock; 0 when neither is known.
 */
export function backgroundSandboxMs(end: RunEnded): number {
  const reported = end.result.ok ? (end.result.result as Partial<RunResult>).duration_ms : undefined;
  if (typeof reported === "number" && Number.isFinite(reported) && reported >= 0) return Math.round(reported);
  return end.started_at !== undefined ? Math.max(0, end.ended_at - end.started_at) : 0;
}

/** What the run's egress proxy carried, as its result reports it (absent for a run without network, or one that ended with the runner's error). */
function backgroundNet(end: RunEnded): { net_bytes_in?: number; net_bytes_out?: number } {
  if (!end.result.ok) return {};
  const run = end.result.result as Partial<RunResult>;
  const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.round(v) : 0);
  return netUsage({ netBytesIn: n(run.net_bytes_in), netBytesOut: n(run.net_bytes_out) });
}

/**
 * A background run's record: its sandbox time, and the workspace bytes its sandbox fetched and wrote back
 * (runStorageBytes, as a foreground run's call counts them). Before (2026-12-02) both were 0 here: the
 * write-back of a background task's files was billed to no call.
 */
export function backgroundRunUsage(end: RunEnded): UsageRecord {
  const code = endCode(end);
  const sandbox_ms = backgroundSandboxMs(end);
  const bytes = end.result.ok ? runStorageBytes(end.result.result as Partial<RunResult>) : { bytes_read: 0, bytes_written: 0 };
  return {
    tenant: end.tenant, workspace: end.workspace, ...(end.key_id ? { key: end.key_id } : {}), route: BACKGROUND_RUN_ROUTE,
    ok: code === undefined, ...(code ? { code } : {}), ms: sandbox_ms, ...bytes, sandbox_ms, ...backgroundNet(end),
  };
}

/** The usage record's route name of a background subagent's work. */
export const BACKGROUND_SUBAGENT_ROUTE = "background subagent";

/**
 * A background subagent's record: its wall time from its start to its end, and its model endpoint's
 * network bytes (its own tool calls are metered each, as calls).
 */
export function backgroundSubagentUsage(tenant: string, workspace: string, key: string, work: { ok: boolean; code?: string; ms: number; net?: { netBytesIn: number; netBytesOut: number } }): UsageRecord {
  return { tenant, workspace, ...(key ? { key } : {}), route: BACKGROUND_SUBAGENT_ROUTE, ok: work.ok, ...(!work.ok && work.code ? { code: work.code } : {}), ms: Math.max(0, Math.round(work.ms)), bytes_read: 0, bytes_written: 0, ...(work.net ? netUsage(work.net) : {}) };
}

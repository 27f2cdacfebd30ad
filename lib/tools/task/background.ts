/**
 * A subagent that runs on after its call answered (task with background: true): its record saved at
 * each step and at its end (task_output reads it), and its end told to the run path once, where it
 * ends (SubCalls.workEnded: metered as route "background subagent", its wall time), whether or not
 * anyone reads it. A subagent whose isolate ends before it does is never told of: its record stays
 * `running` until task_output calls it lost, and its work's time is not billed (its calls were, each).
 */
import { toToolError } from "../../contract/errors.js";
import { finishAfterAnswer } from "../../shared/after-answer.js";
import type { ToolContext } from "../../contract/tool.js";
import { runSubagent, type TaskToolDeps } from "./loop.js";
import type { ModelConfig } from "./model-config.js";
import { saveTask, taskStopRequested, type TaskRecord, type TaskScope } from "./records.js";

/** Starts the subagent detached from the call (under the call's waitUntil where there is one); never rejects. */
export function runInBackground(prompt: string, cfg: ModelConfig, ctx: ToolContext<TaskToolDeps>, rec: TaskRecord, s: TaskScope): Promise<void> {
  // The client's disconnect must not stop a background task, and nobody listens to its progress.
  const { signal: _drop, progress: _quiet, ...bgCtx } = ctx;
  const started = Date.parse(rec.created_at);
  // The model endpoint's bytes go to the subagent's own record, not to the call's (which may be billed before they come).
  const net = { netBytesIn: 0, netBytesOut: 0 };
  const run = runSubagent(prompt, cfg, bgCtx, rec, { onStep: (r) => saveTask(s, r), stopRequested: () => taskStopRequested(s, rec.task_id), meter: net })
    .catch((e): TaskRecord => ({ ...rec, status: "failed", error: { code: toToolError(e).code, message: toToolError(e).message } }))
    .then(async (end) => {
      ctx.subcalls?.workEnded({ ...workOutcome(end), ms: Date.now() - started, net });
      await saveTask(s, end);
    })
    .catch(() => {});
  // Started now, with or without waitUntil: it is the task's own work (its record already says running), not upkeep.
  finishAfterAnswer(ctx.waitUntil, "background subagent", run);
  return run;
}

/**
 * How a subagent's end is billed, as a killed background run is (lib/run/metering/detached-work.ts):
 * ok when it ended by itself (its answer, or its step limit), CANCELLED when a cancel stopped it,
 * the error's code when it failed.
 */
function workOutcome(end: TaskRecord): { ok: boolean; code?: string } {
  if (end.status === "cancelled") return { ok: false, code: "CANCELLED" };
  if (end.status === "failed") return { ok: false, code: end.error?.code ?? "INTERNAL" };
  return { ok: true };
}

/**
 * Moving a call task on from what its storage says: the sandbox run it follows (lib/exec/tasks.ts
 * pollTask: status and the output since the last poll), the subagent it follows (task with
 * background: lib/tools/task/records.ts) and the held call or question it waits on
 * (lib/tools/pending/store.ts). Any request of the task's key may advance it, in any isolate; the
 * record's conditional write keeps one outcome (store.ts changeCallTask). The call itself is metered
 * when it starts, as every call is (run-tool.ts), so no call goes unbilled; its detached work is
 * metered where the work ends, read or not (a sandbox run where its result is stored: route
 * "background run", lib/sync/runs.ts; a subagent where its loop ends: route "background subagent",
 * lib/tools/task/background.ts), so nothing here meters.
 */
import { isStartedInBackgroundLine, pollTask } from "../../exec/tasks.js";
import { commandData, commandOutput, runCallId, stoppedError } from "../../exec/tool-support.js";
import { writeBackNotes } from "../../exec/write-back-notes.js";
import type { RunResult, TaskPoll } from "../../exec/types.js";
import { ToolError } from "../../shared/errors.js";
import { loadTask, type TaskRecord } from "../../tools/task/records.js";
import { isTaskStartedLine, taskData, taskText } from "../../tools/task/view.js";
import type { RunDeps } from "../deps.js";
import { heldCallResult, nowOf, outcomeOrThrow } from "../../tools/pending/outcome.js";
import { isClosed, isExpired, loadPending, pendingScope, type PendingRecord } from "../../tools/pending/store.js";
import { toToolError } from "../../contract/errors.js";
import { changeCallTask, isTerminal, PARTIAL_OUTPUT_CHARS, type CallTaskOutcome, type CallTaskRecord, type CallTaskScope } from "./store.js";

/** A task's scope with the deps its work needs. */
export interface CallTaskDeps extends CallTaskScope {
  deps: RunDeps;
  background?: (p: Promise<unknown>) => void;
}

/** What a finished or failed outcome makes of a record: its status and a line for the client. */
export function settled(rec: CallTaskRecord, outcome: CallTaskOutcome): CallTaskRecord {
  const { pending_id: _p, ...rest } = rec;
  const status = outcome.ok ? "completed" : outcome.code === "CANCELLED" ? "cancelled" : "failed";
  return { ...rest, status, outcome, status_message: outcome.ok ? outcome.title : `${outcome.code}: ${outcome.message}`.slice(0, 500) };
}

/** An error thrown by the call, as an outcome. */
export function errorOutcome(e: unknown): CallTaskOutcome {
  const t = toToolError(e);
  return { ok: false, code: t.code, message: t.message, details: t.details };
}

/** What a call's result carries: the tool's outcome and, from runTool, what the starting request cost. */
export interface CallResult {
  title: string;
  output: string;
  data: Record<string, unknown>;
  call_id?: string;
  usage?: { ms: number; bytes_read: number; bytes_written: number };
}

/**
 * What work a call's result says goes on detached from the call: a sandbox run (bash or run_code
 * with run_in_background: lib/exec/tasks.ts), a subagent (task with background: lib/tools/task/), or none.
 */
function detachedWork(tool: string, data: Record<string, unknown>): "run" | "agent" | null {
  if (data.status !== "running" || typeof data.task_id !== "string") return null;
  return tool === "bash" || tool === "run_code" ? "run" : tool === "task" ? "agent" : null;
}

/**
 * What a call's result makes of its task: work started detached (bash or run_code in the background,
 * a background subagent: detachedWork) is followed; anything else is the task's outcome.
 */
export function afterResult(rec: CallTaskRecord, r: CallResult): CallTaskRecord {
  const work = detachedWork(rec.tool, r.data);
  if (work) {
    const { pending_id: _p, ...rest } = rec;
    const id = r.data.task_id as string;
    // What the start's output says before its start line, the run's result says first too: what the human decided about an
    // approved call; what was lost with the session's live sandbox, which a task's call without keep_alive looked for (lib/exec/live/run-joining.ts).
    const preface = r.output.split("\n").filter((l) => l && !isStartedInBackgroundLine(l) && !isTaskStartedLine(l)).join("\n");
    const follows = work === "run" ? { run_id: id, status_message: `Running in the sandbox: ${r.title}`.slice(0, 500) } : { agent_task_id: id, status_message: `Subagent working: ${r.title}`.slice(0, 500) };
    return { ...rest, status: "working", ...follows, ...(preface ? { preface } : {}) };
  }
  return settled(rec, { ok: true, title: r.title, output: r.output, data: r.data, ...(r.call_id ? { call_id: r.call_id } : {}) });
}

/** The last PARTIAL_OUTPUT_CHARS characters of the output so far and the new text. */
const tailOf = (before: string | undefined, more: string) => {
  const all = (before ?? "") + more;
  return all.length <= PARTIAL_OUTPUT_CHARS ? all : all.slice(all.length - PARTIAL_OUTPUT_CHARS);
};

/** A finished run as the call's outcome: what bash would have answered in the foreground. */
function runOutcome(rec: CallTaskRecord, p: TaskPoll): CallTaskOutcome {
  const run = p.result as RunResult | undefined;
  if (run) {
    const stopped = stoppedError(run, rec.run_timeout_s ?? 120);
    const told = (e: ToolError) => (rec.preface ? new ToolError(e.code, `${rec.preface}\n${e.message}`, e.details) : e);
    if (stopped) return errorOutcome(told(stopped));
    if (run.killed) return errorOutcome(told(new ToolError("CANCELLED", "The command was killed before it finished (the task was cancelled); its file changes were not written back. Call the tool again to run it.")));
    const out = (rec.preface ? `${rec.preface}\n` : "") + commandOutput(run).text + writeBackNotes(run);
    return { ok: true, title: rec.status_message?.replace(/^Running in the sandbox: /, "") ?? "bash", output: out, data: { ...commandData(run), ...runCallId(p.call_id, run) }, ...(runCallId(p.call_id, run).call_id ? { call_id: p.call_id! } : {}) };
  }
  const err = p.error ?? { code: "INTERNAL", message: "The run ended without a result." };
  return { ok: false, code: err.code, message: err.message, details: { output: rec.output ?? "" } };
}

/** Follows the task's run: new output into the record, and the outcome once the run ended (metered where its result was stored, not here). */
async function advanceRun(s: CallTaskDeps, rec: CallTaskRecord, etag: string): Promise<CallTaskRecord> {
  const p = await pollTask(s.deps.storage, { tenant: s.tenant, workspace: s.workspace, task_id: rec.run_id! });
  const ended = p.status !== "running";
  const { rec: next } = await changeCallTask(
    s,
    rec.id,
    (cur) => {
      if (isTerminal(cur.status)) return null; // another request ended it (its output went there too)
      const grown = p.output ? { output: tailOf(cur.output, p.output), progress: (cur.progress ?? 0) + 1 } : {};
      if (!ended) return p.output ? { ...cur, ...grown } : null;
      return settled({ ...cur, ...grown }, runOutcome(cur, p));
    },
    { rec, etag },
  );
  return next;
}

/** A subagent still running this long past its deadline was lost (as task_output says). */
const AGENT_LOST_AFTER_MS = 60_000;

/** A subagent's end as the call's outcome: what task would have answered in the foreground. */
function agentOutcome(rec: CallTaskRecord, t: TaskRecord): CallTaskOutcome {
  // Stopped by the task's cancel (run.ts cancelCallTask): what it did before stays, said with its step count.
  if (t.status === "cancelled") return { ok: false, code: "CANCELLED", message: `The task was cancelled. ${taskText(t)}`, details: { task_id: t.task_id, steps: t.steps, files_changed: t.files_changed, call_ids: t.call_ids } };
  if (t.status === "failed") return { ok: false, code: t.error?.code ?? "INTERNAL", message: (rec.preface ? `${rec.preface}\n` : "") + (t.error?.message ?? "The subagent failed."), details: { task_id: t.task_id, steps: t.steps, files_changed: t.files_changed, call_ids: t.call_ids } };
  return { ok: true, title: `task ${t.task_id}: ${t.status}`, output: (rec.preface ? `${rec.preface}\n` : "") + taskText(t), data: taskData(t) };
}

/** Follows the task's subagent: its outcome once it ended (or was lost past its deadline); metered where it ended, not here. */
async function advanceAgent(s: CallTaskDeps, rec: CallTaskRecord, etag: string): Promise<CallTaskRecord> {
  let t = await loadTask({ driver: s.deps.storage, tenant: s.tenant, workspace: s.workspace }, rec.agent_task_id!);
  const now = Date.now();
  if (t.status === "running" && now > Date.parse(t.deadline) + AGENT_LOST_AFTER_MS) {
    t = { ...t, status: "failed", error: { code: "UNAVAILABLE", message: "The subagent stopped without finishing (the process running it ended before its deadline). Run it again, in the foreground if it is short." } };
  }
  if (t.status === "running") {
    const msg = `Subagent working: step ${t.steps}${t.description ? ` (${t.description})` : ""}`.slice(0, 500);
    if (msg === rec.status_message) return rec;
    return (await changeCallTask(s, rec.id, (cur) => (isTerminal(cur.status) ? null : { ...cur, status_message: msg, progress: t.steps }), { rec, etag })).rec;
  }
  return (await changeCallTask(s, rec.id, (cur) => (isTerminal(cur.status) ? null : settled(cur, agentOutcome(cur, t))), { rec, etag })).rec;
}

/** The held call's outcome as the task's: an approval's (what the human decided, said first) or the question's answer; null while it waits. */
function heldOutcome(held: PendingRecord, ws: string, now: number): CallResult | CallTaskOutcome | null {
  const waiting = held.status === "pending" || held.status === "running";
  if (waiting && !isExpired(held, now)) return null;
  if (!isClosed(held) && held.status === "done" && !held.outcome) return null;
  try {
    if (held.kind === "input") return outcomeOrThrow(held, ws, now);
    const r = heldCallResult(held, ws, now);
    const data = r.data.result;
    const callId = typeof data.call_id === "string" ? data.call_id : undefined;
    return { title: r.title, output: r.output, data, ...(callId ? { call_id: callId } : {}) };
  } catch (e) {
    return errorOutcome(e);
  }
}

/** Looks at the held call the task waits on: answered (and run, for an approval) → the outcome, or the run it started. */
async function advanceHeld(s: CallTaskDeps, rec: CallTaskRecord, etag: string): Promise<CallTaskRecord> {
  const ps = pendingScope(s.deps, s.tenant, s.workspace);
  const { rec: held } = await loadPending(ps, rec.pending_id!);
  const r = heldOutcome(held, s.workspace, nowOf(s.deps));
  if (!r) return rec;
  const next = "ok" in r ? (cur: CallTaskRecord) => settled(cur, r) : (cur: CallTaskRecord) => afterResult(cur, r);
  return (await changeCallTask(s, rec.id, (cur) => (cur.status === "input_required" && cur.pending_id === rec.pending_id ? next(cur) : null), { rec, etag })).rec;
}

/** The task as it is now: its run or held call looked at once (a few GETs); a finished task as stored. */
export async function advanceCallTask(s: CallTaskDeps, cur: { rec: CallTaskRecord; etag: string }): Promise<CallTaskRecord> {
  const { rec, etag } = cur;
  if (isTerminal(rec.status)) return rec;
  if (rec.status === "working" && rec.run_id) return advanceRun(s, rec, etag);
  if (rec.status === "working" && rec.agent_task_id) return advanceAgent(s, rec, etag);
  if (rec.status === "input_required" && rec.pending_id) return advanceHeld(s, rec, etag);
  return rec;
}

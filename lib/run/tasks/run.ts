/**
 * Call tasks, the transport-independent layer a door (MCP 2025-11-25: lib/doors/mcp-tasks.ts; a
 * 2026-07-28 door: tasks/get|update|cancel) runs long calls through. docs/mcp-and-providers.md "Tasks".
 *
 *   startCallTask   runs the call through runTool (the one run path: scope, arguments, the approval
 *                   gate, metering). bash and run_code are started in the background (lib/exec/tasks.ts:
 *                   the sandbox run has its own durable record, output chunks and kill flag), task as
 *                   a background subagent (lib/tools/task/), so the task answers at once and its work
 *                   goes on without any request; the call is metered once, at the work's end
 *                   (advance.ts). Every other call runs to its end in the starting request, and so
 *                   do bash and run_code in their session's live sandbox (keep_alive: true; without
 *                   keep_alive, when the session holds one: taskCall). A call the gate holds, or an
 *                   ask_user question, makes the task input_required (pending_id). Then the record
 *                   is written (store.ts) and returned.
 *   callOrStartTask the same, for a door whose server decides per call whether a task is worth it
 *                   (MCP 2026-07-28): a call that ended in the starting request is answered as it is,
 *                   with no task record; with a threshold and waitUntil, a call that has not ended
 *                   within it is answered as a task and ends under waitUntil (late.ts).
 *   getCallTask     the task now: its run polled (new output kept, the end metered once) or its held call looked at.
 *   waitCallTask    until it is terminal (or input_required and nothing moves, when `untilInput`), the signal, or `until`.
 *   cancelCallTask  kills its run (the runner stops every process, nothing is written back), stops its
 *                   subagent (it starts no model turn or tool call after its stop flag) or closes its
 *                   held call (it can never run from a later approval); then cancelled.
 *   listCallTasks   (store.ts) the key's tasks in the workspace.
 *
 * A task never skips the gate: its call is gated like any other, and an approved call runs on the
 * approver's request (lib/run/pending/approve.ts); the task only reads the outcome.
 */
import { sleep } from "../../shared/sleep.js";
import { killTask } from "../../exec/tasks.js";
import { finishAfterAnswer } from "../../shared/after-answer.js";
import { ToolError } from "../../shared/errors.js";
import type { Tool, Usage } from "../../contract/tool.js";
import { closePending, loadPending, pendingScope } from "../../tools/pending/store.js";
import { loadTask, requestTaskStop } from "../../tools/task/records.js";
import { runTool, type CallScope } from "../run-tool.js";
import { assertToolAllowed } from "../toolset.js";
import type { Workspace } from "../../workspace/workspace.js";
import { afterResult, advanceCallTask, errorOutcome, settled, type CallTaskDeps } from "./advance.js";
import { abortLateCall, endOrPass, holdLateCall, LATE_CALL_LOST_MS, lateCallLost, lateCallRunsHere, settleLateCall } from "./late.js";
import { changeCallTask, createCallTask, isTerminal, loadCallTask, ttlOf, type CallTaskOutcome, type CallTaskRecord } from "./store.js";

/** What a door passes to start a task: the call's scope as for runTool, and the task's own options. */
export interface StartCallTask {
  tool: Tool;
  args: unknown;
  scope: CallScope & { ws: Workspace };
  /** The ttl the client asked for (ms; bounded: store.ts ttlOf). */
  ttlMs?: number;
  /** The client answers questions itself (MCP form elicitation): ask_user's question is marked for it (channel "elicitation"), to be put when the client waits on the task. */
  clientAnswers?: boolean;
}

/** Why an ask_user put to the client is not waited on in the starting request: the task waits instead. */
const ASKED_LATER = "asked when the client waits on the task";

/**
 * The args a call runs with as a task: bash and run_code in the background (unless keep_alive: true
 * runs them in the session's live sandbox, or bash only restarts its shell; without keep_alive,
 * `unlessLive`: in the session's live sandbox when it holds one, as without a task), task as a
 * background subagent. A call run in a live sandbox ends in the starting request, its task with it.
 */
function taskCall(tool: Tool, args: unknown): { args: unknown; unlessLive?: true } {
  if (!args || typeof args !== "object") return { args };
  const a = args as Record<string, unknown>;
  if (tool.name === "task") return { args: a.background === true ? args : { ...a, background: true } };
  if (tool.name !== "bash" && tool.name !== "run_code") return { args };
  if (a.keep_alive === true || a.run_in_background === true || (tool.name === "bash" && a.command === undefined)) return { args };
  return { args: { ...a, run_in_background: true }, ...(a.keep_alive === undefined ? { unlessLive: true as const } : {}) };
}

/** The task scope of a call: its storage, tenant, workspace, key, and what metering needs. */
export const taskScopeOf = (scope: CallScope): CallTaskDeps => ({ storage: scope.deps.storage, tenant: scope.auth.tenant, workspace: scope.wsId, key_id: scope.auth.key_id, deps: scope.deps, ...(scope.background ? { background: scope.background } : {}) });

/** The call's outcome when it ended in the starting request (no task needed), with what it cost. */
export type InlineOutcome = CallTaskOutcome & { usage?: Usage };

/** Runs the call for a task: the record it makes (not yet written; with an outcome when the call ended here) and what the request cost. */
async function runForTask(start: StartCallTask): Promise<{ made: CallTaskRecord; usage?: Usage }> {
  const { tool, scope } = start;
  const askHuman = start.clientAnswers && tool.name === "ask_user" ? async () => { throw new Error(ASKED_LATER); } : undefined;
  const { args, unlessLive } = taskCall(tool, start.args);
  const base = { id: "", key_id: scope.auth.key_id, tool: tool.name, session: scope.session, status: "working" as const, created_at: "", updated_at: "", ttl_ms: ttlOf(start.ttlMs) };
  try {
    const r = await runTool(tool, args, { ...scope, ...(askHuman ? { askHuman } : {}), ...(unlessLive ? { backgroundUnlessLive: true } : {}) });
    const made = afterResult(base, r);
    if (made.run_id) made.run_timeout_s = Number((args as { timeout?: number }).timeout ?? (tool.name === "run_code" ? 60 : 120));
    return { made, usage: r.usage };
  } catch (e) {
    const err = e instanceof ToolError ? e : null;
    const pendingId = err && (err.code === "NEEDS_INPUT" || err.code === "NEEDS_APPROVAL") && typeof err.details.pending_id === "string" ? err.details.pending_id : null;
    const made: CallTaskRecord = pendingId
      ? { ...base, status: "input_required", pending_id: pendingId, status_message: err!.code === "NEEDS_INPUT" ? "Waiting for the user's answer." : `Waiting for a human to approve this ${tool.name} call (pending call ${pendingId}).` }
      : settled(base, errorOutcome(e));
    return { made };
  }
}

/** Writes the task record a call made. */
async function writeTask(s: CallTaskDeps, made: CallTaskRecord): Promise<CallTaskRecord> {
  const { id: _i, created_at: _c, updated_at: _u, key_id: _k, ...init } = made;
  return (await createCallTask(s, init)).rec;
}

/** Runs the call as a task (see above) and returns its record, already written. */
export async function startCallTask(start: StartCallTask): Promise<CallTaskRecord> {
  // A call the key may not make is refused before a task exists: nothing stored, as on every door
  // (its outcome would be a task record, kept for a day, that the refused key wrote).
  assertToolAllowed(start.tool, start.scope.auth, start.scope.ws.tools);
  return writeTask(taskScopeOf(start.scope), (await runForTask(start)).made);
}

/**
 * Tools the threshold never applies to: those whose long work a task follows on its own (detached:
 * taskArgs), and those whose time is a wait for work or an answer that has a record of its own
 * (bash_output, task_output, pending_result: up to minutes, which a task would only turn into polls
 * of a call kept alive past Workers' 30 s of waitUntil).
 */
const NO_THRESHOLD = new Set(["bash", "run_code", "task", "bash_output", "task_output", "pending_result"]);

/**
 * Runs the call: a task (written) when its work goes on detached or waits for input, else the call's
 * outcome as it ended (no record). With `taskAfterMs` and the runtime's waitUntil (scope.background:
 * Workers), any other call not ended within taskAfterMs is answered as a working task too, and goes on
 * under waitUntil: its end writes the task's outcome (conditionally: a cancel written first stays).
 * `lostAfterMs`: how long the runtime keeps that work (LATE_CALL_LOST_MS: Workers' 30 s and margin; Lambda: its
 * function's timeout). Without waitUntil (Node) the call runs to its end in the request, as without the threshold.
 */
export async function callOrStartTask(start: StartCallTask, opts: { taskAfterMs?: number; lostAfterMs?: number } = {}): Promise<{ task: CallTaskRecord } | { done: InlineOutcome }> {
  const keep = start.scope.background;
  const done = async (r: Awaited<ReturnType<typeof runForTask>>) => (r.made.outcome ? { done: { ...r.made.outcome, ...(r.usage ? { usage: r.usage } : {}) } } : { task: await writeTask(taskScopeOf(start.scope), r.made) });
  if (opts.taskAfterMs === undefined || !Number.isFinite(opts.taskAfterMs) || !keep || NO_THRESHOLD.has(start.tool.name)) return done(await runForTask(start));
  const { scope } = start;
  const raced = await endOrPass({
    afterMs: opts.taskAfterMs,
    ...(scope.signal ? { signal: scope.signal } : {}),
    ...(scope.progress ? { progress: scope.progress } : {}),
    run: (signal, progress) => runForTask({ ...start, scope: { ...scope, signal, ...(progress ? { progress } : {}) } }),
  });
  if ("ended" in raced) return done(raced.ended);
  const s = taskScopeOf(scope);
  const task = await writeTask(s, { id: "", key_id: scope.auth.key_id, tool: start.tool.name, session: scope.session, status: "working", created_at: "", updated_at: "", ttl_ms: ttlOf(start.ttlMs), status_message: `Running: ${start.tool.name} (answered as a task after ${opts.taskAfterMs} ms)`, lost_after_ms: opts.lostAfterMs ?? LATE_CALL_LOST_MS });
  holdLateCall(s, task.id, raced.running, raced.abort);
  // The call is already running (it passed taskAfterMs): waitUntil keeps it, and its end's write, after the answer.
  finishAfterAnswer(keep, "a call answered as a task", raced.running.then((r) => settleLateCall(s, task.id, r.made)).catch((e) => console.error("a call answered as a task could not write its end", e instanceof Error ? e.message : String(e))));
  return { task };
}

/** The caller's task as it is now (NOT_FOUND for an unknown id, another key's, workspace's or tenant's). */
export async function getCallTask(s: CallTaskDeps, id: string): Promise<CallTaskRecord> {
  const cur = await loadCallTask(s, id);
  return (await lateCallLost(s, cur)) ?? advanceCallTask(s, cur);
}


/**
 * Waits for the task to end: reads it again with a backoff (250 ms growing to 2 s) until it is
 * terminal, `until` (epoch ms) passes or the signal aborts. `onInput` is called once per held call
 * the task waits on (the door puts a question to its client there); `onStatus` each time a read finds
 * its status or status message changed (the door's status notifications). Returns the last record read.
 */
export async function waitCallTask(s: CallTaskDeps, id: string, opts: { until: number; signal?: AbortSignal; onInput?: (rec: CallTaskRecord) => Promise<void>; onStatus?: (rec: CallTaskRecord) => Promise<void> }): Promise<CallTaskRecord> {
  let rec = await getCallTask(s, id);
  const told = new Set<string>();
  let shown = `${rec.status}\n${rec.status_message ?? ""}`;
  for (let pause = 250; !isTerminal(rec.status) && Date.now() < opts.until && !opts.signal?.aborted; pause = Math.min(pause * 1.5, 2000)) {
    if (rec.status === "input_required" && rec.pending_id && opts.onInput && !told.has(rec.pending_id)) {
      told.add(rec.pending_id);
      await opts.onInput(rec);
    }
    await sleep(Math.min(pause, Math.max(0, opts.until - Date.now())), opts.signal);
    rec = await getCallTask(s, id);
    const now = `${rec.status}\n${rec.status_message ?? ""}`;
    if (now !== shown && opts.onStatus) await opts.onStatus(rec);
    shown = now;
  }
  return rec;
}

/** How long a cancel waits for a subagent to see its stop flag. */
const AGENT_STOP_WAIT_MS = 15_000;

/** Sets the subagent's stop flag and waits (up to AGENT_STOP_WAIT_MS) for it to stop; true once its record has ended. */
async function stopSubagent(s: CallTaskDeps, agentTaskId: string): Promise<boolean> {
  const ts = { driver: s.deps.storage, tenant: s.tenant, workspace: s.workspace };
  let t = await loadTask(ts, agentTaskId);
  if (t.status !== "running") return true;
  await requestTaskStop(ts, t);
  const until = Date.now() + AGENT_STOP_WAIT_MS;
  for (let pause = 250; t.status === "running" && Date.now() < until; pause = Math.min(pause * 1.5, 2000)) {
    await sleep(Math.min(pause, Math.max(0, until - Date.now())));
    t = await loadTask(ts, agentTaskId);
  }
  return t.status !== "running";
}

/**
 * Cancels the caller's task: kills its sandbox run (waiting up to 15 s for the runner to confirm),
 * stops its subagent (its stop flag, waiting up to 15 s for it to stop: the result says after how many
 * steps), or closes the held call it waits on so no later approval runs it. A task already ended is
 * INVALID_ARGUMENT (the spec's rule: a terminal task cannot be cancelled).
 */
export async function cancelCallTask(s: CallTaskDeps, id: string): Promise<CallTaskRecord> {
  const cur = await loadCallTask(s, id);
  if (isTerminal(cur.rec.status)) throw new ToolError("INVALID_ARGUMENT", `Task ${id} has already ended (${cur.rec.status}); there is nothing to cancel. Its result stays readable until its ttl.`, { task_id: id, status: cur.rec.status });
  if (cur.rec.run_id) {
    const { status } = await killTask(s.deps.storage, { tenant: s.tenant, workspace: s.workspace, task_id: cur.rec.run_id });
    // Killed (or ended just before): the run's own result ends the task, its sandbox time metered as any run's.
    if (status !== "stopping") {
      const after = await getCallTask(s, id);
      if (isTerminal(after.status)) return after;
    }
  }
  if (cur.rec.agent_task_id) {
    // The subagent sees its stop flag before its next model turn or tool call; its record then says where it stopped.
    if (await stopSubagent(s, cur.rec.agent_task_id)) {
      const after = await getCallTask(s, id);
      if (isTerminal(after.status)) return after;
    }
  }
  if (cur.rec.pending_id) {
    const ps = pendingScope(s.deps, s.tenant, s.workspace);
    const held = await loadPending(ps, cur.rec.pending_id);
    if (held.rec.status === "pending") await closePending(ps, held.rec, held.etag, "superseded", "the MCP client cancelled the task that held this call");
  }
  const lateHere = cur.rec.lost_after_ms !== undefined && lateCallRunsHere(s, id);
  const why = lateHere ? ": the call under way was stopped (what it changed before the cancel stays)" : cur.rec.lost_after_ms !== undefined ? ": the call under way runs in another instance and was not stopped (it ends within its own bounds, what it changes stays, and its result is not kept)" : cur.rec.run_id ? ": its command was killed and its file changes were not written back" : cur.rec.pending_id ? ": the held call will never run" : cur.rec.agent_task_id ? `: its subagent was asked to stop and had not stopped within ${AGENT_STOP_WAIT_MS / 1000} s (a model turn or tool call under way ends first; it starts nothing after that, and task_output {task_id: "${cur.rec.agent_task_id}"} reads where it stopped)` : "";
  const outcome = errorOutcome(new ToolError("CANCELLED", `Task ${id} was cancelled by the client${why}.`, { task_id: id }));
  // A run that ended before the kill keeps its own outcome: the next read of the task shows it.
  const done = await changeCallTask(s, id, (rec) => (isTerminal(rec.status) ? null : settled(rec, outcome)));
  if (lateHere) abortLateCall(s, id, new ToolError("CANCELLED", `Task ${id} was cancelled by the client.`, { task_id: id }));
  return done.rec;
}

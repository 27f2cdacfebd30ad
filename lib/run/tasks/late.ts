/**
 * A call that outlives a threshold: the one race callOrStartTask (run.ts) runs for a door that turns
 * a long call into a task (MCP 2026-07-28). The call runs with a signal and a progress channel of
 * its own, tied to the request's until the threshold passes: before it, closing the request aborts
 * the call as always; after it, the request has been answered (with a task), so neither its close
 * nor its dead progress stream reach the call, which goes on under the runtime's waitUntil.
 *
 * Its end is written to the task record (settleLateCall: a conditional write, as every change of a
 * task, so a cancel written first stays). Workers keep waitUntil work up to 30 s after the answer:
 * a call cut off there never writes its end, so a task of a late call still working
 * LATE_CALL_LOST_MS after its creation is ended as lost by whoever reads it (lateCallLost).
 */
import type { ProgressEvent } from "../../contract/tool.js";
import { ToolError } from "../../shared/errors.js";
import { errorOutcome, settled } from "./advance.js";
import { changeCallTask, isTerminal, type CallTaskRecord, type CallTaskScope } from "./store.js";

const LATE = Symbol("late");

export interface LateCall<T> {
  /** How long the call may run before it is answered as a task (ms). */
  afterMs: number;
  /** The request's signal: aborts the call only while the call is still answered in the request. */
  signal?: AbortSignal;
  /** The request's progress channel: fed only while the call is still answered in the request. */
  progress?: (e: ProgressEvent) => void;
  /** Runs the call with the signal and progress channel it should use. */
  run: (signal: AbortSignal, progress?: (e: ProgressEvent) => void) => Promise<T>;
}

/**
 * The call's result when it ended within afterMs; else the call still running (never rejecting: `run`
 * must not) and how to abort it (its own signal, which the request no longer reaches).
 */
export async function endOrPass<T>(c: LateCall<T>): Promise<{ ended: T } | { running: Promise<T>; abort: (reason: unknown) => void }> {
  const own = new AbortController();
  let passed = false;
  const forward = () => own.abort(c.signal?.reason);
  if (c.signal?.aborted) forward();
  else c.signal?.addEventListener("abort", forward, { once: true });
  const progress = c.progress ? (e: ProgressEvent) => void (passed || c.progress!(e)) : undefined;
  const running = c.run(own.signal, progress);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<typeof LATE>((r) => (timer = setTimeout(() => r(LATE), Math.max(0, c.afterMs))));
  const first = await Promise.race([running, late]);
  clearTimeout(timer);
  c.signal?.removeEventListener("abort", forward);
  if (first !== LATE) return { ended: first as T };
  passed = true;
  return { running, abort: (reason) => own.abort(reason) };
}

/**
 * The late calls this isolate runs, by task (tenant, workspace, id), each with its abort: a cancel
 * that reaches the isolate running the call stops it (cancelCallTask). A cancel that reaches another
 * isolate cannot: the call there ends within its own bounds, its result not kept.
 */
const runningHere = new Map<string, (reason: unknown) => void>();
const lateKey = (s: CallTaskScope, id: string) => `${s.tenant}\u0000${s.workspace}\u0000${id}`;

/** Keeps the late call's abort while it runs (`running` must not reject). */
export function holdLateCall(s: CallTaskScope, id: string, running: Promise<unknown>, abort: (reason: unknown) => void): void {
  const key = lateKey(s, id);
  runningHere.set(key, abort);
  void running.finally(() => runningHere.delete(key));
}

/** Whether this isolate runs the task's late call (its abort is held). */
export const lateCallRunsHere = (s: CallTaskScope, id: string): boolean => runningHere.has(lateKey(s, id));

/** Aborts the task's late call if this isolate runs it (after the cancel is written: the call's end then finds the task ended and keeps nothing). */
export function abortLateCall(s: CallTaskScope, id: string, reason: unknown): void {
  const abort = runningHere.get(lateKey(s, id));
  runningHere.delete(lateKey(s, id));
  abort?.(reason);
}

/** How long after its task was made a late call must have ended (Workers' waitUntil gives it 30 s; the rest is margin). Lambda sets its own (lib/runtime/aws.ts). */
export const LATE_CALL_LOST_MS = 60_000;

/** Writes a late call's end into its task: the record the call made (its outcome, or the held call it waits on), unless the task ended first. */
export async function settleLateCall(s: CallTaskScope, id: string, made: CallTaskRecord): Promise<void> {
  const { id: _i, key_id: _k, created_at: _c, updated_at: _u, ttl_ms: _t, session: _s, tool: _tool, ...end } = made;
  await changeCallTask(s, id, (cur) => (cur.status === "working" && cur.lost_after_ms !== undefined ? { ...omitLate(cur), ...end } : null));
}

const omitLate = ({ lost_after_ms: _l, ...rest }: CallTaskRecord): CallTaskRecord => rest;

/** A late call's task read past LATE_CALL_LOST_MS without its end: failed, saying why (null while it may still end). */
export async function lateCallLost(s: CallTaskScope, cur: { rec: CallTaskRecord; etag: string }): Promise<CallTaskRecord | null> {
  const { rec } = cur;
  const now = (s.now ?? Date.now)();
  if (rec.status !== "working" || rec.lost_after_ms === undefined || now < Date.parse(rec.created_at) + rec.lost_after_ms) return null;
  const lost = errorOutcome(new ToolError("UNAVAILABLE", `The ${rec.tool} call stopped without an answer after it was answered as a task: the runtime ended the work it kept going after the answer (Workers allow 30 s; Lambda, its function's timeout). What it changed before that stays. Call the tool again with a smaller job (a shorter timeout, a narrower path), or from a client that does not declare the tasks extension, whose calls hold their request to the end.`, { task_id: rec.id }));
  return (await changeCallTask(s, rec.id, (c) => (isTerminal(c.status) || c.lost_after_ms === undefined ? null : settled(omitLate(c), lost)), cur)).rec;
}

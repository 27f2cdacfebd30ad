/**
 * Background tasks (bash run_in_background, bash_output, kill_shell), the API's side of their run
 * records (lib/sync/run-records.ts has the record layout): start with housekeeping and the cap, poll
 * (output since the last poll, waiting for the end), kill. Bundles for Workers.
 */
import { ToolError } from "../shared/errors.js";
import { sleep } from "../shared/sleep.js";
import { internalPrefix, RUN_ID_PATTERN, runPrefix } from "../layout/paths.js";
import { isConditionFailed, type StorageDriver } from "../storage/types.js";
import { createOnly, JSON_TYPE, keysOf, RUN_MARGIN_MS, runIdFor, type RunKeys, type TaskMarker } from "../sync/run-records.js";
import { quotaMessage, setKillFlag } from "./runs.js";
import { readJson } from "../storage/json.js";
import type { Executor, KillStatus, RunRequest, RunResult, TaskPoll, TaskRef, TaskStatus } from "./types.js";
import type { ExecResponse, RunClaim } from "../sync/types.js";
import type { Caller, LimitsStore } from "../limits/store.js";
import { callerOf } from "../workspace/quota.js";
import { takeTaskPlace } from "./task-places.js";
import type { Limits } from "../limits/fields.js";

/** Output bytes one poll hands out at most (head + tail of the unread chunks; the tools cut to 30,000 characters). */
const POLL_OUTPUT_BYTES = 100_000;
/** How long kill_shell waits for the runner to confirm. */
const KILL_WAIT_MS = 15_000;


const notFound = (id: string) =>
  new ToolError("NOT_FOUND", `No background task ${JSON.stringify(id)} in this workspace. Task ids come from bash with run_in_background: true, called on the same workspace.`, { task_id: id });

function recordOf(ref: TaskRef): RunKeys {
  if (typeof ref.task_id !== "string" || !RUN_ID_PATTERN.test(ref.task_id)) throw notFound(String(ref.task_id));
  return keysOf(runPrefix(ref.tenant, ref.workspace, ref.task_id));
}

/** Background tasks of one workspace that may run at once. */
export const MAX_RUNNING_TASKS = 8;
/** How long a finished run's record stays readable by bash_output. */
export const RECORD_KEEP_MS = 24 * 60 * 60 * 1000;
/** The longest a task can run and still report: the tool's max timeout + RUN_MARGIN_MS. */
const TASK_LIFE_MS = 600_000 + RUN_MARGIN_MS;
/** Pages of x/runs/ a task start's housekeeping reads at most (1000 keys each). */
const HOUSEKEEPING_PAGES = 10;

/** Where a sweep of x/runs/ stopped: the last key it judged, below the prefix (`<run id>/<object>`). */
const SWEEP_POSITION = /^r[0-9a-f]{15}\/[\x21-\x7e]+$/;

/**
 * Deletes the records of runs finished (or dead) more than RECORD_KEEP_MS ago, and counts the
 * tasks still running: before a task starts (the cap), and on the scheduled tick (one page, the
 * records of foreground runs whose isolate died before deleting them; lib/runtime/housekeeping.ts).
 * From object times alone (a list, no reads): a task without a result counts as running until its
 * marker is TASK_LIFE_MS old; a record is kept RECORD_KEEP_MS past its newest object and its run's
 * end (its result, else TASK_LIFE_MS, the longest any run can report, past its marker or, with
 * none, its newest object: a foreground run's fresh claim is never taken).
 * `after` (a `next` this gave before) starts the listing past the keys judged then, so a sweep of
 * one page per tick goes on through the records instead of reading the first page again; `next`
 * is where this one stopped (null: at the end). A run cut by the page's end is left whole to the
 * next sweep (unless it is the page's only run); it still counts as running here.
 */
export async function housekeepRuns(storage: StorageDriver, tenant: string, workspace: string, now = Date.now(), pages = HOUSEKEEPING_PAGES, after?: string | null): Promise<{ running: number; deleted: number; next: string | null }> {
  const prefix = `${internalPrefix(tenant, workspace)}runs/`;
  const runs = new Map<string, { keys: string[]; task?: number; result?: number; latest: number }>();
  let cursor: string | undefined;
  let lastKey: string | null = null;
  const start = after && SWEEP_POSITION.test(after) ? { startAfter: `${prefix}${after}` } : {};
  for (let page = 0; page < pages; page++) {
    const r = await storage.list({ prefix, ...(cursor ? { cursor } : start) });
    for (const o of r.objects) {
      lastKey = o.key;
      const rest = o.key.slice(prefix.length);
      const id = rest.slice(0, rest.indexOf("/"));
      if (!RUN_ID_PATTERN.test(id)) continue;
      const run = runs.get(id) ?? { keys: [], latest: 0 };
      const at = o.modified.getTime();
      run.keys.push(o.key);
      run.latest = Math.max(run.latest, at);
      if (rest === `${id}/task.json`) run.task = at;
      if (rest === `${id}/result.json`) run.result = at;
      runs.set(id, run);
    }
    cursor = r.cursor;
    if (!cursor) break;
  }
  let next: string | null = null;
  let cut: string | undefined;
  if (cursor && lastKey !== null) {
    // More remain: the last run listed may go on in the next page; deleted from there, whole, unless it is all there is.
    const ids = [...runs.keys()];
    if (ids.length > 1) cut = ids.at(-1)!;
    next = (cut ? runs.get(ids.at(-2)!)!.keys.at(-1)! : lastKey).slice(prefix.length);
  }
  let running = 0;
  const expired: string[] = [];
  for (const [id, run] of runs) {
    const endedAt = run.result ?? (run.task !== undefined ? run.task + TASK_LIFE_MS : run.latest + TASK_LIFE_MS);
    if (run.result === undefined && run.task !== undefined && now < run.task + TASK_LIFE_MS) running++;
    else if (id !== cut && now - Math.max(endedAt, run.latest) > RECORD_KEEP_MS) expired.push(...run.keys);
  }
  for (let i = 0; i < expired.length; i += 1000) await storage.delete(expired.slice(i, i + 1000));
  return { running, deleted: expired.length, next };
}

/**
 * Starts a background task: housekeeping and the running-task cap, its marker (so a poll
 * right after finds it), then the asynchronous Invoke.
 */
export async function startTask(storage: StorageDriver, executor: Executor, req: RunRequest, callId?: string, places?: { limits: LimitsStore | undefined; caller: Caller }): Promise<{ task_id: string }> {
  const taskId = await runIdFor(req.tenant, req.workspace, req.idempotency_key);
  const k = keysOf(runPrefix(req.tenant, req.workspace, taskId));
  const { running } = await housekeepRuns(storage, req.tenant, req.workspace);
  if (running >= MAX_RUNNING_TASKS)
    throw new ToolError("RATE_LIMITED", `${running} background tasks are already running in this workspace (at most ${MAX_RUNNING_TASKS}). Wait for one with bash_output, or stop one with kill_shell.`, { running, max: MAX_RUNNING_TASKS });
  // The tenant's background_tasks (task-places.ts), before anything of the task is written.
  const release = await takeTaskPlace(places?.limits, storage, req.tenant, places?.caller ?? { key_id: "" }, req.workspace, taskId, req.timeout_ms);
  const now = Date.now();
  const marker: TaskMarker = { task_id: taskId, created_at: now, deadline: now + req.timeout_ms + RUN_MARGIN_MS, ...(callId ? { call_id: callId } : {}) };
  if (!(await createOnly(storage, k.task, JSON.stringify(marker)))) throw new ToolError("CONFLICT", `Task ${taskId} was already started; follow it with bash_output.`, { task_id: taskId }); // its place is its own (same id)
  try {
    await executor.start(req);
  } catch (e) {
    await storage.delete(k.task).catch(() => {});
    await release();
    throw e;
  }
  return { task_id: taskId };
}

interface RecordNow {
  task: TaskMarker | null;
  claim: RunClaim | null;
  result: ExecResponse | null;
}

async function readRecord(storage: StorageDriver, k: RunKeys): Promise<RecordNow> {
  const [task, claim, result] = await Promise.all([readJson<TaskMarker>(storage, k.task), readJson<RunClaim>(storage, k.claim), readJson<ExecResponse>(storage, k.result)]);
  return { task: task?.value ?? null, claim: claim?.value ?? null, result: result?.value ?? null };
}

/** After this, nobody can report on the run any more (its runner's sync token expired). */
const deadlineOf = (r: RecordNow) => Math.max(r.task?.deadline ?? 0, r.claim?.deadline ?? 0);

/** Waits (polling storage, 250 ms growing to 2 s) until the result exists, `until` / the deadline passes or the signal aborts (the call's: its client gone, its key revoked). */
async function waitForResult(storage: StorageDriver, k: RunKeys, rec: RecordNow, until: number, signal?: AbortSignal): Promise<ExecResponse | null> {
  let result = rec.result;
  const deadline = deadlineOf(rec);
  let interval = 250;
  while (!result && Date.now() < until && (deadline === 0 || Date.now() < deadline) && !signal?.aborted) {
    await sleep(Math.min(interval, until - Date.now()), signal);
    if (signal?.aborted) break;
    interval = Math.min(interval * 1.5, 2000);
    result = (await readJson<ExecResponse>(storage, k.result))?.value ?? null;
  }
  return result;
}

/**
 * The unread output chunks, head and tail within POLL_OUTPUT_BYTES; moves the cursor past them
 * (conditionally: of two concurrent polls one hands a chunk out) and deletes them.
 */
async function takeOutput(storage: StorageDriver, k: RunKeys): Promise<string> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const cursor = await readJson<{ after: string }>(storage, k.cursor);
    const chunks: { key: string; size: number }[] = [];
    let page: string | undefined;
    do {
      const r = await storage.list({ prefix: k.out, ...(page ? { cursor: page } : cursor ? { startAfter: cursor.value.after } : {}) });
      for (const o of r.objects) if (!cursor || o.key > cursor.value.after) chunks.push({ key: o.key, size: o.size });
      page = r.cursor;
    } while (page);
    if (chunks.length === 0) return "";
    // Head and tail of the unread chunks, whole chunks only (at least one each side).
    const half = POLL_OUTPUT_BYTES / 2;
    let head = 0;
    for (let bytes = 0; head < chunks.length && (head === 0 || bytes + chunks[head]!.size <= half); head++) bytes += chunks[head]!.size;
    let tail = chunks.length;
    for (let bytes = 0; tail > head && (tail === chunks.length || bytes + chunks[tail - 1]!.size <= half); tail--) bytes += chunks[tail - 1]!.size;
    const read = async (c: { key: string }) => {
      const got = await storage.get(c.key);
      return got ? new Response(got.body).text() : "";
    };
    const [first, last] = await Promise.all([Promise.all(chunks.slice(0, head).map(read)), Promise.all(chunks.slice(tail).map(read))]);
    const omitted = chunks.slice(head, tail).reduce((n, c) => n + c.size, 0);
    const text = first.join("") + (omitted > 0 ? `\n... [${omitted} bytes of output omitted] ...\n` : "") + last.join("");
    try {
      await storage.put(k.cursor, JSON.stringify({ after: chunks[chunks.length - 1]!.key }), { contentType: JSON_TYPE, ...(cursor ? { ifMatch: cursor.etag } : { ifNoneMatch: "*" }) });
    } catch (e) {
      if (isConditionFailed(e)) continue; // another poll handed these out first
      throw e;
    }
    await storage.delete(chunks.map((c) => c.key)).catch(() => {}); // handed out: never needed again
    return text;
  }
  return "";
}


const LOST = {
  code: "INTERNAL",
  message: "The task's runner stopped without reporting a result (it crashed, or the function hit its time limit); some of its file changes may have been written back. Check the files, then run the command again if you still need it.",
};

/** Status and output since the last poll; with wait_ms, waits up to that long for the task to finish. */
export async function pollTask(storage: StorageDriver, ref: TaskRef, opts: { wait_ms?: number; signal?: AbortSignal } = {}): Promise<TaskPoll> {
  const k = recordOf(ref);
  const rec = await readRecord(storage, k);
  if (!rec.task && !rec.claim && !rec.result) throw notFound(ref.task_id);
  const waitMs = Math.min(Math.max(Number(opts.wait_ms ?? 0) || 0, 0), 600_000);
  const result = await waitForResult(storage, k, rec, Date.now() + waitMs, opts.signal);
  const deadline = deadlineOf(rec);
  const lost = !result && deadline > 0 && Date.now() > deadline;
  let output = await takeOutput(storage, k);
  let status: TaskStatus = "running";
  let run: RunResult | undefined;
  let error: { code: string; message: string } | undefined;
  if (result?.ok) {
    run = result.result as RunResult;
    const diskMb = run.limit_exceeded?.disk_mb; // the memory bound stops no run: the kernel killed processes of it, its output says so
    status = run.timed_out ? "timed_out" : run.killed || diskMb !== undefined ? "killed" : "completed";
    if (diskMb !== undefined) error = { code: "QUOTA_EXCEEDED", message: quotaMessage(diskMb) };
    // A foreground run (followed after a retried call) streams no chunks: its output is in the result.
    if (!rec.task && rec.claim && !rec.claim.task && output === "") output = run.output;
  } else if (result) {
    error = { code: result.error.code, message: result.error.message };
    status = (await storage.head(k.kill)) ? "killed" : "completed";
  } else if (lost) {
    status = "timed_out";
    error = LOST;
  }
  return { task_id: ref.task_id, status, exit_code: run?.exit_code ?? null, output, ...(run ? { result: run } : {}), ...(error ? { error } : {}), ...(rec.task?.call_id ? { call_id: rec.task.call_id } : {}) };
}

/** `killed_by: "key_gone"` when the task's stored result says its starting key's end stopped it (lib/sync/starting-key.ts), as bash_output reads it. */
const keyGoneOf = (res: ExecResponse): { killed_by?: "key_gone" } => (res.ok && (res.result as { killed_by?: unknown } | null)?.killed_by === "key_gone" ? { killed_by: "key_gone" } : {});

/**
 * Sets the kill flag and waits (up to 15 s) for the runner to stop the task and report. `killed_by: "key_gone"`: the task
 * was stopped because the API key that started it is gone (before this call, or while it waited), so kill_shell tells
 * the true reason; before (until 2026-12-02) such a task read "had already ended (it finished, reached its deadline,
 * or an earlier kill_shell stopped it)", or "killed" as if this call had stopped it.
 */
export async function killTask(storage: StorageDriver, ref: TaskRef, opts: { wait_ms?: number } = {}): Promise<{ status: KillStatus; killed_by?: "key_gone" }> {
  const k = recordOf(ref);
  const rec = await readRecord(storage, k);
  if (!rec.task && !rec.claim && !rec.result) throw notFound(ref.task_id);
  const deadline = deadlineOf(rec);
  if (rec.result) return { status: "already_completed", ...keyGoneOf(rec.result) };
  if (deadline > 0 && Date.now() > deadline) return { status: "already_completed" };
  if (!rec.task && rec.claim && !rec.claim.task)
    throw new ToolError("INVALID_ARGUMENT", `${ref.task_id} is a foreground command (bash without run_in_background): it cannot be killed and stops at its timeout. Follow it with bash_output.`, { task_id: ref.task_id });
  await setKillFlag(storage, k);
  const result = await waitForResult(storage, k, rec, Date.now() + (opts.wait_ms ?? KILL_WAIT_MS));
  if (!result) return { status: "stopping" };
  const killed = result.ok ? (result.result as RunResult).killed : true;
  return { status: killed ? "killed" : "already_completed", ...keyGoneOf(result) };
}

/** A bash or run_code call's run_in_background: its task started, counted against the tenant's and its key's limits. */
export function startInBackground(ctx: { deps: { storage: StorageDriver; limits?: LimitsStore }; ws: { undo?: { callId: string } }; auth: { key_id: string; limits?: Limits; maker_limits?: Caller["maker_limits"] } }, executor: Executor, req: RunRequest): Promise<{ task_id: string }> {
  return startTask(ctx.deps.storage, executor, req, ctx.ws.undo?.callId, { limits: ctx.deps.limits, caller: callerOf(ctx.auth) });
}

const STARTED_IN_BACKGROUND = "Started in the background: task_id ";

/** What the model reads of a background start, after `notes` (what a declined join said; lib/run/tasks/advance.ts keeps them as a task's preface). */
export const startedInBackground = (task_id: string, notes = ""): string =>
  `${notes}${STARTED_IN_BACKGROUND}${task_id}. Read its output with bash_output (wait: true to wait for it); stop it with kill_shell.`;

/** The line of startedInBackground's text that says the run started (not the notes before it). */
export const isStartedInBackgroundLine = (line: string): boolean => line.startsWith(STARTED_IN_BACKGROUND);

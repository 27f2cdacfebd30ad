/**
 * A foreground command whose caller listens for progress (SSE, MCP progress): it runs as a
 * background task (the one way a runner reports before it ends, on Lambda as locally), and the
 * call follows the task's run record until the result is there. The caller sees the same result
 * as runForeground's; meanwhile every output chunk the runner stores becomes a progress event
 * `{kind: "output", stream: "merged", text}`, and a caller that goes away (its AbortSignal)
 * sets the task's kill flag: the runner kills every process and writes nothing back. The sandbox time such a
 * run had is billed once, by the sync server at its end (its token's `m.s`), or by this call when the result was
 * stored before the flag (the call takes it, with its sandbox time).
 *
 * Storage per streamed call: the marker (1 put), then per poll 1 get + 1 list, + 1 get per new
 * chunk; at the end 1 list + 1 delete of the record. Polls come every POLL_MS for the first 5 s
 * and while output comes (for the first minute), else back off to IDLE_POLL_MS: a 10-minute call
 * polls at most ~900 times. From 4 s on, at most one read of the workspace record a second (its
 * workspace deleted under it, the run never stores a result: the call answers why at once, instead of
 * waiting to its deadline). The runner sends a chunk at most every STREAM_OUTPUT_EVERY_MS (and
 * checks the kill flag as often). Bundles for Workers.
 */
import { ToolError } from "../shared/errors.js";
import { runPrefix } from "../layout/paths.js";
import type { StorageDriver } from "../storage/types.js";
import { runCaller, type ExecCall, type OutputEvent } from "./call.js";
import type { Caller } from "../limits/store.js";
import { unwrapExecResponse } from "./response.js";
import { createOnly, FOREGROUND_KILL_AFTER_MS, FOREGROUND_KILL_EVERY_MS, keysOf, RUN_MARGIN_MS, runIdFor, type RunKeys, type TaskMarker } from "../sync/run-records.js";
import { deletedWhileRunning, RunKilled, runForeground, setKillFlag, unlessWorkspaceGone, workspaceGone } from "./runs.js";
import { callIdOf } from "../workspace/undo-record.js";
import { readJson } from "../storage/json.js";
import type { Executor, RunRequest, RunResult } from "./types.js";
import type { ExecResponse } from "../sync/types.js";

/** How often the runner of a streamed call sends its output (and checks the kill flag), ms. */
export const STREAM_OUTPUT_EVERY_MS = 250;
/** How often the call reads the run record while output comes, ms; a quiet run is read less often (up to IDLE_POLL_MS). */
export const POLL_MS = 200;
export const IDLE_POLL_MS = 1000;
/** After this long, the record is read at most every IDLE_POLL_MS (bounds the storage operations of a long call). */
export const FAST_POLL_FOR_MS = 60_000;
/** The first seconds are read every POLL_MS even when quiet: a short command answers without a backed-off wait. */
const ALWAYS_FAST_MS = 5_000;
/** A runner that has not claimed the run by then never will (it refused the request, or the invocation was lost). */
export const CLAIM_WAIT_MS = 60_000;

export interface StreamOptions {
  progress: (event: OutputEvent) => void;
  /** The caller's: aborted when the client goes away. */
  signal?: AbortSignal;
  pollMs?: number;
  /** How long the runner may take to claim the run before the call gives up (default CLAIM_WAIT_MS). */
  claimWaitMs?: number;
  /** Keeps the kill flag's write going after the client left (Workers: executionCtx.waitUntil). */
  waitUntil?: (p: Promise<unknown>) => void;
  /** The key the command runs for (its own concurrent_runs). */
  caller?: Caller;
  /** Aborted (with `signal`) once the call's key is gone: a run killed then throws RunKilled (runs.ts), with `callId`, the call's undo id. */
  keyGone?: AbortSignal;
  callId?: string;
  /** Whether the run's workspace is gone (runs.ts workspaceGone): asked once a second from 4 s on, the cadence of the runner's own kill check. */
  workspaceGone?: () => Promise<boolean>;
}

/** Sleeps `ms`, or less when the signal aborts. */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** The chunks stored after `after`, in order, as text (each read once). */
async function newChunks(storage: StorageDriver, k: RunKeys, after: string | null): Promise<{ texts: string[]; last: string | null }> {
  const keys: string[] = [];
  let page: string | undefined;
  do {
    const r = await storage.list({ prefix: k.out, ...(page ? { cursor: page } : after ? { startAfter: after } : {}) });
    for (const o of r.objects) if (after === null || o.key > after) keys.push(o.key);
    page = r.cursor;
  } while (page);
  keys.sort();
  const texts = await Promise.all(keys.map(async (key) => {
    const got = await storage.get(key);
    return got ? new Response(got.body).text() : "";
  }));
  return { texts, last: keys.at(-1) ?? after };
}

/** Deletes the whole record of a finished streamed run (best effort: housekeeping takes what is left). */
async function dropRecord(storage: StorageDriver, prefix: string): Promise<void> {
  const keys: string[] = [];
  let page: string | undefined;
  do {
    const r = await storage.list({ prefix, ...(page ? { cursor: page } : {}) });
    keys.push(...r.objects.map((o) => o.key));
    page = r.cursor;
  } while (page);
  for (let i = 0; i < keys.length; i += 1000) await storage.delete(keys.slice(i, i + 1000));
}

const finishedUnseen = (taskId: string) =>
  new ToolError("CANCELLED", "The client went away as the command finished: it ran to its end and its file changes were written back, but its output was not kept. Check the files before running it again.", { task_id: taskId });
const cancelled = (taskId: string) =>
  new ToolError("CANCELLED", "The client went away before the command finished: it was killed and its file changes were not written back. Call again to run it.", { task_id: taskId });

/**
 * Runs `req` to its end like runForeground, reporting its output as it comes; killed when `signal` aborts.
 * It holds what a foreground run holds (a concurrent_runs slot) from before its start to its end, as run does.
 */
export function runStreamed(storage: StorageDriver, executor: Executor, req: RunRequest, opts: StreamOptions): Promise<RunResult> {
  const follow = () => startAndFollow(storage, executor, req, opts);
  return executor.foreground ? executor.foreground(req, follow, opts.caller) : follow();
}

async function startAndFollow(storage: StorageDriver, executor: Executor, req: RunRequest, opts: StreamOptions): Promise<RunResult> {
  const taskId = await runIdFor(req.tenant, req.workspace, req.idempotency_key);
  const prefix = runPrefix(req.tenant, req.workspace, taskId);
  const k = keysOf(prefix);
  const now = Date.now();
  const marker: TaskMarker = { task_id: taskId, created_at: now, deadline: now + req.timeout_ms + RUN_MARGIN_MS };
  // The marker makes it a task (bash_output and housekeeping know it) before the runner claims it.
  if (!(await createOnly(storage, k.task, JSON.stringify(marker)))) throw new ToolError("CONFLICT", `Task ${taskId} was already started; follow it with bash_output.`, { task_id: taskId });
  if (opts.signal?.aborted) {
    await storage.delete(k.task).catch(() => {});
    throw cancelled(taskId);
  }
  try {
    await executor.start({ ...req, output_every_ms: STREAM_OUTPUT_EVERY_MS });
  } catch (e) {
    await storage.delete(k.task).catch(() => {});
    throw e;
  }
  let after: string | null = null;
  let wait = opts.pollMs ?? POLL_MS;
  let claimed = false;
  let lookedAt = 0;
  // The runner checks the flag with every chunk it sends (and when it claims the run): it kills the command and writes nothing back.
  const kill = () => setKillFlag(storage, k, opts.waitUntil);
  for (;;) {
    if (opts.signal?.aborted) {
      await kill();
      // The flag first, then the result: a result stored before the flag is this call's to take and bill; one stored
      // after it is billed by the sync server when it is stored (lib/sync/runs.ts leftByCaller); the billing marker takes one.
      const done = (await readJson<ExecResponse>(storage, k.result))?.value ?? null;
      if (done && (await createOnly(storage, k.billed, "", "text/plain"))) {
        await dropRecord(storage, prefix).catch(() => {});
        return unwrapExecResponse<RunResult>(done);
      }
      if (!done && opts.keyGone?.aborted) throw new RunKilled(opts.callId);
      throw done ? finishedUnseen(taskId) : cancelled(taskId);
    }
    // The result first: once it is there, every chunk is (the runner sends the rest before it).
    const result = (await readJson<ExecResponse>(storage, k.result))?.value ?? null;
    if (!result && !claimed) {
      claimed = (await storage.head(k.claim)) !== null;
      if (!claimed && Date.now() - now > (opts.claimWaitMs ?? CLAIM_WAIT_MS)) {
        await kill(); // should it start after all, it stops at once
        throw new ToolError("UNAVAILABLE", `The command runner did not pick the command up within ${Math.round((opts.claimWaitMs ?? CLAIM_WAIT_MS) / 1000)} s; nothing ran. Retry later; if it keeps happening, the runner is down or refuses requests (see its logs).`, { task_id: taskId });
      }
    }
    // Its workspace deleted under it: the runner was told to stop at its next chunk and its result is not stored (lib/sync/runs.ts), so no result would ever come.
    if (!result && opts.workspaceGone && Date.now() - now >= FOREGROUND_KILL_AFTER_MS && Date.now() - lookedAt >= FOREGROUND_KILL_EVERY_MS) {
      lookedAt = Date.now();
      if (await opts.workspaceGone()) throw deletedWhileRunning(req.workspace);
    }
    const got = await newChunks(storage, k, after);
    after = got.last;
    for (const text of got.texts) if (text) opts.progress({ kind: "output", stream: "merged", text });
    if (result) {
      await dropRecord(storage, prefix).catch(() => {});
      return unwrapExecResponse<RunResult>(result);
    }
    if (Date.now() > marker.deadline) {
      throw new ToolError("INTERNAL", "The command's runner stopped without reporting a result (it crashed, or the function hit its time limit); some of its file changes may have been written back. Check the files, then run the command again if you still need it.", { task_id: taskId });
    }
    const fast = opts.pollMs ?? POLL_MS;
    const ran = Date.now() - now;
    wait = ran < FAST_POLL_FOR_MS && (got.texts.length > 0 || ran < ALWAYS_FAST_MS) ? fast : Math.min(Math.max(wait * 1.5, fast), IDLE_POLL_MS);
    await pause(wait, opts.signal);
  }
}

/**
 * The run of a foreground bash / run_code call: streamed (and killed with the caller) when the caller listens for progress,
 * else runForeground. Either is killed once the call's key is gone (ctx.keyGone, lib/run/key-watch.ts; a streamed run's
 * signal aborts with it), whatever the door: its write-back does not land (unless already under way), and the call
 * throws RunKilled (runs.ts) naming the call's undo id.
 */
export function runForCall(ctx: Pick<ExecCall, "deps" | "ws" | "auth" | "progress" | "signal" | "keyGone" | "waitUntil">, executor: Executor, req: RunRequest): Promise<RunResult> {
  const caller = runCaller(ctx);
  // The undo id its write-back is journaled under: a run killed for its key names it (a write-back under way may land).
  const callId = ctx.ws.undo ? callIdOf(ctx.ws.undo.session, ctx.ws.undo.stamp) : undefined;
  if (!ctx.progress) return runForeground(ctx.deps.storage, executor, req, ctx.waitUntil, caller, ctx.keyGone, callId).then((r) => unlessWorkspaceGone(ctx.deps.storage, ctx.ws, r));
  return runStreamed(ctx.deps.storage, executor, req, { progress: ctx.progress, caller, workspaceGone: () => workspaceGone(ctx.deps.storage, ctx.ws), ...(ctx.signal ? { signal: ctx.signal } : {}), ...(ctx.waitUntil ? { waitUntil: ctx.waitUntil } : {}), ...(ctx.keyGone ? { keyGone: ctx.keyGone, callId } : {}) });
}

/**
 * One run, once, wherever the invocation lands: the runner's side of the run record
 * (lib/sync/run-records.ts). Before its command runs, the handler claims the run in storage
 * (If-None-Match: *, through the sync API: carried by the run's manifest request, riding-claim.ts). A retried invocation, in this execution environment or another,
 * finds the claim: it answers the stored result when the first attempt has finished, else it
 * waits (bounded) and answers CONFLICT naming the run to follow with bash_output.
 * Background tasks send their output to the record about once a second and stop when its
 * kill flag is set; a foreground run asks the kill check alone, every second from 4 s on (its call sets
 * the flag once the call's key is gone; the check also answers kill once its workspace is deleted:
 * lib/sync/runs.ts killAsked); every run stores its final answer there.
 */
import { isToolError } from "../../lib/shared/errors.js";
import type { RunResult } from "../../lib/exec/types.js";
import type { ExecResponse, ClaimOutcome, RunClaim, RunRecordClient } from "../../lib/sync/types.js";
import type { OutputCollector } from "./output.js";
import type { RunHooks } from "./runner.js";
import { RidingClaim } from "./riding-claim.js";
import { sleep } from "../../lib/shared/sleep.js";
import { FOREGROUND_KILL_AFTER_MS, FOREGROUND_KILL_EVERY_MS } from "../../lib/sync/run-records.js";

export interface OnceOptions {
  /** How long a retry waits for an earlier attempt that still runs (default 30 s). */
  claimWaitMs?: number;
  /** How often a background task sends its output and checks the kill flag (default 1 s). */
  pumpMs?: number;
  /** Aborts the run (the handler shutting down). */
  signal?: AbortSignal;
}

export const errorOf = (e: unknown): ExecResponse => {
  if (isToolError(e)) return { ok: false, error: { code: e.code, message: e.message, details: e.details } };
  return { ok: false, error: { code: "INTERNAL", message: `The command runner failed: ${String((e as Error)?.message ?? e)}` } };
};


const stillRunning = (runId: string, claim: RunClaim | null): ExecResponse => ({
  ok: false,
  error: {
    code: "CONFLICT",
    message:
      `This call's command is still running: an earlier attempt of the same call (a retried invocation) started it${claim ? ` ${Math.round((Date.now() - claim.started_at) / 1000)} s ago` : ""}, and it was not started again. ` +
      `Do not run it again; follow it with bash_output task_id ${runId} (wait: true): its output and result appear there when it finishes.`,
    details: { task_id: runId, ...(claim ? { started_at: new Date(claim.started_at).toISOString() } : {}) },
  },
});

const lost = (runId: string): ExecResponse => ({
  ok: false,
  error: {
    code: "INTERNAL",
    message: "An earlier attempt of this call started the command, and its runner stopped without a result (it crashed or hit its time limit); some of its file changes may have been written back. Check the files before running it again.",
    details: { task_id: runId },
  },
});

/** Waits for the attempt holding the claim: its answer, "released" (it never started: claim again), or CONFLICT. */
async function waitForEarlier(records: RunRecordClient, claim: RunClaim | null, runId: string, waitMs: number): Promise<ExecResponse | "released"> {
  const until = Date.now() + waitMs;
  let current = claim;
  for (;;) {
    if (current && Date.now() > current.deadline) return lost(runId);
    if (Date.now() >= until) return stillRunning(runId, current);
    await sleep(Math.min(500, until - Date.now()));
    const st = await records.state().catch(() => null);
    if (!st) continue;
    if (st.result) return st.result;
    if (!st.claim) return "released";
    current = st.claim;
  }
}

/** Sends a task's output about every `everyMs` (the first time after `firstMs`) and aborts it when the kill flag is set; with no output (a foreground run's), only the flag is looked at. */
function startPump(records: RunRecordClient, collector: () => OutputCollector | null, ctrl: AbortController, everyMs: number, firstMs = everyMs) {
  let stopped = false;
  let wake = () => {};
  let seq = 0;
  // A chunk whose upload failed is sent again with the same number (the record ignores repeats).
  let unsent: { seq: number; text: string } | null = null;
  const send = async (checkKill: boolean) => {
    if (!unsent) {
      const text = collector()?.take() ?? "";
      if (text) unsent = { seq: ++seq, text };
    }
    let kill = false;
    if (unsent) kill = (await records.output(unsent.seq, unsent.text)).kill;
    else if (checkKill && !ctrl.signal.aborted) kill = await records.killRequested();
    unsent = null;
    if (kill && checkKill) ctrl.abort();
  };
  let wait = firstMs;
  const loop = (async () => {
    while (!stopped) {
      await new Promise<void>((r) => {
        const t = setTimeout(r, wait);
        wait = everyMs;
        wake = () => {
          clearTimeout(t);
          r();
        };
      });
      if (!stopped) await send(true).catch(() => {});
    }
  })();
  return {
    /** Stops the loop and sends the rest of the output (before the result is stored). */
    async stop() {
      stopped = true;
      wake();
      await loop;
      for (let i = 0; i < 3; i++) {
        try {
          await send(false);
          return;
        } catch {
          await sleep(500);
        }
      }
    },
  };
}

/**
 * The foreground kill check: the run's kill flag looked at every FOREGROUND_KILL_EVERY_MS once it has run
 * FOREGROUND_KILL_AFTER_MS; `ctrl` aborts once it is set. A foreground run's (its call sets the flag once the
 * call's key is gone: lib/exec/runs.ts) and a live sandbox's command's (the sync server answers it set once the
 * sandbox's key is gone: lib/sync/starting-key.ts); either's once its workspace is deleted (lib/sync/runs.ts killAsked).
 */
export function watchKillFlag(records: RunRecordClient, ctrl: AbortController): { stop(): Promise<void> } {
  return startPump(records, () => null, ctrl, FOREGROUND_KILL_EVERY_MS, FOREGROUND_KILL_AFTER_MS);
}

/** What execute did: ran the command (its answer), or stopped before it because the run was another attempt's. */
type Executed = { ran: true; res: ExecResponse } | { ran: false; claim: Extract<ClaimOutcome, { claimed: false }> };

/**
 * Runs the command once its claim is ours. The run starts at once, and its first request (the
 * manifest) carries the claim (riding-claim.ts): what comes before the command (the manifest, the
 * workspace's download) only reads, and the command itself waits for the claim (RunHooks.claimed).
 * Not ours: nothing ran, the record is left alone.
 */
async function execute(task: boolean, records: RunRecordClient, run: (hooks: RunHooks) => Promise<RunResult>, opts: OnceOptions): Promise<Executed> {
  // The claim rides on the run's manifest request (riding-claim.ts), or goes alone where nothing carries it.
  const ride = new RidingClaim(records, task);
  const claim = ride.outcome;
  const ctrl = new AbortController();
  const abort = () => ctrl.abort();
  opts.signal?.addEventListener("abort", abort, { once: true });
  if (opts.signal?.aborted) abort();
  let started = false;
  let collector: OutputCollector | null = null;
  let pump: ReturnType<typeof startPump> | null = null;
  let claimedAt = 0;
  const claimed = claim.then((c) => {
    if (c.claimed && c.kill) abort(); // killed before it started: the sandbox stops it at once, nothing is written back
    if (c.claimed && task) pump = startPump(records, () => collector, ctrl, opts.pumpMs ?? 1000);
    // A foreground run is killed by its call once the call's key is gone (lib/exec/runs.ts): its flag is looked at from 4 s on.
    else if (c.claimed) pump = watchKillFlag(records, ctrl);
    if (c.claimed) claimedAt = Date.now();
    return c;
  });
  // The last look before a foreground run's write-back (when it ran long enough to be killed at all): a flag set since the pump's last look stops it.
  const killedBeforeWriteBack = async () => {
    if (task || !claimedAt || Date.now() - claimedAt < FOREGROUND_KILL_AFTER_MS) return ctrl.signal.aborted;
    return ctrl.signal.aborted || (await records.killRequested().catch(() => false));
  };
  const ours = claimed.then((c) => c.claimed);
  ours.catch(() => {}); // a failed claim is answered below, after the run stopped (it may stop before asking)
  const isOurs = () => (ride.alone(), ours);
  let res: ExecResponse;
  try {
    res = { ok: true, result: await run({ signal: ctrl.signal, claim: ride, claimed: isOurs, onStart: (c) => ((started = true), (collector = c)), killedBeforeWriteBack }) };
  } catch (e) {
    res = errorOf(e);
  } finally {
    opts.signal?.removeEventListener("abort", abort);
  }
  ride.alone(); // a run that stopped before its manifest request: the claim goes alone (a retry may find a result to answer)
  const c = await claimed; // throws what the claim threw: the run never started its command then
  if (!c.claimed) return { ran: false, claim: c };
  await (pump as ReturnType<typeof startPump> | null)?.stop();
  if (!task && !started) {
    // The command never ran (e.g. the workspace could not be fetched): a retry may run it.
    await records.release().catch(() => {});
    return { ran: true, res };
  }
  for (let i = 0; i < 3; i++) {
    try {
      await records.finish(res);
      break;
    } catch {
      await sleep(500 * (i + 1));
    }
  }
  return { ran: true, res };
}

/**
 * Runs `run` once per run id: claims the run, runs it and stores the answer; or answers what
 * the attempt holding the claim answered (or will: see waitForEarlier).
 */
export async function runOnce(runId: string, task: boolean, records: RunRecordClient, run: (hooks: RunHooks) => Promise<RunResult>, opts: OnceOptions = {}): Promise<ExecResponse> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const done = await execute(task, records, run, opts);
    if (done.ran) return done.res;
    const c = done.claim;
    if (c.result) return c.result;
    if (!c.claim) continue; // released meanwhile: claim again
    // A task is started by one asynchronous event; a repeated event (Lambda retries them) has nothing to add.
    if (task) return { ok: false, error: { code: "CONFLICT", message: `Task ${runId} is already running; this invocation is a repeat and did nothing.`, details: { task_id: runId } } };
    const answer = await waitForEarlier(records, c.claim, runId, opts.claimWaitMs ?? 30_000);
    if (answer !== "released") return answer;
  }
  return stillRunning(runId, null);
}

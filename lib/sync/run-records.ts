/**
 * Run records: what makes a run happen once across execution environments, and what lets
 * background tasks work where a runner cannot outlive its invocation (AWS Lambda). One record
 * per run, under the workspace's private prefix (never visible to the tools):
 *
 *   x/runs/<run id>/task.json    API     a background task was started (its deadline)
 *                   claim.json   runner  the run is taken (If-None-Match: *): RunClaim
 *                   out/<seq>    runner  output chunks of a background task, about one a second (250 ms when streamed: stream-run.ts)
 *                   result.json  runner  the final ExecResponse (created once)
 *                   kill         API     kill_shell's flag, or a call's whose key is gone; the runner checks it about every second
 *                   billed       both    a streamed run whose caller left was billed (create-only: by the caller or the sync server, once);
 *                                        a metered run whose workspace was deleted under it was billed (the sync server, lib/sync/runs.ts: its one object left there);
 *                                        alone, under a run id made of a live sandbox's generation: its end, or its final write-back, was billed (lib/exec/live/markers.ts)
 *                   cursor.json  API     the last chunk bash_output handed out
 *
 * The run id comes from the call's idempotency key (runIdFor), so a retried invocation finds
 * the claim wherever it lands. The runner reaches its record only through the sync API
 * (lib/sync/runs.ts; the run is fixed by its token); the API reads and writes it directly
 * (lib/exec/: runForeground in runs.ts; startTask, pollTask, killTask in tasks.ts). A foreground run's record is deleted once the
 * API has its answer; a background task's (a few small objects, its output chunks are deleted
 * as bash_output hands them out) is deleted 24 h after it ended (housekeepRuns) by the
 * housekeeping of a later task start and by the scheduled tick (lib/runtime/housekeeping.ts), which
 * also collects a foreground record its isolate died before deleting. Bundles for Workers.
 */
import { ToolError } from "../shared/errors.js";
import { sha256Hex } from "../shared/hash.js";
import { runPrefix } from "../layout/paths.js";
import { isConditionFailed, type StorageDriver } from "../storage/types.js";
import { readJson } from "../storage/json.js";
import type { ExecResponse, RunClaim, RunRecordClient } from "./types.js";

/** How long past its timeout a run may still report (materialize + write-back); also the sync token's margin. */
export const RUN_MARGIN_MS = 15 * 60 * 1000;
export const JSON_TYPE = "application/json";
/**
 * A foreground run's runner asks its kill check (its kill flag, set by the call once its key is gone: lib/exec/runs.ts;
 * or its workspace deleted: lib/sync/runs.ts killAsked) every
 * FOREGROUND_KILL_EVERY_MS once it has run FOREGROUND_KILL_AFTER_MS, and once more before its write-back after that.
 * The call learns of a revoked key no sooner than 5 s in (lib/run/key-watch.ts KEY_WATCH_MS), so a shorter run asks nothing.
 */
export const FOREGROUND_KILL_AFTER_MS = 4_000;
export const FOREGROUND_KILL_EVERY_MS = 1_000;

/** The run id of a call: "r" + 15 hex digits of SHA-256(tenant, workspace, key). Same as infra/container/runner.ts runIdOf. */
export async function runIdFor(tenant: string, workspace: string, idempotencyKey: string): Promise<string> {
  return "r" + (await sha256Hex(`${tenant}\0${workspace}\0${idempotencyKey}`)).slice(0, 15);
}

export interface TaskMarker {
  task_id: string;
  created_at: number;
  deadline: number;
  /** The starting call's undo id: the task's write-back is journaled under it (lib/sync/journal.ts). */
  call_id?: string;
}

/** The objects of one run's record under its prefix (runPrefix). */
export const keysOf = (prefix: string) => ({
  task: `${prefix}task.json`,
  claim: `${prefix}claim.json`,
  result: `${prefix}result.json`,
  kill: `${prefix}kill`,
  billed: `${prefix}billed`,
  cursor: `${prefix}cursor.json`,
  out: `${prefix}out/`,
});
export type RunKeys = ReturnType<typeof keysOf>;



/** Create-only write; false when the object already exists. */
export async function createOnly(driver: StorageDriver, key: string, body: string, contentType = JSON_TYPE): Promise<boolean> {
  try {
    await driver.put(key, body, { ifNoneMatch: "*", contentType });
    return true;
  } catch (e) {
    if (isConditionFailed(e)) return false;
    throw e;
  }
}

// ---------------------------------------------------------------- the runner's side

/** A run's record in storage, as the sync routes serve it. */
export interface StoredRunRecords extends RunRecordClient {
  /** finish, saying whether this call stored the result (false: one was there already, and stays). */
  storeResult(res: ExecResponse): Promise<boolean>;
  /** The claim alone (one read). */
  readClaim(): Promise<RunClaim | null>;
  /** Takes the run's one billing (create-only): true for the first to ask (a streamed run whose caller left; a run whose workspace went: lib/sync/runs.ts). */
  billOnce(): Promise<boolean>;
}

/**
 * A run's record over a StorageDriver: what the sync routes serve (with the run and deadline
 * taken from the token) and what in-process runners use in tests.
 */
export function storageRunRecords(driver: StorageDriver, tenant: string, workspace: string, idempotencyKey: string, deadline: number): StoredRunRecords {
  let at: Promise<{ runId: string; k: RunKeys }> | null = null;
  const record = () => (at ??= runIdFor(tenant, workspace, idempotencyKey).then((runId) => ({ runId, k: keysOf(runPrefix(tenant, workspace, runId)) })));
  const readClaim = async () => (await readJson<RunClaim>(driver, (await record()).k.claim))?.value ?? null;
  const state = async () => {
    const { k } = await record();
    const [claim, result] = await Promise.all([readClaim(), readJson<ExecResponse>(driver, k.result)]);
    return { claim, result: result?.value ?? null };
  };
  const killRequested = async () => (await driver.head((await record()).k.kill)) !== null;
  const storeResult = async (res: ExecResponse) => createOnly(driver, (await record()).k.result, JSON.stringify(res));
  return {
    async claim({ task, attempt }) {
      const { runId, k } = await record();
      const claim: RunClaim = { run_id: runId, task, started_at: Date.now(), deadline, ...(attempt ? { attempt } : {}) };
      const ours = async () => ({ claimed: true as const, kill: task && (await killRequested()) }); // only tasks can be killed
      if (await createOnly(driver, k.claim, JSON.stringify(claim))) return ours();
      const found = await state();
      // The same attempt asking again (its answer lost, or its carried claim sent alone): still its own. A retried invocation is another attempt.
      if (attempt && found.claim?.attempt === attempt && !found.result) return ours();
      return { claimed: false, ...found };
    },
    state,
    async output(seq, text) {
      if (!Number.isInteger(seq) || seq < 1 || seq > 99_999_999) throw new ToolError("INVALID_ARGUMENT", "Output chunk numbers run from 1 to 99999999.");
      await createOnly(driver, `${(await record()).k.out}${String(seq).padStart(8, "0")}`, text, "text/plain; charset=utf-8");
      return { kill: await killRequested() };
    },
    killRequested,
    storeResult,
    readClaim,
    billOnce: async () => createOnly(driver, (await record()).k.billed, "", "text/plain"),
    async finish(res) {
      await storeResult(res);
    },
    async release() {
      const { k } = await record();
      if (!(await driver.head(k.result))) await driver.delete(k.claim);
    },
  };
}

/**
 * A foreground run over its record (lib/sync/run-records.ts), and what the model is told of a run
 * stopped for its disk quota. Bundles for Workers.
 */
import { runPrefix } from "../layout/paths.js";
import { afterAnswer, type WaitUntil } from "../shared/after-answer.js";
import type { StorageDriver } from "../storage/types.js";
import { keysOf, runIdFor } from "../sync/run-records.js";
import type { Executor, RunRequest, RunResult } from "./types.js";
import type { Caller } from "../limits/store.js";

/**
 * Runs a foreground command. Its record (claim + result) only guards against retried
 * invocations of this one call, whose key is never used again: once the answer is in hand it
 * is deleted, after the response when the runtime gives `waitUntil` (Workers). A run that
 * answered an error keeps its record: a CONFLICT names it for bash_output.
 */
export async function runForeground(storage: StorageDriver, executor: Executor, req: RunRequest, waitUntil?: WaitUntil, caller?: Caller): Promise<RunResult> {
  const result = await executor.run(req, caller);
  const k = keysOf(runPrefix(req.tenant, req.workspace, await runIdFor(req.tenant, req.workspace, req.idempotency_key)));
  // A storage hiccup: an orphan record, not a failed call.
  await afterAnswer(waitUntil, "run record's delete", () => storage.delete([k.claim, k.result]).catch(() => {}), "await");
  return result;
}

/** What the model is told about a run stopped for adding more than `diskMb` MiB to the workspace (bash, run_code, bash_output). */
export const quotaMessage = (diskMb: number): string =>
  `The command was stopped: it added more than ${diskMb} MiB to the workspace (each file, directory or link it made counting 4 KiB more than its size), and none of its file changes were written back. Write less, make fewer files (an archive holds many as one), or delete what is not needed in the same command.`;

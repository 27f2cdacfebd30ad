/**
 * A foreground run over its record (lib/sync/run-records.ts), the kill flag a call sets on its run,
 * and what the model is told of a run stopped for its disk quota. Bundles for Workers.
 */
import { runPrefix } from "../layout/paths.js";
import { afterAnswer, finishAfterAnswer, type WaitUntil } from "../shared/after-answer.js";
import type { StorageDriver } from "../storage/types.js";
import { keysOf, runIdFor, type RunKeys } from "../sync/run-records.js";
import type { Executor, RunRequest, RunResult } from "./types.js";
import type { Caller } from "../limits/store.js";
import { ToolError } from "../shared/errors.js";
import { workspaceClaims } from "../sync/token.js";
import { workspaceAsMinted } from "../sync/workspace-instance.js";

/**
 * Sets a run's kill flag: at its next check the runner kills every process and writes nothing back. Started at
 * once (the flag stops the command as soon as the runner sees it) and kept going after the answer (`waitUntil`).
 */
export async function setKillFlag(storage: StorageDriver, k: Pick<RunKeys, "kill">, waitUntil?: WaitUntil): Promise<void> {
  const put = storage.put(k.kill, "kill", { contentType: "text/plain" });
  finishAfterAnswer(waitUntil, "run's kill flag", put.catch(() => {}));
  await put;
}

/**
 * Runs a foreground command. Its record (claim + result) only guards against retried
 * invocations of this one call, whose key is never used again: once the answer is in hand it
 * is deleted, after the response when the runtime gives `waitUntil` (Workers). A run that
 * answered an error keeps its record: a CONFLICT names it for bash_output.
 *
 * `keyGone` (the call's key revoked or expired: lib/run/key-watch.ts): the call stops waiting and sets the run's
 * kill flag, which its runner looks at every second once it has run 4 s (FOREGROUND_KILL_AFTER_MS) and before its
 * write-back: the command is killed and nothing of it is written back. The call throws RunKilled (with the call's
 * undo id, `callId`), which the key watch answers as the key_gone refusal.
 */
export async function runForeground(storage: StorageDriver, executor: Executor, req: RunRequest, waitUntil?: WaitUntil, caller?: Caller, keyGone?: AbortSignal, callId?: string): Promise<RunResult> {
  const k = async () => keysOf(runPrefix(req.tenant, req.workspace, await runIdFor(req.tenant, req.workspace, req.idempotency_key)));
  // A storage hiccup: an orphan record, not a failed call.
  const drop = async (keys: (r: RunKeys) => string[]) => storage.delete(keys(await k())).catch(() => {});
  const running = executor.run(req, caller);
  if (!keyGone) {
    const result = await running;
    await afterAnswer(waitUntil, "run record's delete", () => drop((r) => [r.claim, r.result]), "await");
    return result;
  }
  let stop = () => {};
  const gone = new Promise<"gone">((resolve) => {
    stop = () => resolve("gone");
    if (keyGone.aborted) stop();
    else keyGone.addEventListener("abort", stop, { once: true });
  });
  try {
    const first = await Promise.race([running, gone]);
    if (first !== "gone") {
      await afterAnswer(waitUntil, "run record's delete", () => drop((r) => [r.claim, r.result]), "await");
      return first;
    }
  } finally {
    keyGone.removeEventListener("abort", stop);
  }
  await setKillFlag(storage, await k(), waitUntil);
  // The run ends killed (or already ended); its concurrent_runs slot frees then, its record goes with it.
  finishAfterAnswer(waitUntil, "killed run's end", running.then(() => drop((r) => [r.claim, r.result, r.kill]), () => {}));
  throw new RunKilled(callId);
}

/**
 * Thrown by a foreground run's call that killed its run because the call's key is gone (runForeground; runStreamed with
 * `keyGone`): its kill flag was set before the runner's write-back, so the command's changes in the sandbox are
 * dropped, unless that write-back was already under way (then it lands, journaled under `call_id`). Never the model's
 * text: the key watch turns it into the key_gone refusal that says so (lib/run/key-watch.ts keyGoneError).
 */
export class RunKilled extends Error {
  constructor(readonly call_id?: string) {
    super("The command was killed: the call's key is gone.");
    this.name = "RunKilled";
  }
}

/** What the model is told about a run stopped for adding more than `diskMb` MiB to the workspace (bash, run_code, bash_output). */
export const quotaMessage = (diskMb: number): string =>
  `The command was stopped: it added more than ${diskMb} MiB to the workspace (each file, directory or link it made counting 4 KiB more than its size), and none of its file changes were written back. Write less, make fewer files (an archive holds many as one), or delete what is not needed in the same command.`;

/** The reason a call's error names when its workspace was deleted while it ran (its audit entry goes with the workspace's log: lib/run/audit/tool-call.ts). */
export const WORKSPACE_DELETED = "workspace_deleted";

/** A workspace as a call holds it: its id and the instance (its record's created_at) it was opened as. */
type HeldWorkspace = { readonly tenant: string; readonly id: string; readonly instance?: string | undefined };

/** Whether the workspace is gone (deleted, or made again under its id: another instance), by the sync server's rule (workspaceAsMinted); one read of its record. A failed read says no. */
export async function workspaceGone(storage: StorageDriver, ws: HeldWorkspace): Promise<boolean> {
  return (await workspaceAsMinted(storage, workspaceClaims(ws)).catch(() => undefined)) === null;
}

/** What a foreground call answers when its workspace was deleted while its command ran (plain: unlessWorkspaceGone; streamed: stream-run.ts). */
export const deletedWhileRunning = (id: string): ToolError =>
  new ToolError("NOT_FOUND", `Workspace ${id} was deleted while the command ran: the command was killed and nothing of it was written back. Create the workspace again (POST /v1/workspaces) or run the command in another one.`, { workspace: id, reason: WORKSPACE_DELETED });

/**
 * A foreground run's result, unless its workspace was deleted (or made again under its id) while it ran: its
 * runner's kill check found it gone (lib/sync/runs.ts killAsked), killed the command and wrote nothing back.
 * One read of the workspace record, for a killed result only (a run killed for its key gone never answers).
 */
export async function unlessWorkspaceGone(storage: StorageDriver, ws: HeldWorkspace, result: RunResult): Promise<RunResult> {
  if (result.killed && (await workspaceGone(storage, ws))) throw deletedWhileRunning(ws.id);
  return result;
}

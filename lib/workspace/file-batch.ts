/**
 * A batch of file changes that lands whole or not at all (apply_patch across files).
 *
 * The caller plans every change against versions it has read; each step here is conditional on
 * that version (If-Match the etag read, or create-only). When a step fails, the steps already
 * done are undone in reverse, each conditional on the version this batch wrote, so a file another
 * call changed meanwhile is never overwritten; the error says what could not be restored.
 */
import { isToolError, ToolError } from "../shared/errors.js";
import type { Workspace } from "./workspace.js";
import type { FileInfo } from "../layout/files.js";

export type FileStep =
  /** Write `bytes` at `path`: over exactly `etag`, or create-only when `etag` is null (`previous` restores it). */
  | { op: "put"; path: string; bytes: Uint8Array; etag: string | null; previous: Uint8Array | null }
  /** Delete `path` if it is still `etag` (`previous` restores it). */
  | { op: "delete"; path: string; etag: string; previous: Uint8Array };

export interface BatchResult {
  /** The version each written path now has. */
  written: Map<string, FileInfo>;
}

/**
 * Runs the steps in order. On a failure, undoes what was done and throws the step's error, with
 * `details.rolled_back` (paths restored) and `details.not_restored` (paths that changed meanwhile).
 */
export async function commitBatch(ws: Workspace, steps: readonly FileStep[]): Promise<BatchResult> {
  const done: { step: FileStep; info: FileInfo | null }[] = [];
  const written = new Map<string, FileInfo>();
  for (const step of steps) {
    try {
      if (step.op === "put") {
        // record: the session knows what it wrote (the version's writer), so it may edit it next without a read.
        const info = await ws.put(step.path, step.bytes, { ...(step.etag === null ? { create: true } : { ifMatch: step.etag }), record: true });
        written.set(step.path, info);
        done.push({ step, info });
      } else {
        await ws.delete(step.path, step.etag);
        written.delete(step.path);
        done.push({ step, info: null });
      }
    } catch (err) {
      const { restored, failed } = await undo(ws, done);
      throw failure(err, step.path, restored, failed);
    }
  }
  return { written };
}

async function undo(ws: Workspace, done: { step: FileStep; info: FileInfo | null }[]): Promise<{ restored: string[]; failed: { path: string; reason: string }[] }> {
  const restored: string[] = [];
  const failed: { path: string; reason: string }[] = [];
  for (const { step, info } of [...done].reverse()) {
    try {
      if (step.op === "delete") await ws.put(step.path, step.previous, { create: true });
      else if (step.previous === null) await ws.delete(step.path, info!.etag);
      else await ws.put(step.path, step.previous, { ifMatch: info!.etag });
      restored.push(step.path);
    } catch (e) {
      failed.push({ path: step.path, reason: isToolError(e) ? e.code : "INTERNAL" });
    }
  }
  return { restored, failed };
}

function failure(err: unknown, path: string, restored: string[], failed: { path: string; reason: string }[]): unknown {
  if (!isToolError(err)) return err;
  const tail = failed.length
    ? ` The files already changed were put back except ${failed.map((f) => f.path).join(", ")}, which another call changed meanwhile (they keep that call's version); read them before retrying.`
    : restored.length
      ? ` The ${restored.length} file${restored.length === 1 ? "" : "s"} already changed by this patch ${restored.length === 1 ? "was" : "were"} put back: nothing was changed.`
      : " Nothing was changed.";
  return new ToolError(err.code, `${err.message}${tail}`, { ...err.details, failed_path: path, rolled_back: restored, not_restored: failed });
}

/**
 * A write-back's deletes looked at before any of them is applied (POST /v1/sync/delete/check, a body
 * as a delete batch's: `{files: [{path, etag}]}`, up to DELETE_BATCH_MAX_FILES): for each file,
 * whether it is still the version the run started from (`current`), another version (`changed`) or
 * no file (`gone`). Nothing is written. The runner asks it before it takes a write-back's hold
 * (infra/container/writeback-held.ts), so the hold credits only deletes that can free their room: a
 * delete refused because its file changed during the command used to be credited, found out only
 * after the other deletes had landed, and a refused fill then left them applied while none of the
 * write-back's files was written. One HEAD per file, PARALLEL at a time; one request per batch.
 */
import { ToolError } from "../shared/errors.js";
import { normalizeFilePath } from "../layout/paths.js";
import type { FileInfo } from "../layout/files.js";
import { DELETE_BATCH_MAX_FILES } from "./put-batch.js";

/** Where a file to be deleted stands now, against the version the run started from. */
export type DeleteCheck = "current" | "changed" | "gone";

const PARALLEL = 8;

/** The files of a check request: canonical paths and their etags (INVALID_ARGUMENT naming what is wrong). */
function checkItems(body: unknown): { path: string; etag: string }[] {
  const files = (body as { files?: unknown } | null)?.files;
  if (!Array.isArray(files) || files.length < 1 || files.length > DELETE_BATCH_MAX_FILES) throw new ToolError("INVALID_ARGUMENT", `files must be an array of 1 to ${DELETE_BATCH_MAX_FILES} {path, etag}.`);
  return files.map((f) => {
    const etag = (f as { etag?: unknown } | null)?.etag;
    if (typeof etag !== "string" || etag === "") throw new ToolError("INVALID_ARGUMENT", "Each file of a delete check needs its etag (the version the run started from).");
    return { path: normalizeFilePath((f as { path?: unknown } | null)?.path), etag };
  });
}

/** The server's answer: `{files: [{path, state}]}` in the order asked. `head`: the workspace's (the token's) merged view. */
export async function checkDeletes(head: (path: string) => Promise<FileInfo | null>, body: unknown): Promise<{ files: { path: string; state: DeleteCheck }[] }> {
  const items = checkItems(body);
  const states: DeleteCheck[] = new Array(items.length);
  for (let i = 0; i < items.length; i += PARALLEL) {
    await Promise.all(items.slice(i, i + PARALLEL).map(async (x, j) => {
      const now = await head(x.path);
      states[i + j] = !now ? "gone" : now.etag === x.etag ? "current" : "changed";
    }));
  }
  return { files: items.map((x, i) => ({ path: x.path, state: states[i]! })) };
}

/** The client's reading of the answer: a state per path asked, in order; a path without a readable answer counts as `changed` (credited nothing). */
export function deleteCheckResults(body: unknown, paths: string[]): DeleteCheck[] {
  const files = (body as { files?: unknown } | null)?.files;
  const got = Array.isArray(files) ? files : [];
  return paths.map((p, i) => {
    const a = got[i] as { path?: unknown; state?: unknown } | undefined;
    return a && a.path === p && (a.state === "current" || a.state === "gone") ? a.state : "changed";
  });
}

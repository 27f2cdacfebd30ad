/**
 * Explicit directories as the tools make and remove them: the marker (markers.ts) made or
 * removed, and what storage answered turned into the tool error that says what to do next.
 * Functions over the Workspace, which delegates to them. Every marker made or removed here is told
 * to the Workspace's undo journal (its etag before and after), whichever door called: a tool's
 * delete or move, the sync server's directory routes (bash), so undo puts empty directories back.
 * And to its storage quotas: a marker is one entry of files_per_workspace (0 bytes), charged before
 * it is made (QUOTA_EXCEEDED: nothing is written) and given back when it is removed or was there
 * already (docs/limits-and-quotas.md, "What counts").
 */
import { isToolError, ToolError } from "../shared/errors.js";
import { makeDirMarker, markerPlace, removeDirMarkers, type MakeDirResult } from "./markers.js";
import { headMarker } from "./lookups.js";
import type { DeleteItem } from "../layout/files.js";
import type { WorkspaceCore as Workspace } from "./workspace-types.js";

/** What one marker is to the storage quotas: one entry of files_per_workspace, no bytes. */
const MARKER = { files: 1, bytes: 0 };
const UNMARKED = { files: -1, bytes: 0 };

/** mkdir -p of `dir` (its ancestors are implied); ALREADY_EXISTS / NOT_A_DIRECTORY where a file stands. */
export async function makeDirectory(ws: Workspace, dir: string, opts: { placeChecked?: boolean }): Promise<{ created: boolean; etag: string }> {
  if (dir === "") throw new ToolError("INVALID_PATH", "The workspace root always exists; give a directory inside it, e.g. src.", { path: "/" });
  // The place is checked (reads only) beside the charge, as a file's create does: the charge's round trip costs no time of its own.
  const place = opts.placeChecked || !ws.quota ? null : markerPlace(ws.driver, ws.tenant, ws.id, dir);
  place?.catch(() => {}); // awaited below; a refused charge answers first
  try {
    await ws.quota?.charge(MARKER);
  } catch (e) {
    // Refused: a directory already explicit needs no room (mkdir -p of it again changes nothing; one HEAD, on this path only).
    if (!isToolError(e) || e.code !== "QUOTA_EXCEEDED") throw e;
    const there = await headMarker(ws, dir);
    if (there) return { created: false, etag: there.etag };
    throw new ToolError(e.code, e.message.replace("This change needs 1 more file", `The directory ${dir}/ needs 1 more entry (an explicit directory counts as a file)`), e.details);
  }
  let r: MakeDirResult;
  try {
    r = (await place) ?? (await makeDirMarker(ws.driver, ws.tenant, ws.id, dir, place ? { placeChecked: true } : opts));
  } catch (e) {
    await ws.quota?.settle(UNMARKED);
    throw e;
  }
  // Charged ahead, made by no one here (it was there, or a file stands there): given back.
  if (!(r.ok && r.created)) await ws.quota?.settle(UNMARKED);
  if (r.ok && r.created) ws.undo?.marked({ path: dir, before: null, after: r.etag });
  if (r.ok) return r;
  if ("gone" in r) throw new ToolError("CONFLICT", `${dir} was removed by another call while it was being made; retry.`, { path: dir });
  if (r.at === "path") throw new ToolError("ALREADY_EXISTS", `${dir} is a file; a directory cannot be made there. Choose another name, or delete the file first.`, { path: dir, type: "file" });
  throw new ToolError("NOT_A_DIRECTORY", `Cannot make ${dir}: ${r.file} is a file, not a directory.`, { path: dir, file: r.file });
}

/**
 * Removes markers, each only in the version given (null: whatever is there); the refused ones are kept.
 * A marker without a version is looked up first (+1 HEAD) and removed only in that one, as deleteFiles
 * does for files, when the removal is journaled or counted: one already gone is no change, and frees nothing.
 * `gone`: those already gone (another writer removed them: the entry they free was not this call's to give back).
 */
export async function deleteMarkers(ws: Workspace, dirs: readonly DeleteItem[]): Promise<{ refused: string[]; gone: string[] }> {
  let targets = dirs.map((d) => ({ dir: d.path, etag: d.etag }));
  const absent: string[] = [];
  if (ws.undo || ws.quota) {
    const known = await Promise.all(targets.map(async (t) => (t.etag !== null ? t : { dir: t.dir, etag: (await headMarker(ws, t.dir))?.etag ?? null })));
    targets = known.filter((t) => t.etag !== null);
    for (const t of known) if (t.etag === null) absent.push(t.dir);
  }
  const { refused, gone } = await removeDirMarkers(ws.driver, ws.tenant, ws.id, targets);
  for (const t of targets) if (!refused.includes(t.dir)) ws.undo?.marked({ path: t.dir, before: t.etag, after: null });
  // Each marker this call removed frees its entry (one another writer removed first was given back by that writer).
  const removed = targets.length - refused.length - gone.length;
  if (removed > 0) await ws.quota?.settle({ files: -removed, bytes: 0 });
  return { refused, gone: [...absent, ...gone] };
}

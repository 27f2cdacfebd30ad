/**
 * Explicit directories as the tools make and remove them: the marker (markers.ts) made or
 * removed, and what storage answered turned into the tool error that says what to do next.
 * Functions over the Workspace, which delegates to them.
 */
import { ToolError } from "../shared/errors.js";
import { makeDirMarker, removeDirMarkers } from "./markers.js";
import type { DeleteItem } from "../layout/files.js";
import type { WorkspaceCore as Workspace } from "./workspace-types.js";

/** mkdir -p of `dir` (its ancestors are implied); ALREADY_EXISTS / NOT_A_DIRECTORY where a file stands. */
export async function makeDirectory(ws: Workspace, dir: string, opts: { placeChecked?: boolean }): Promise<{ created: boolean; etag: string }> {
  if (dir === "") throw new ToolError("INVALID_PATH", "The workspace root always exists; give a directory inside it, e.g. src.", { path: "/" });
  const r = await makeDirMarker(ws.driver, ws.tenant, ws.id, dir, opts);
  if (r.ok) return r;
  if ("gone" in r) throw new ToolError("CONFLICT", `${dir} was removed by another call while it was being made; retry.`, { path: dir });
  if (r.at === "path") throw new ToolError("ALREADY_EXISTS", `${dir} is a file; a directory cannot be made there. Choose another name, or delete the file first.`, { path: dir, type: "file" });
  throw new ToolError("NOT_A_DIRECTORY", `Cannot make ${dir}: ${r.file} is a file, not a directory.`, { path: dir, file: r.file });
}

/** Removes markers, each only in the version given (null: whatever is there); the refused ones are kept. */
export async function deleteMarkers(ws: Workspace, dirs: readonly DeleteItem[]): Promise<{ refused: string[] }> {
  return { refused: await removeDirMarkers(ws.driver, ws.tenant, ws.id, dirs.map((d) => ({ dir: d.path, etag: d.etag }))) };
}

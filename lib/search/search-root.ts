/**
 * The root of a search (find, glob, grep): the workspace, a directory, or one only links make (no object
 * under it, yet a directory to ls and the listings: lib/workspace/links.ts). Bundles for Workers.
 */
import { readLinks } from "../layout/links.js";
import { ToolError } from "../shared/errors.js";
import type { SearchedWorkspace } from "./workspace-view.js";

/** Whether `dir`, which holds no object, is a directory all the same: one only links make (the links table read). */
export async function onlyLinksMake(ws: SearchedWorkspace, dir: string): Promise<boolean> {
  return [...(await readLinks(ws)).keys()].some((p) => p.startsWith(`${dir}/`));
}

/** The root of a search: "" or an existing directory (one only links make too; the table is read on a miss); NOT_FOUND or NOT_A_DIRECTORY otherwise. */
export async function requireDirectory(ws: SearchedWorkspace, root: string, tool: string): Promise<void> {
  if (root === "") return;
  const st = await ws.stat(root);
  if (!st && !(await onlyLinksMake(ws, root))) throw await ws.notFound(root, "Directory");
  if (st?.type === "file") throw new ToolError("NOT_A_DIRECTORY", `${root} is a file, not a directory. ${tool === "grep" ? "" : `Give a directory as path, or use read to open ${root}.`}`.trim(), { path: root });
}

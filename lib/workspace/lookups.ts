/**
 * What is at a path: a file's info (one HEAD), whether a directory is there (one LIST), an
 * explicit directory's marker, a file or NOT_FOUND / IS_DIRECTORY with a hint naming the closest
 * paths, and every file below a directory (walkFiles). Functions over the Workspace, which
 * delegates to them (as file-reads.ts does).
 */
import { ToolError } from "../shared/errors.js";
import { walkEntries } from "./entries.js";
import { similarPaths } from "./similar.js";
import type { FileInfo, Stat } from "../layout/files.js";
import type { WorkspaceCore as Workspace } from "./workspace-types.js";

export async function head(ws: Workspace, path: string): Promise<FileInfo | null> {
  if (path === "") return null;
  const o = await ws.driver.head(ws.key(path));
  return o ? ws.toInfo(o) : null;
}

export async function isDirectory(ws: Workspace, path: string): Promise<boolean> {
  if (path === "") return true;
  const r = await ws.driver.list({ prefix: `${ws.key(path)}/`, limit: 1 });
  return r.objects.length > 0 || r.prefixes.length > 0;
}

export async function headMarker(ws: Workspace, dir: string): Promise<{ etag: string } | null> {
  if (dir === "") return null;
  const o = await ws.driver.head(ws.markerKey(dir));
  return o ? { etag: o.etag } : null;
}

export async function hasEntries(ws: Workspace, dir: string): Promise<boolean> {
  const base = ws.dirPrefix(dir);
  const r = await ws.driver.list({ prefix: base, delimiter: "/", limit: 2 });
  return r.prefixes.length > 0 || r.objects.some((o) => o.key !== base);
}

export async function stat(ws: Workspace, path: string): Promise<Stat | null> {
  const [file, dir] = await Promise.all([ws.head(path), ws.isDirectory(path)]);
  if (file) return { type: "file", ...file };
  return dir ? { type: "directory", path } : null;
}

export async function requireFile(ws: Workspace, path: string): Promise<FileInfo> {
  const info = await ws.head(path);
  if (info) return info;
  if (await ws.isDirectory(path)) {
    throw new ToolError("IS_DIRECTORY", `${path || "/"} is a directory, not a file. Use ls to list it.`, { path });
  }
  throw await ws.notFound(path);
}

export async function notFound(ws: Workspace, path: string, what = "File"): Promise<ToolError> {
  const similar = await similarPaths(ws, path);
  const hint = similar.length ? ` Did you mean: ${similar.join(", ")}?` : " Use glob or ls to find it.";
  return new ToolError("NOT_FOUND", `${what} not found: ${path}.${hint}`, { path, similar });
}

/** Every file below a directory, page by page (bounded by maxFiles); markers are skipped. */
export async function* walkFiles(ws: Workspace, dir: string, maxFiles: number): AsyncGenerator<FileInfo> {
  let n = 0;
  for await (const e of walkEntries(ws, dir)) {
    if (e.type !== "file") continue;
    if (n++ >= maxFiles) return;
    yield e;
  }
}

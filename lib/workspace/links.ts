/**
 * The workspace's symlinks as the tools, import and export see them (docs/symlinks.md). They
 * live in the workspace's modes table (lib/layout/modes.ts; read and written by lib/layout/links.ts), never as file objects, so no bytes a
 * tenant writes can read as a link. A link's target is data: nothing here ever follows one in
 * storage; resolution is lexical, inside the workspace (link-resolve.ts).
 */
import { readLinks, type LinkStore } from "../layout/links.js";
import { ToolError } from "../shared/errors.js";
import { normalizeFilePath } from "../layout/paths.js";
import { resolveLinks } from "./link-resolve.js";
import type { WorkspaceCore as Workspace } from "./workspace-types.js";
import type { Stat } from "../layout/files.js";

/**
 * A new file refused because its path is a symlink, or lies below one (Workspace's place check,
 * file-writes.ts). Callers that open one file (lib/run/run-tool.ts) follow the link and try again;
 * any other caller answers this clear error.
 */
export class LinkOnPath extends ToolError {
  constructor(path: string, link: string, readonly links: ReadonlyMap<string, string>) {
    const target = links.get(link)!;
    super("SYMLINK_REFUSED", `${path} ${path === link ? "is" : "lies below"} the symlink ${link} -> ${target}: no file is made over a link. Write the link's target path instead, or change the link with bash.`, { path, link, target, reason: "is_link" });
  }
}

/**
 * The file a tool opens (its `opens` argument: read, write, edit, multi_edit, insert), through the
 * workspace's links, asked only when the tool missed (NOT_FOUND: no file at the path) or would make
 * a file over a link (LinkOnPath), so a call on a plain file costs nothing more. A path that leads
 * inside the workspace is put in `args` and returned with its link (the result names both); a link
 * that leads outside, loops, or names no file (dangles) is refused (SYMLINK_REFUSED). null: no link
 * is on the path (the caller rethrows what it caught).
 */
export async function followOpenedLink(ws: LinkStore & Pick<Workspace, "head">, args: Record<string, unknown>, key: string, caught: unknown): Promise<{ link: string; target: string; path: string } | null> {
  const raw = args[key];
  if (typeof raw !== "string") return null;
  if (!(caught instanceof LinkOnPath) && !(caught instanceof ToolError && caught.code === "NOT_FOUND")) return null;
  let path: string;
  try {
    path = normalizeFilePath(raw);
  } catch {
    return null;
  }
  const links = caught instanceof LinkOnPath ? caught.links : await readLinks(ws);
  if (!links.size) return null;
  const r = resolveLinks(links, path);
  if ("outside" in r) {
    const { link, target, reason } = r.outside;
    const why = reason === "loop" ? "loops" : "leads outside the workspace";
    throw new ToolError("SYMLINK_REFUSED", `${path} goes through the symlink ${link} -> ${target}, which ${why}; tools never follow it. Use bash to work with the link, or give the path of a file inside the workspace.`, { path, link, target, reason });
  }
  if (!r.via) return null;
  if (r.endsInLink && !(await ws.head(r.path))) {
    throw new ToolError("SYMLINK_REFUSED", `${path} goes through the symlink ${r.via.link} -> ${r.via.target}, which leads to ${r.path}: no file is there (a dangling link). Create ${r.path} itself, or repoint the link with bash.`, { path, link: r.via.link, target: r.via.target, resolved: r.path, reason: "dangling" });
  }
  args[key] = r.path;
  return { ...r.via, path: r.path };
}

/**
 * A raw file route's NOT_FOUND at a link's path, said as such: the file routes never follow links
 * (the link table is read only on this miss). Anything else caught is returned as it was.
 */
export async function linkNotFollowed(ws: LinkStore, path: string, caught: unknown): Promise<unknown> {
  if (!(caught instanceof ToolError && caught.code === "NOT_FOUND")) return caught;
  const target = (await readLinks(ws)).get(path);
  if (target === undefined) return caught;
  return new ToolError("NOT_FOUND", `${path} is a symlink (-> ${target}), not a file: the file routes never follow links. Use the path of its target, or the read tool, which follows links inside the workspace.`, { path, target, reason: "is_link" });
}

/**
 * The links a listing of `dir` shows (ls, the raw listing), and the directories they imply (a
 * directory of links holds no file object, so storage lists none): recursive, every link below
 * `dir` and every directory between `dir` and one; else the links directly in it and its
 * subdirectories that hold links. The listings add the directories storage did not list.
 */
export function linksBelow(links: ReadonlyMap<string, string>, dir: string, recursive: boolean): { links: { path: string; target: string }[]; dirs: string[] } {
  const out: { path: string; target: string }[] = [];
  const dirs = new Set<string>();
  const pre = dir === "" ? "" : `${dir}/`;
  for (const [path, target] of links) {
    if (!path.startsWith(pre)) continue;
    const rel = path.slice(pre.length);
    const slash = rel.indexOf("/");
    if (recursive || slash < 0) out.push({ path, target });
    for (let at = slash; at >= 0; at = recursive ? rel.indexOf("/", at + 1) : -1) dirs.add(pre + rel.slice(0, at));
  }
  return { links: out, dirs: [...dirs] };
}

/** What a path names when links count (never followed): a file or directory of storage, a link, or a directory only links make. */
export type LinkAwareStat = Stat | { type: "symlink"; path: string; target: string };

/** `stat` (Workspace.stat of `path`), or else the link at `path`, or else the directory the links below `path` make; null: nothing. */
export function statWithLinks(stat: Stat | null, links: ReadonlyMap<string, string>, path: string): LinkAwareStat | null {
  if (stat) return stat;
  const target = links.get(path);
  if (target !== undefined) return { type: "symlink", path, target };
  const pre = `${path}/`;
  for (const p of links.keys()) if (path === "" || p.startsWith(pre)) return { type: "directory", path };
  return null;
}

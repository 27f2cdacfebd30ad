/**
 * The symlinks a move or copy carries (docs/symlinks.md): a link is moved or copied as a link,
 * its target as data and never followed (like mv and cp -P); a directory's links go with it,
 * their paths rebased and their targets unchanged. Planned with the files (transfer.ts), then set
 * in one merged delta of the modes table after every file landed (transfer-run.ts).
 */
import { ToolError } from "../shared/errors.js";
import { ancestorsOf, baseName, isWithin, joinPath } from "../layout/paths.js";
import { LinkOnPath } from "./links.js";
import { saveLinks } from "../layout/links.js";
import { resolveLinks } from "./link-resolve.js";
import type { Workspace } from "./workspace.js";
import type { FileInfo } from "../layout/files.js";

export interface PlannedLink {
  /** The source link's path, and where it goes. */
  from: string;
  to: string;
  /** The link's target, byte for byte (never followed). */
  target: string;
  /** Something (a file or a link) was at `to` and is replaced. */
  replaced: boolean;
}

/** The links of one call: those to make, files they replace, and target links that copied files replace. */
export interface PlannedLinks {
  items: PlannedLink[];
  /** Files at a link's new path (overwrite): each deleted only in the version planned, before the links are set. */
  replaceFiles: { path: string; etag: string }[];
  /** Links at the target where a copied file lands (the file replaces the link). */
  dropped: string[];
}

export const noLinks = (): PlannedLinks => ({ items: [], replaceFiles: [], dropped: [] });

/**
 * The source of a move or copy through the links on its way (its directories; a link that is the
 * source itself is moved as a link, never followed), as read, write and edit follow them: null when
 * no link is on the way. A link that leads outside the workspace or loops is refused
 * (SYMLINK_REFUSED): nothing is read or written through it. Lexical, on the links table alone.
 */
export function sourceThroughLinks(links: ReadonlyMap<string, string>, from: string): { path: string; link: string; target: string } | null {
  const dirs = ancestorsOf(from);
  if (!dirs.some((d) => links.has(d))) return null;
  const r = resolveLinks(links, dirs[0]!);
  if ("outside" in r) {
    const { link, target, reason } = r.outside;
    const why = reason === "loop" ? "loops" : "leads outside the workspace";
    throw new ToolError("SYMLINK_REFUSED", `${from} goes through the symlink ${link} -> ${target}, which ${why}; move and copy never follow it. Use bash to work with the link, or give the path of a file inside the workspace.`, { path: from, link, target, reason });
  }
  return { path: joinPath(r.path, baseName(from)), link: r.via!.link, target: r.via!.target };
}

/** The links strictly below `dir`. */
export function linkPathsBelow(links: ReadonlyMap<string, string>, dir: string): string[] {
  const pre = `${dir}/`;
  return [...links.keys()].filter((p) => p.startsWith(pre));
}

/** A link of the target tree standing where a path of the copy would go, or above it: nothing is made over or below a link. */
export function refuseBelowLink(links: ReadonlyMap<string, string>, dest: string, target: string): void {
  const above = ancestorsOf(dest).find((a) => isWithin(a, target) && links.has(a));
  if (above) throw new LinkOnPath(dest, above, links);
}

/**
 * Adds the links below the source directory `from` to a directory plan whose files are already
 * checked: each rebased below `target`, checked against the target tree (`existing` files,
 * `existingDirs`, and its links). A file of the plan landing on a target link drops that link.
 */
export function planDirectoryLinks(links: ReadonlyMap<string, string>, from: string, target: string, files: readonly { to: string }[], dirs: readonly { to: string }[], existing: ReadonlyMap<string, FileInfo>, existingDirs: ReadonlySet<string>, verb: string): PlannedLinks {
  const out = noLinks();
  const linkDirs = new Set<string>();
  for (const p of links.keys()) if (isWithin(p, target)) for (const a of ancestorsOf(p)) linkDirs.add(a);
  for (const f of files) {
    refuseBelowLink(links, f.to, target);
    if (linkDirs.has(f.to)) throw new ToolError("IS_DIRECTORY", `Cannot ${verb} to ${f.to}: ${f.to} is a directory of symlinks. Nothing was changed.`, { path: f.to });
    if (links.has(f.to)) out.dropped.push(f.to);
  }
  for (const d of dirs) if (d.to !== target) refuseBelowLink(links, `${d.to}/x`, target);
  for (const src of linkPathsBelow(links, from)) {
    const to = joinPath(target, src.slice(from.length + 1));
    if (existingDirs.has(to) || linkDirs.has(to)) throw new ToolError("IS_DIRECTORY", `Cannot ${verb} the symlink ${src} to ${to}: ${to} is a directory. Nothing was changed.`, { path: to, from: src });
    const blocking = ancestorsOf(to).find((a) => isWithin(a, target) && existing.has(a));
    if (blocking) throw new ToolError("NOT_A_DIRECTORY", `Cannot ${verb} the symlink ${src} to ${to}: ${blocking} is a file, not a directory. Nothing was changed.`, { path: to, file: blocking });
    refuseBelowLink(links, to, target);
    const file = existing.get(to);
    if (file) out.replaceFiles.push({ path: to, etag: file.etag });
    out.items.push({ from: src, to, target: links.get(src)!, replaced: file !== undefined || links.has(to) });
  }
  return out;
}

/**
 * Sets the planned links (after every file landed): the files they replace are deleted first,
 * each only in the version planned (FILE_MODIFIED if one changed since), then one merged delta
 * sets the new links, drops the target links that copied files replaced and, for a move, the source links.
 */
export async function applyLinks(ws: Workspace, p: PlannedLinks, move: boolean, verb: string): Promise<void> {
  if (p.replaceFiles.length) {
    const { refused } = await ws.deleteMany(p.replaceFiles);
    if (refused.length) {
      throw new ToolError("FILE_MODIFIED", `${refused.join(", ")} changed since the ${verb} was planned, so no symlink replaced ${refused.length === 1 ? "it" : "them"}. Read ${refused.length === 1 ? "it" : "them"}, then ${verb} again.`, { path: refused[0], changed: refused });
    }
  }
  const delta: Record<string, string | null> = {};
  for (const d of p.dropped) delta[d] = null;
  if (move) for (const l of p.items) delta[l.from] = null;
  for (const l of p.items) delta[l.to] = l.target;
  await saveLinks(ws, delta);
}

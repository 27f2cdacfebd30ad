/**
 * How the storage keys below a directory become entries: files, and directories (rolled-up
 * prefixes, and explicit ones: markers, lib/layout/paths.ts). The Workspace's list, scan, walk and
 * walkEntries are these functions: the one place a marker is read, and never as a file.
 */
import { ancestorsOf, baseName, isDirMarker, markerDir } from "../layout/paths.js";
import { compareKeys } from "../layout/key-order.js";
import { listPageAt } from "../layout/page-cursor.js";
import type { WalkEntry, FileInfo } from "../layout/files.js";
import type { ListEntry, ScanItem, WorkspaceCore as Workspace } from "./workspace-types.js";

/** An entry's name in a listing of `dir`: its base name, or recursive, its path below `dir` (files, directories and links alike). */
export const listedName = (dir: string, path: string, recursive: boolean): string => (recursive ? path.slice(dir === "" ? 0 : dir.length + 1) : baseName(path));

/** One page of `dir`'s listing; `cursor`: the one the previous page gave (lib/layout/page-cursor.ts: relative to `dir`, bound to it and to `recursive`). */
export async function listPage(ws: Workspace, dir: string, opts: { recursive?: boolean; cursor?: string; limit?: number }): Promise<{ entries: ListEntry[]; cursor?: string }> {
  const base = ws.dirPrefix(dir);
  const listing = opts.recursive ? { listing: "files, recursive", what: "the same directory, recursive=true" } : { listing: "files", what: "the same directory, not recursive" };
  const { result: r, cursor } = await listPageAt(ws.driver, { prefix: base, ...(opts.recursive ? {} : { delimiter: "/" }), limit: opts.limit ?? 1000 }, { ...listing, cursor: opts.cursor });
  const entries: ListEntry[] = [];
  for (const p of r.prefixes) {
    const path = ws.pathOf(p);
    entries.push({ name: listedName(dir, path, !!opts.recursive), path, type: "directory" });
  }
  const dirs = new Set<string>();
  for (const o of r.objects) {
    if (o.key === base) continue; // the directory's own marker
    const path = ws.pathOf(o.key);
    if (opts.recursive) {
      for (const a of ancestorsOf(path)) if (a.length > dir.length && !dirs.has(a)) dirs.add(a);
    }
    if (isDirMarker(o.key)) {
      dirs.add(path);
      continue;
    }
    entries.push({ name: listedName(dir, path, !!opts.recursive), path, type: "file", size: o.size, modified: o.modified.toISOString(), etag: o.etag });
  }
  for (const d of dirs) entries.push({ name: listedName(dir, d, !!opts.recursive), path: d, type: "directory" });
  return { entries, ...(cursor ? { cursor } : {}) };
}

export async function scanPage(ws: Workspace, dir: string, opts: { recursive?: boolean; after?: string; cursor?: string; limit?: number }): Promise<{ items: ScanItem[]; cursor?: string }> {
  const base = ws.dirPrefix(dir);
  const r = await ws.driver.list({
    prefix: base,
    ...(opts.recursive ? {} : { delimiter: "/" }),
    ...(opts.cursor ? { cursor: opts.cursor } : opts.after ? { startAfter: base + opts.after } : {}),
    limit: opts.limit ?? 1000,
  });
  const items: ScanItem[] = r.prefixes.map((p) => ({ rel: p.slice(base.length), dir: true }));
  for (const o of r.objects) {
    if (o.key === base) continue; // the directory's own marker is no entry of it
    const rel = o.key.slice(base.length);
    items.push(isDirMarker(rel) ? { rel, dir: true } : { rel, dir: false, size: o.size, modified: o.modified, etag: o.etag });
  }
  items.sort((a, b) => compareKeys(a.rel, b.rel));
  return { items, ...(r.cursor ? { cursor: r.cursor } : {}) };
}

export async function* walkEntries(ws: Workspace, dir: string, maxEntries = Infinity): AsyncGenerator<WalkEntry> {
  const root = ws.dirPrefix("");
  let cursor: string | undefined;
  let n = 0;
  do {
    const r = await ws.driver.list({ prefix: ws.dirPrefix(dir), limit: 1000, ...(cursor ? { cursor } : {}) });
    for (const o of r.objects) {
      if (n++ >= maxEntries) return;
      if (!isDirMarker(o.key)) yield { type: "file", ...ws.toInfo(o) };
      else if (o.key !== root) yield { type: "directory", path: markerDir(o.key.slice(root.length)), etag: o.etag };
    }
    cursor = r.cursor;
  } while (cursor);
}

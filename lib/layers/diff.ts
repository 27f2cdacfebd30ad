/**
 * What changed between two versions of a workspace: a checkpoint's manifest and another one, or
 * the current merged view. Files are compared by path, etag and execute bit (added, changed,
 * deleted), in path order, paged (`cursor` = the last path of the previous page); a changed or
 * added text file gets a bounded unified diff (lib/shared/diff.ts), a changed execute bit git's
 * "old mode / new mode" lines. An explicit empty directory (mkdir's, kept as an entry: a manifest's
 * `dir/`, the upper layer's marker) is a change too, `directory: true`, when it appears where the
 * other version has no such directory at all, or goes (git keeps no directories; our tree does).
 * A directory that merely gained or lost files is not one: its files are.
 */
import { shortDiff } from "../shared/diff.js";
import { ToolError } from "../shared/errors.js";
import { packKey } from "../layout/paths.js";
import type { StorageDriver, GetResult } from "../storage/types.js";
import { looksBinary } from "../shared/text.js";
import { compareKeys } from "../layout/key-order.js";
import type { WalkEntry } from "../layout/files.js";
import type { Manifest } from "./manifest.js";

/** Largest file whose text is diffed. */
const MAX_DIFF_BYTES = 256 * 1024;
/**
 * Changed-region lines (old + new) a page's minimal diffs may cover together: about two whole
 * regions of the largest one diff computes (lib/shared/diff.ts). Past it a change's diff is its
 * region as one block (linear), so a page's CPU stays bounded whatever its files are.
 */
export const PAGE_DIFF_LINES = 8_000;
/** Files compared at most (both sides listed in memory). */
export const MAX_DIFF_FILES = 200_000;

export interface VersionFile {
  path: string;
  etag: string;
  size: number;
  /** The execute bit (withModes). */
  exec?: boolean;
}

export interface Side {
  files: VersionFile[];
  /** Explicit directories, as "dir/" in storage order (what mkdir made, kept even while empty). */
  dirs?: string[];
  read(path: string): Promise<Uint8Array | null>;
}

export function manifestSide(storage: StorageDriver, tenant: string, m: Manifest): Side {
  return {
    files: m.entries.filter((e) => !e.path.endsWith("/")).map((e) => ({ path: e.path, etag: e.etag, size: e.size })),
    dirs: m.entries.filter((e) => e.path.endsWith("/")).map((e) => e.path),
    async read(path) {
      const e = m.find(path);
      if (!e) return null;
      if (e.size === 0 || e.pack < 0) return new Uint8Array(0);
      const r = await storage.get(packKey(tenant, m.packs[e.pack]!), { range: { offset: e.offset, length: e.size } });
      return r ? new Uint8Array(await new Response(r.body).arrayBuffer()) : null;
    },
  };
}

/** What a diff reads of the workspace (a Workspace, lib/workspace/workspace.ts, is one). */
export interface DiffedWorkspace {
  walkEntries(dir: string, maxEntries?: number): AsyncGenerator<WalkEntry>;
  get(path: string): Promise<GetResult | null>;
}

export async function currentSide(ws: DiffedWorkspace): Promise<Side> {
  const files: VersionFile[] = [];
  const dirs: string[] = [];
  for await (const f of ws.walkEntries("", 2 * MAX_DIFF_FILES + 1)) {
    if (f.type === "directory") {
      if (dirs.length >= MAX_DIFF_FILES) throw new ToolError("PAYLOAD_TOO_LARGE", `The workspace holds more than ${MAX_DIFF_FILES} explicit directories; diff two checkpoints instead (to=<checkpoint>).`, { max: MAX_DIFF_FILES });
      dirs.push(`${f.path}/`);
      continue;
    }
    if (files.length >= MAX_DIFF_FILES) throw new ToolError("PAYLOAD_TOO_LARGE", `The workspace holds more than ${MAX_DIFF_FILES} files; diff two checkpoints instead (to=<checkpoint>), or checkpoint now and diff against that.`, { max: MAX_DIFF_FILES });
    files.push({ path: f.path, etag: f.etag, size: f.size });
  }
  files.sort((a, b) => compareKeys(a.path, b.path));
  dirs.sort(compareKeys);
  return {
    files,
    dirs,
    async read(path) {
      const r = await ws.get(path);
      return r ? new Uint8Array(await new Response(r.body).arrayBuffer()) : null;
    },
  };
}

export interface DiffChange {
  path: string;
  status: "added" | "changed" | "deleted";
  from_etag?: string;
  to_etag?: string;
  size?: number;
  /** Unified diff of a text file (bounded); absent for binary or large files. */
  diff?: string;
  binary?: boolean;
  /** Set when the execute bit differs between the two versions (the bytes may be the same). */
  executable?: { from: boolean; to: boolean };
  /** An explicit empty directory that appeared or went (no etag, no size). */
  directory?: true;
}

const DIRECTORY_ETAG = "directory";

/** The first index of `sorted` (storage order) at or after `key`. */
function lowerBound(sorted: readonly string[], key: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compareKeys(sorted[mid]!, key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * A side's files with its directory entries to compare ("dir/", etag "directory"): each explicit
 * directory with nothing below it, and each one the `other` side holds empty that this side holds
 * too (with files below, or implied by them), so a directory that only filled up or emptied
 * compares equal and only one that appeared or went is a change.
 */
function withDirectories(side: Side, other: Side): VersionFile[] {
  const here = { paths: side.files.map((f) => f.path), dirs: side.dirs ?? [] };
  const there = { paths: other.files.map((f) => f.path), dirs: other.dirs ?? [] };
  const holds = (d: string) => here.dirs[lowerBound(here.dirs, d)] === d || hasBelow(here, d);
  const shown = new Set([...here.dirs.filter((d) => !hasBelow(here, d)), ...there.dirs.filter((d) => !hasBelow(there, d) && holds(d))]);
  if (shown.size === 0) return side.files;
  return [...side.files, ...[...shown].map((path) => ({ path, etag: DIRECTORY_ETAG, size: 0 }))].sort((a, b) => compareKeys(a.path, b.path));
}

/** Whether anything (a file, another explicit directory) lies below directory `d` ("dir/") on a side. */
function hasBelow(side: { paths: readonly string[]; dirs: readonly string[] }, d: string): boolean {
  if (side.paths[lowerBound(side.paths, d)]?.startsWith(d)) return true;
  const i = lowerBound(side.dirs, d);
  return (side.dirs[side.dirs[i] === d ? i + 1 : i]?.startsWith(d)) ?? false;
}

export async function diffVersions(from: Side, to: Side, opts: { cursor?: string; limit: number }): Promise<{ changes: DiffChange[]; cursor?: string }> {
  const a = withDirectories(from, to);
  const b = withDirectories(to, from);
  const changes: DiffChange[] = [];
  const fromSizes = new Map<string, number>(); // a changed file's size before, for the page's diffs
  let i = 0;
  let j = 0;
  const after = opts.cursor;
  while ((i < a.length || j < b.length) && changes.length <= opts.limit) {
    const x = a[i];
    const y = b[j];
    const c = !x ? 1 : !y ? -1 : compareKeys(x.path, y.path);
    const path = c <= 0 ? x!.path : y!.path;
    if (c <= 0) i++;
    if (c >= 0) j++;
    if (after !== undefined && compareKeys(path, after) <= 0) continue;
    if (path.endsWith("/")) {
      if (c !== 0) changes.push({ path, status: c < 0 ? "deleted" : "added", directory: true });
      continue;
    }
    if (c < 0) changes.push({ path, status: "deleted", from_etag: x!.etag });
    else if (c > 0) changes.push({ path, status: "added", to_etag: y!.etag, size: y!.size });
    else if (x!.etag !== y!.etag || !x!.exec !== !y!.exec) {
      fromSizes.set(path, x!.size);
      changes.push({ path, status: "changed", from_etag: x!.etag, to_etag: y!.etag, size: y!.size, ...(!x!.exec !== !y!.exec ? { executable: { from: !!x!.exec, to: !!y!.exec } } : {}) });
    }
  }
  const more = changes.length > opts.limit;
  const page = changes.slice(0, opts.limit);
  const budget = { lines: PAGE_DIFF_LINES };
  for (let k = 0; k < page.length; k += 8) {
    await Promise.all(page.slice(k, k + 8).map(async (ch) => {
      const fromSize = fromSizes.get(ch.path) ?? 0;
      if (ch.directory) return;
      const modeLines = ch.executable ? `old mode ${gitMode(ch.executable.from)}\nnew mode ${gitMode(ch.executable.to)}` : "";
      if (modeLines) ch.diff = modeLines;
      if (ch.from_etag === ch.to_etag) return;
      if (ch.status === "deleted" || (ch.size ?? 0) > MAX_DIFF_BYTES || fromSize > MAX_DIFF_BYTES) return;
      const [before, now] = await Promise.all([ch.status === "changed" ? from.read(ch.path) : Promise.resolve(new Uint8Array(0)), to.read(ch.path)]);
      if (!before || !now) return;
      if (looksBinary(before.subarray(0, 8192), before.length <= 8192) || looksBinary(now.subarray(0, 8192), now.length <= 8192)) {
        ch.binary = true;
        return;
      }
      const dec = new TextDecoder();
      ch.diff = (modeLines ? `${modeLines}\n` : "") + shortDiff(ch.path, dec.decode(before), dec.decode(now), 3, 80, { budget });
    }));
  }
  // A directory's path is shown without its "/" (the cursor keeps it: its place in storage order).
  const cursor = more ? page[page.length - 1]!.path : undefined;
  for (const ch of page) if (ch.directory) ch.path = ch.path.slice(0, -1);
  return { changes: page, ...(cursor !== undefined ? { cursor } : {}) };
}

const gitMode = (exec: boolean) => (exec ? "100755" : "100644");

/**
 * A side with what the modes table holds of it (x/modes.json: a checkpoint's `exec` and `links`, or
 * the workspace's readModes): each executable file is marked `exec`; each symlink (docs/symlinks.md)
 * is an entry whose etag is "symlink:<target>" (a repointed link is changed) and whose text is
 * "symlink -> <target>"; a link stands over a file at its path, as in the runner's tree.
 */
export function withModes(side: Side, modes: { exec?: readonly string[] | undefined; links?: Readonly<Record<string, string>> | undefined }): Side {
  const exec = new Set(modes.exec ?? []);
  const marked = exec.size ? { ...side, files: side.files.map((f) => (exec.has(f.path) ? { ...f, exec: true } : f)) } : side;
  return withLinks(marked, modes.links);
}

function withLinks(side: Side, links: Readonly<Record<string, string>> | undefined): Side {
  const byPath = new Map(Object.entries(links ?? {}));
  if (!byPath.size) return side;
  const files = [...side.files.filter((f) => !byPath.has(f.path)), ...[...byPath].map(([path, t]) => ({ path, etag: `symlink:${t}`, size: 0 }))];
  files.sort((a, b) => compareKeys(a.path, b.path));
  return { ...side, files, read: async (path) => (byPath.has(path) ? new TextEncoder().encode(`symlink -> ${byPath.get(path)}\n`) : side.read(path)) };
}

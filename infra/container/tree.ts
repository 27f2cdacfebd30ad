/**
 * Local workspace trees ("slots"): the content cache of the container function.
 *
 * A slot is a directory holding one workspace's files as of the end of its last run,
 * plus (in memory) path → {etag, size, hash, fingerprint}. A warm call reconciles the
 * slot with the manifest: only files whose etag changed are downloaded, files gone from
 * the workspace are removed. After every run the slot is settled back to exactly what
 * storage holds (unsent changes, unsaved symlinks and special files removed), so nothing of one
 * call is visible to the next. Concurrent runs on one workspace get separate slots.
 */
import { createHash } from "node:crypto";
import { chmodSync, constants, lstatSync, promises as fs, rmdirSync } from "node:fs";
import { join } from "node:path";
import { MAX_PATH_BYTES, MAX_SEGMENT_BYTES, ancestorsOf, normalizePath, parentOf } from "../../lib/workspace/paths.js";
import type { ManifestView } from "../../lib/sync/view.js";
import type { Skipped } from "../../lib/exec/types.js";
import type { SyncClient, SyncEntry } from "../../lib/sync/types.js";
import type { DirListings, WalkResult } from "./walk.js";
import { download } from "./download.js";

export interface FileState {
  etag: string;
  size: number;
  /** sha256 of the content: a rewrite with equal bytes is no change. */
  hash: string;
  /** inode:size:mtime:ctime (ns) after we wrote it; ctime cannot be forged by the command. */
  fp: string;
  /** The owner's execute bit, as the tree has it. */
  exec: boolean;
}

export interface Slot {
  key: string;
  dir: string;
  /** Bound at /workspace in the sandbox. */
  tree: string;
  files: Map<string, FileState>;
  /**
   * What this slot believes storage holds (path → etag, size): the last manifest, plus the
   * write-back's own results. Only a guess to make the manifest conditional (see
   * conditionalManifest): a wrong guess costs bytes on the wire, never correctness.
   */
  view: ManifestView;
  /**
   * Set when the tree and `files` are exactly what reconcile(view) makes of them (a fixpoint:
   * every wanted file present at its etag), with the entries that reconcile skipped. Cleared
   * by anything that changes `files` or `view` after that (a run's changes). While it is set
   * and storage still equals `view`, reconciling again would change nothing.
   */
  synced: { skipped: Skipped[] } | null;
  /** The explicit directories (markers) storage holds, as materialized here: directory → marker etag (infra/container/dirs.ts). */
  dirs: Map<string, string>;
  /** Directory listings of the last walk, reused while each directory is unchanged (walk.ts). */
  listings: DirListings;
  /**
   * The workspace's executable files as last read or written (lib/exec/modes.ts), with the
   * version of that list; null while unknown (not read yet, or the API keeps no modes).
   */
  modes: { etag: string | null; exec: Set<string>; links: Map<string, string> } | null;
  /** The symlinks the tree holds (path → target), as made by makeLinks or left by a settled run (links.ts). */
  links: Map<string, string>;
  cold: boolean;
  busy: boolean;
  lastUsed: number;
}

export type Owner = { uid: number; gid: number } | null;

/**
 * isValidName for an ASCII path, in one pass without allocating: canonical (normalizePath would
 * return it unchanged) iff every segment is non-empty, not only dots, at most MAX_SEGMENT_BYTES,
 * the whole at most MAX_PATH_BYTES, with no control character and no backslash (NFC changes no
 * ASCII). null for a path with a non-ASCII character: that one takes the full check.
 */
function asciiName(rel: string): boolean | null {
  const n = rel.length;
  // UTF-8 never takes fewer bytes than UTF-16 code units: longer is too long in any encoding.
  if (n === 0 || n > MAX_PATH_BYTES) return false;
  let seg = 0;
  let dots = true;
  for (let i = 0; i < n; i++) {
    const c = rel.charCodeAt(i);
    if (c === 0x2f) {
      if (seg === 0 || dots) return false;
      seg = 0;
      dots = true;
      continue;
    }
    if (c >= 0x80) return null;
    if (c < 0x20 || c === 0x7f || c === 0x5c) return false;
    if (c !== 0x2e) dots = false;
    if (++seg > MAX_SEGMENT_BYTES) return false;
  }
  return !dots;
}

/** A path the workspace can hold as it is (canonical). ASCII paths skip the full check. */
export const isValidName = (rel: string): boolean => {
  const ascii = asciiName(rel);
  if (ascii !== null) return ascii;
  try {
    return normalizePath(rel) === rel && rel !== "";
  } catch {
    return false;
  }
};

export const fingerprint = (st: { ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint }): string =>
  `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;

/** Whether a mode has the owner's execute bit (what git and the exec list record). */
export const isExec = (mode: bigint | number): boolean => (typeof mode === "number" ? (mode & 0o100) !== 0 : (mode & 0o100n) !== 0n);

/**
 * Sets a file of the slot to 0755 or 0644 and records it (mode and the fingerprint, which
 * chmod changes through ctime). Never follows a symlink: the slot's files are regular files.
 */
export function setExec(slot: Slot, path: string, exec: boolean): void {
  const st = slot.files.get(path);
  if (!st) return;
  const abs = join(slot.tree, path);
  chmodSync(abs, exec ? 0o755 : 0o644);
  slot.files.set(path, { ...st, exec, fp: fingerprint(lstatSync(abs, { bigint: true })) });
}

/** Runs fn over items, at most n at a time. */
export async function pool<T>(n: number, items: T[], fn: (item: T) => Promise<void>): Promise<void> {
  let i = 0;
  const worker = async () => {
    while (i < items.length) await fn(items[i++]!);
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
}

export async function hashFile(abs: string): Promise<string> {
  const h = createHash("sha256");
  const fh = await fs.open(abs, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    for await (const chunk of fh.createReadStream({ autoClose: false })) h.update(chunk as Buffer);
  } finally {
    await fh.close();
  }
  return h.digest("hex");
}

/** Creates the directories of `rel` (a directory path) below tree; `known` caches those that exist. */
export async function mkdirs(tree: string, rel: string, owner: Owner, known: Set<string>): Promise<void> {
  if (rel === "" || known.has(rel)) return;
  for (const dir of [...ancestorsOf(`${rel}/x`)].reverse()) {
    if (known.has(dir)) continue;
    const abs = join(tree, dir);
    try {
      await fs.mkdir(abs, { mode: 0o755 });
      if (owner) await fs.lchown(abs, owner.uid, owner.gid);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      const st = await fs.lstat(abs);
      if (!st.isDirectory()) throw Object.assign(new Error(`${dir} is not a directory`), { code: "ENOTDIR" });
    }
    known.add(dir);
  }
}

/** Removes now-empty directories from `dirs` upwards (never the tree itself). */
export async function pruneEmptyDirs(tree: string, dirs: Iterable<string>): Promise<void> {
  const all = new Set<string>();
  for (const d of dirs) for (let p = d; p !== ""; p = parentOf(p)) all.add(p);
  const deepestFirst = [...all].sort((a, b) => b.split("/").length - a.split("/").length);
  for (const d of deepestFirst) await fs.rmdir(join(tree, d)).catch(() => {});
}

/**
 * Removes the directories a settled run left empty, without scanning the tree: `after` says
 * how many entries each directory had after the command, `removed` are the entries settle
 * removed since (files not written back, skipped entries). A directory whose count reaches
 * zero is removed, and counts against its parent; one in `keep` (explicit directories: storage
 * has their markers) stays. Same outcome as pruneEmptyDirs over every other directory, in
 * O(removed + empty directories) system calls instead of one per directory.
 */
export function pruneSettled(tree: string, after: WalkResult, removed: Iterable<string>, keep: ReadonlyMap<string, unknown> = new Map()): void {
  const left = new Map(after.counts);
  const empty: string[] = [];
  for (const [d, n] of left) if (n === 0 && d !== "") empty.push(d);
  const drop = (p: string) => {
    const parent = parentOf(p);
    const n = left.get(parent);
    if (n === undefined) return;
    left.set(parent, n - 1);
    if (n === 1 && parent !== "") empty.push(parent);
  };
  for (const p of removed) drop(p);
  while (empty.length) {
    const d = empty.pop()!;
    if (keep.has(d)) continue;
    try {
      rmdirSync(join(tree, d));
    } catch {
      continue; // not empty after all, or gone: leave it and its parents, like pruneEmptyDirs
    }
    drop(d);
  }
}

export interface ReconcileStats {
  downloaded_files: number;
  downloaded_bytes: number;
  skipped: Skipped[];
  /** The slot now holds every wanted file at the manifest's etag, and nothing else (see Slot.synced). */
  clean: boolean;
}

/** The nearest ancestor of `p` that `set` holds, or undefined (no arrays, unlike ancestorsOf). */
function ancestorIn(p: string, set: Map<string, unknown>): string | undefined {
  for (let i = p.lastIndexOf("/"); i > 0; i = p.lastIndexOf("/", i - 1)) {
    const a = p.slice(0, i);
    if (set.has(a)) return a;
  }
  return undefined;
}

/** Makes slot.tree equal to the manifest, downloading only files whose etag changed. */
export async function reconcile(slot: Slot, manifest: SyncEntry[], sync: SyncClient, owner: Owner, concurrency = 16): Promise<ReconcileStats> {
  const stats: ReconcileStats = { downloaded_files: 0, downloaded_bytes: 0, skipped: [], clean: false };
  const want = new Map<string, SyncEntry>();
  for (const e of manifest) {
    if (isValidName(e.path)) want.set(e.path, e);
    else stats.skipped.push({ path: e.path, reason: "invalid_name" });
  }
  // An object store may hold both "a" and "a/b"; a file system cannot.
  const conflicting: string[] = [];
  for (const p of want.keys()) if (ancestorIn(p, want) !== undefined) conflicting.push(p);
  for (const p of conflicting) {
    want.delete(p);
    stats.skipped.push({ path: p, reason: "path_conflict", detail: "a parent path is a file" });
  }
  // A symlink wins over a file at its path or below it (docs/symlinks.md): the tree holds the link.
  const links = slot.modes?.links;
  if (links?.size)
    for (const p of [...want.keys()])
      if (links.has(p) || ancestorIn(p, links) !== undefined) {
        want.delete(p);
        stats.skipped.push({ path: p, reason: "path_conflict", detail: links.has(p) ? "the path is a symlink" : "a parent path is a symlink" });
      }
  const emptied = new Set<string>();
  const exec = slot.modes?.exec ?? null; // null: modes unknown, leave them as they are
  for (const [p, st] of slot.files) {
    if (want.get(p)?.etag === st.etag) {
      if (exec && exec.has(p) !== st.exec) setExec(slot, p, exec.has(p));
      continue;
    }
    if (!want.has(p)) {
      await fs.rm(join(slot.tree, p), { force: true });
      emptied.add(parentOf(p));
    }
    slot.files.delete(p);
  }
  await pruneEmptyDirs(slot.tree, emptied);

  await download(slot, [...want.values()].filter((e) => !slot.files.has(e.path)), sync, owner, stats, concurrency);
  // A fixpoint unless a download failed, vanished or brought another version than listed.
  stats.clean = slot.files.size === want.size;
  if (stats.clean) for (const [p, e] of want) if (slot.files.get(p)?.etag !== e.etag) stats.clean = false;
  return stats;
}

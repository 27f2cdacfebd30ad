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
import { chmodSync, constants, lchownSync, lstatSync, mkdirSync, promises as fs } from "node:fs";
import { join } from "node:path";
import { ancestorsOf, parentOf } from "../../lib/layout/paths.js";
import type { ManifestView } from "../../lib/sync/view.js";
import type { Skipped } from "../../lib/exec/types.js";
import type { DirListings, WalkResult } from "./walk.js";
import { fingerprint } from "./file-marks.js";
import { mkdirPlaced } from "./spread-dirs.js";

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
   * The workspace's executable files as last read or written (lib/layout/modes.ts), with the
   * version of that list; null while unknown (not read yet, or the API keeps no modes).
   */
  modes: { etag: string | null; exec: Set<string>; links: Map<string, string> } | null;
  /** The symlinks the tree holds (path → target), as made by makeLinks or left by a settled run (links.ts). */
  links: Map<string, string>;
  /**
   * Whether the tree and its staging directory (`incoming`) carry ext4's top-directory flag yet
   * (spread-dirs.ts): set by the first download that makes a directory in the slot (download.ts),
   * so that a run that makes none (a fresh, empty workspace) starts no `chattr` on its way.
   */
  spread: boolean;
  cold: boolean;
  busy: boolean;
  lastUsed: number;
}

export type Owner = { uid: number; gid: number } | null;

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

/**
 * Creates the directories of `rel` (a directory path) below tree, owned by `owner`; `known` caches
 * those that exist. Never through a symlink: one where a directory is needed is ENOTDIR. Top-level
 * ones are placed at random through `staging` (spread-dirs.ts) when it is given (download.ts).
 * Synchronous: a mkdir costs less than a round trip through the thread pool.
 */
export function mkdirs(tree: string, rel: string, owner: Owner, known: Set<string>, staging: string | null = null): void {
  if (rel === "" || known.has(rel)) return;
  for (const dir of [...ancestorsOf(`${rel}/x`)].reverse()) {
    if (known.has(dir)) continue;
    const abs = join(tree, dir);
    try {
      if (staging && !dir.includes("/")) mkdirPlaced(abs, staging, 0o755);
      else mkdirSync(abs, { mode: 0o755 });
      if (owner) lchownSync(abs, owner.uid, owner.gid);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      if (!lstatSync(abs).isDirectory()) throw Object.assign(new Error(`${dir} is not a directory`), { code: "ENOTDIR" });
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
 * Asynchronous, PRUNE_IN_FLIGHT at a time, in rounds (a directory's parent is looked at once the
 * round that emptied it is over): an rmdir is 0.4–1.5 ms on ext4, and 16,000 synchronous ones after a
 * discarded run held the runner's event loop 10.8 s (live sandboxes' polls, other runs' pumps and
 * kill checks all waited).
 */
export async function pruneSettled(tree: string, after: WalkResult, removed: Iterable<string>, keep: ReadonlyMap<string, unknown> = new Map()): Promise<void> {
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
    const round = empty.splice(0).filter((d) => !keep.has(d));
    await pool(PRUNE_IN_FLIGHT, round, async (d) => {
      try {
        await fs.rmdir(join(tree, d));
      } catch {
        return; // not empty after all, or gone: leave it and its parents, like pruneEmptyDirs
      }
      drop(d);
    });
  }
}

/** rmdirs pruneSettled keeps in flight (the thread pool has 4 threads; more only queue there). */
const PRUNE_IN_FLIGHT = 8;

export interface ReconcileStats {
  downloaded_files: number;
  downloaded_bytes: number;
  skipped: Skipped[];
  /** The slot now holds every wanted file at the manifest's etag, and nothing else (see Slot.synced). */
  clean: boolean;
  /** Manifest entries the reconcile went through: all of them (`whole`), or only those that changed (reconcile.ts). */
  entries: number;
  whole: boolean;
  /** Of the files downloaded, those written from the bytes a live command carried (no request: download.ts). */
  carried?: number;
}

/**
 * Reconciling a slot (tree.ts) with a workspace's manifest: files whose etag changed are
 * downloaded (download.ts), files gone from the workspace are removed. Whole (every entry of the
 * manifest looked at), or, on a slot that was a fixpoint of its view, only the entries the
 * manifest's answer proved changed (reconcileChanged).
 */
import { promises as fs } from "node:fs";
import { join } from "node:path";
import { isDirMarker, parentOf } from "../../lib/layout/paths.js";
import type { SyncClient, SyncEntry } from "../../lib/sync/types.js";
import type { CarriedFile } from "../../lib/sync/carried-files.js";
import { download } from "./download.js";
import { isValidName } from "./file-marks.js";
import { pruneEmptyDirs, setExec, type Owner, type ReconcileStats, type Slot } from "./tree.js";

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
  const stats: ReconcileStats = { downloaded_files: 0, downloaded_bytes: 0, skipped: [], clean: false, entries: manifest.length, whole: true };
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

/**
 * Reconciles only `changed` (the paths whose entry the view's last answer added, removed or
 * changed: ManifestResult.changed) on a slot whose tree was a fixpoint of the view before that
 * answer (Slot.synced, with no path conflict among its skips) and whose modes did not change:
 * every other entry is then in place already. Files and their directories only: null (reconcile
 * whole instead, before anything is touched) when a changed path is an explicit directory, a
 * symlink or below one, below a file of the view, or where the tree holds a directory. Same
 * outcome as reconcile() over the whole view, in O(changed) entries and system calls. `carried`:
 * bytes that came with a live command, written where their etag is the view's (download.ts).
 */
export async function reconcileChanged(slot: Slot, changed: readonly string[], sync: SyncClient, owner: Owner, carried?: ReadonlyMap<string, CarriedFile>, concurrency = 16): Promise<ReconcileStats | null> {
  const stats: ReconcileStats = { downloaded_files: 0, downloaded_bytes: 0, skipped: [], clean: false, entries: changed.length, whole: false };
  const links = slot.modes?.links ?? new Map<string, string>();
  const want: SyncEntry[] = [];
  for (const p of changed) {
    if (isDirMarker(p) || links.has(p)) return null;
    const e = slot.view.get(p);
    if (!e) continue;
    if (!isValidName(p)) {
      stats.skipped.push({ path: p, reason: "invalid_name" });
      continue;
    }
    for (let i = p.lastIndexOf("/"); i > 0; i = p.lastIndexOf("/", i - 1)) {
      const a = p.slice(0, i);
      if (slot.view.get(a) !== undefined || links.has(a)) return null;
    }
    if ((await fs.lstat(join(slot.tree, p)).catch(() => null))?.isDirectory()) return null;
    want.push(e);
  }
  const wanted = new Set(want.map((e) => e.path));
  const emptied = new Set<string>();
  for (const p of changed) {
    if (!slot.files.has(p)) continue;
    if (!wanted.has(p)) {
      await fs.rm(join(slot.tree, p), { force: true });
      emptied.add(parentOf(p));
    }
    slot.files.delete(p);
  }
  await pruneEmptied(slot, emptied);
  await download(slot, want, sync, owner, stats, concurrency, carried);
  stats.clean = want.every((e) => slot.files.get(e.path)?.etag === e.etag);
  return stats;
}

/** Removes the directories `emptied` left empty, upwards, stopping at an explicit directory (a marker storage holds). */
async function pruneEmptied(slot: Slot, emptied: Set<string>): Promise<void> {
  for (const start of emptied)
    for (let d = start; d !== "" && !slot.dirs.has(d); d = parentOf(d)) {
      const gone = await fs.rmdir(join(slot.tree, d)).then(() => true, () => false);
      if (!gone) break;
    }
}

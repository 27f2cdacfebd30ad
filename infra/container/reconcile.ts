/**
 * Reconciling a slot (tree.ts) with a workspace's manifest: files whose etag changed are
 * downloaded (download.ts), files gone from the workspace are removed.
 */
import { promises as fs } from "node:fs";
import { join } from "node:path";
import { parentOf } from "../../lib/layout/paths.js";
import type { SyncClient, SyncEntry } from "../../lib/sync/types.js";
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

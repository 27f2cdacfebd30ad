/**
 * The sync-in phase, one way for fresh runs (runner.ts) and live commands (live-session.ts): the
 * slot's tree made what storage holds, from the conditional manifest (lib/sync/view.ts: only what
 * differs from the slot's view crosses the wire; an unchanged workspace on a synced slot needs no
 * reconcile at all, and a few changed files on a synced slot reconcile only those entries:
 * reconcile.ts, reconcileChanged), and the command's working directory made. Node only.
 */
import { promises as fs } from "node:fs";
import { join } from "node:path";
import { ToolError } from "../../lib/shared/errors.js";
import type { ManifestResult } from "../../lib/sync/view.js";
import type { SyncClient } from "../../lib/sync/types.js";
import type { CarriedFile } from "../../lib/sync/carried-files.js";
import { dropLinks, makeLinks, slotModes } from "./links.js";
import { reconcile, reconcileChanged } from "./reconcile.js";
import { reconcileDirs, splitManifest } from "./dirs.js";
import type { Owner, ReconcileStats, Slot } from "./tree.js";

export interface SyncedIn {
  rec: ReconcileStats;
  /** Entries of the workspace's manifest (slot.view) when the command starts. */
  manifestFiles: number;
}

/**
 * Reconciles `slot` with the manifest `listed` answered (conditionalManifest(sync, slot.view, ...), already sent).
 * `carried`: the bytes of changed files that came with a live command (lib/sync/carried-files.ts),
 * used where only the changed entries are reconciled; the whole reconcile fetches as ever.
 */
export async function syncIn(slot: Slot, listed: Promise<ManifestResult>, sync: SyncClient, owner: Owner, carried?: ReadonlyMap<string, CarriedFile>): Promise<SyncedIn> {
  const manifest = await listed;
  const manifestFiles = slot.view.size;
  const untouched = leavesTree(slot, manifest);
  const synced = modesChanged(slot, manifest) ? null : slot.synced;
  const modes = manifest.modes; // null: this API keeps no execute bits; they are then left alone
  if (modes !== "same") slot.modes = modes && slotModes(modes);
  if (untouched && synced) return { rec: { downloaded_files: 0, downloaded_bytes: 0, skipped: [...synced.skipped], clean: true, entries: 0, whole: false }, manifestFiles };
  slot.synced = null;
  // The slot was the view's fixpoint and the answer says exactly what changed: only those entries.
  if (synced && manifest.changed && !synced.skipped.some((s) => s.reason === "path_conflict")) {
    const changed = new Set(manifest.changed);
    const rec = await reconcileChanged(slot, manifest.changed, sync, owner, carried);
    if (rec) {
      rec.skipped.push(...synced.skipped.filter((s) => !changed.has(s.path)));
      if (rec.clean) slot.synced = { skipped: [...rec.skipped] };
      return { rec, manifestFiles };
    }
  }
  // Files first, then explicit directories (markers: manifest entries ending in "/", infra/container/dirs.ts).
  const manifestParts = splitManifest(slot.view.values());
  await dropLinks(slot); // symlinks last: links.ts
  const rec = await reconcile(slot, manifestParts.files, sync, owner);
  const dirRec = await reconcileDirs(slot, manifestParts.dirs, owner);
  const linkSkips = await makeLinks(slot, owner);
  rec.skipped.push(...manifestParts.skipped, ...dirRec.skipped, ...linkSkips);
  rec.clean &&= dirRec.clean && linkSkips.length === 0;
  if (rec.clean) slot.synced = { skipped: [...rec.skipped] };
  return { rec, manifestFiles };
}

/**
 * Whether syncIn with `manifest` leaves the slot's tree as it is (no file, directory, link or
 * execute bit to change on disk): storage is what the view held, the execute bits with it, and the
 * tree is the view's fixpoint. A live command then needs no hold before it (live-command.ts).
 */
export const leavesTree = (slot: Slot, manifest: ManifestResult): boolean => manifest.unchanged && !modesChanged(slot, manifest) && slot.synced !== null;

/** The answer's execute bits are not the slot's (null: this API keeps none, and the slot had some). */
function modesChanged(slot: Slot, { modes }: ManifestResult): boolean {
  return modes !== "same" && (modes === null ? slot.modes !== null : modes.etag !== slot.modes?.etag);
}

/** Makes the working directory; returns the directories it made (not the command's: they get no marker). */
export async function ensureCwd(slot: Slot, cwd: string, owner: Owner): Promise<Set<string>> {
  const made = new Set<string>();
  let rel = "";
  for (const seg of cwd === "" ? [] : cwd.split("/")) {
    rel = rel ? `${rel}/${seg}` : seg;
    const abs = join(slot.tree, rel);
    const st = await fs.lstat(abs).catch(() => null);
    if (st?.isDirectory()) continue;
    if (st) throw new ToolError("NOT_A_DIRECTORY", `working_dir ${cwd}: ${rel} is a file.`, { path: cwd });
    await fs.mkdir(abs, { mode: 0o755 });
    if (owner) await fs.lchown(abs, owner.uid, owner.gid);
    made.add(rel);
  }
  return made;
}

/** Bytes of the slot's files as storage holds them (the disk quota counts from there). */
export function slotBytes(slot: Slot): number {
  let n = 0;
  for (const f of slot.files.values()) n += f.size;
  return n;
}

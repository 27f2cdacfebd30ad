/**
 * The runner's side of symlinks (docs/symlinks.md). The workspace's links live in its modes
 * table (lib/layout/modes.ts), never as file objects; the slot's tree holds them as real
 * symlinks. Before files are placed, links storage no longer has are removed (a file or a
 * directory may take their place); after, the links storage has are made. After a run, the
 * walk's links against the slot's say what the command changed.
 */
import { promises as fs } from "node:fs";
import { join } from "node:path";
import { parentOf } from "../../lib/layout/paths.js";
import type { Skipped } from "../../lib/exec/types.js";
import type { ExecModes, ModesDelta } from "../../lib/layout/modes.js";
import type { WalkResult } from "./walk.js";
import { mkdirs, pruneEmptyDirs, type Owner, type Slot } from "./tree.js";
import { isValidName } from "./file-marks.js";

/** The links storage holds as the slot knows them (none while the API keeps no modes). */
const wanted = (slot: Slot): Map<string, string> => slot.modes?.links ?? new Map();

/** Removes the tree's links that storage no longer holds as they are (before files and directories are placed). */
export async function dropLinks(slot: Slot): Promise<void> {
  const want = wanted(slot);
  const emptied: string[] = [];
  for (const [p, target] of slot.links) {
    if (want.get(p) === target) continue;
    slot.links.delete(p);
    const st = await fs.lstat(join(slot.tree, p)).catch(() => null);
    if (!st?.isSymbolicLink()) continue; // something else took the path meanwhile
    await fs.unlink(join(slot.tree, p));
    emptied.push(parentOf(p));
  }
  await pruneEmptyDirs(slot.tree, emptied.filter((d) => !slot.dirs.has(d))); // explicit directories stay
}

/**
 * Makes the links storage holds that the tree lacks (after files and directories are placed).
 * A path a file or directory holds, or below a link, is skipped as a path conflict. Nothing
 * is followed: parents are made with lstat checks (mkdirs), the link itself with symlink(2).
 */
export async function makeLinks(slot: Slot, owner: Owner): Promise<Skipped[]> {
  const skipped: Skipped[] = [];
  const want = wanted(slot);
  const known = new Set<string>();
  for (const [p, target] of want) {
    if (slot.links.get(p) === target) continue;
    if (!isValidName(p)) {
      skipped.push({ path: p, reason: "invalid_name" });
      continue;
    }
    const abs = join(slot.tree, p);
    try {
      mkdirs(slot.tree, parentOf(p), owner, known);
      const st = await fs.lstat(abs).catch(() => null);
      if (st?.isSymbolicLink()) await fs.unlink(abs);
      else if (st) throw new Error(st.isDirectory() ? "a directory has the link's path" : "a file has the link's path");
      await fs.symlink(target, abs);
      if (owner) await fs.lchown(abs, owner.uid, owner.gid);
      slot.links.set(p, target);
    } catch (e) {
      skipped.push({ path: p, reason: "path_conflict", detail: `symlink not made: ${String((e as Error).message ?? e).slice(0, 200)}` });
    }
  }
  return skipped;
}

/** What the command did to links: path → new target, or null for a link it removed. null: no change (or links unknown). */
export function linksDelta(slot: Slot, after: WalkResult): Record<string, string | null> | null {
  if (!slot.modes) return null;
  const delta: Record<string, string | null> = {};
  let n = 0;
  for (const [p, target] of after.links) if (slot.links.get(p) !== target) (delta[p] = target), n++;
  for (const p of slot.links.keys()) if (!after.links.has(p)) (delta[p] = null), n++;
  return n ? delta : null;
}

/** The slot's form of the modes table an API answered. */
export const slotModes = (m: ExecModes): NonNullable<Slot["modes"]> => ({ etag: m.etag, exec: new Set(m.exec), links: new Map(Object.entries(m.links ?? {})) });

/** The run's change of modes: execute bits (exec-bits.ts) and links, in one delta; null when neither changed. */
export function runDelta(bits: ModesDelta | null, links: Record<string, string | null> | null): ModesDelta | null {
  if (!bits && !links) return null;
  return { add: bits?.add ?? [], remove: bits?.remove ?? [], ...(links ? { links } : {}) };
}

/** Puts the tree's links back to what storage holds (a run not written back, or a delta not saved). */
export async function settleLinks(slot: Slot, after: WalkResult, owner: Owner): Promise<Skipped[]> {
  slot.links = new Map(after.links);
  await dropLinks(slot);
  const skipped = await makeLinks(slot, owner);
  if (skipped.length) slot.synced = null; // the next run reconciles in full
  return skipped;
}

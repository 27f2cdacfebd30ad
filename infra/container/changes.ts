/**
 * What a command changed: the diff of the walk after the run (walk.ts) against the slot's
 * files as of the start of the run.
 */
import { join } from "node:path";
import type { WalkResult } from "./walk.js";
import { hashFile, pool, type FileState, type Slot } from "./tree.js";

export interface Change {
  path: string;
  kind: "created" | "modified" | "deleted";
  /** The version the run started from (modified, deleted). */
  base?: FileState;
}

/**
 * What the command changed: created, modified (content differs), deleted. `readOnly`: only the
 * files of the directories the walk read can differ from the slot (every other one is the
 * slot's, as the last settled sync-out left it: the change journal's word); they alone are
 * compared, and the rest are counted as found.
 */
export async function diff(slot: Slot, after: WalkResult, readOnly = false): Promise<Change[]> {
  const changes: Change[] = [];
  const suspects: string[] = [];
  let kept = readOnly ? after.files.size - after.readFiles.length : 0; // files of the slot the walk found again
  for (const p of readOnly ? after.readFiles : after.files.keys()) {
    const loc = after.files.get(p)!;
    const st = slot.files.get(p);
    if (!st) changes.push({ path: p, kind: "created" });
    else {
      kept++;
      if (st.fp !== loc.fp) suspects.push(p);
    }
  }
  await pool(8, suspects, async (p) => {
    const st = slot.files.get(p)!;
    const loc = after.files.get(p)!;
    // Same bytes (a touch, a chmod): no change of content; the execute bit is the runner's business.
    if (loc.size === st.size && (await hashFile(join(slot.tree, p))) === st.hash) slot.files.set(p, { ...st, fp: loc.fp });
    else changes.push({ path: p, kind: "modified", base: st });
  });
  // Every file of the slot found again (paths are unique): none deleted, no need to look for one.
  if (kept < slot.files.size) for (const [p, st] of slot.files) if (!after.files.has(p)) changes.push({ path: p, kind: "deleted", base: st });
  return changes.sort((a, b) => (a.path < b.path ? -1 : 1));
}

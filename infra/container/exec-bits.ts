/**
 * The runner's side of execute bits (the workspace's list: lib/layout/modes.ts). Reconcile
 * gives downloaded and kept files the recorded bit (tree.ts); after a run, these say what
 * the command changed and put the slot back to what the list records.
 */
import type { ModesDelta } from "../../lib/layout/modes.js";
import type { Change } from "./changes.js";
import type { WalkResult } from "./walk.js";
import { setExec, type Slot } from "./tree.js";
import type { WriteBackOutcome } from "./writeback.js";

/**
 * What the run did to execute bits, for the workspace's list (lib/layout/modes.ts): the bit of
 * every file that storage now holds as the tree has it (unchanged, or written back), and no
 * entry for a file storage no longer holds. Called after settle; null when nothing changed
 * or modes are unknown.
 */
export function modesDelta(slot: Slot, after: WalkResult, changes: Change[], outcome: WriteBackOutcome, readOnly = false): ModesDelta | null {
  if (!slot.modes) return null;
  const old = slot.modes.exec;
  const changed = new Set(changes.map((c) => c.path));
  const add: string[] = [];
  const remove: string[] = [];
  for (const p of readOnly ? after.readFiles : after.files.keys()) {
    const loc = after.files.get(p)!;
    if (changed.has(p) ? !outcome.written.has(p) : !slot.files.has(p)) continue;
    if (loc.exec && !old.has(p)) add.push(p);
    else if (!loc.exec && old.has(p)) remove.push(p);
  }
  for (const p of old) if (!slot.view.get(p)) remove.push(p);
  return add.length || remove.length ? { add, remove } : null;
}

/** Gives every file of the slot the execute bit the workspace records (or, modes unknown, keeps the tree's); `only`: just these paths (every other one has it already). */
export function settleModes(slot: Slot, after: WalkResult, only?: Iterable<string>): void {
  for (const p of only ?? after.files.keys()) {
    const loc = after.files.get(p);
    if (!loc) continue;
    const st = slot.files.get(p);
    if (!st) continue;
    const want = slot.modes ? slot.modes.exec.has(p) : loc.exec;
    if (loc.exec !== want) setExec(slot, p, want);
    else if (st.exec !== want) slot.files.set(p, { ...st, exec: want });
  }
}


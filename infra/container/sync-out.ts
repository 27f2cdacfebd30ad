/**
 * The sync-out phase, one way for fresh runs (runner.ts) and live commands (live-session.ts):
 * walk the tree (no walk when a live sandbox's change journal heard nothing since the last one),
 * diff it against the slot, write back per file (writeback.ts) and explicit directories
 * (dirs.ts), then settle the slot back to exactly what storage holds (execute bits
 * and symlinks included). A command that did not finish (timed out, killed, over its disk quota)
 * writes nothing back: its changes are discarded. Node only.
 */
import { promises as fs } from "node:fs";
import { join } from "node:path";
import type { RunLimits, Skipped } from "../../lib/exec/types.js";
import type { SyncClient } from "../../lib/sync/types.js";
import { diff, type Change } from "./changes.js";
import { modesDelta, settleModes } from "./exec-bits.js";
import { linksDelta, runDelta, settleLinks, slotModes } from "./links.js";
import { walk, type WalkResult } from "./walk.js";
import type { ChangeJournal } from "./change-journal.js";
import { pool, pruneSettled, type Owner, type Slot } from "./tree.js";
import { crossedBy, dirChanges, dirOutcome, notSaved, settleDirs, writeBackDirs, type DirChange, type DirOutcome } from "./dirs.js";
import { writeBack, type WriteBackOutcome } from "./writeback.js";

const MiB = 1024 * 1024;

export interface SyncOutInput {
  slot: Slot;
  sync: SyncClient;
  owner: Owner;
  runId: string;
  limits: RunLimits;
  /** The command ended by itself (not timed out or killed): only then is anything written back. */
  ran: boolean;
  /** The disk watcher saw the quota passed during the command. */
  diskExceeded: boolean;
  /** Bytes of the tree before the command (the quota counts from there). */
  baseBytes: number;
  /** Directories the runner made for the working directory (they get no marker). */
  cwdMade: Set<string>;
  /** When the write-back stops starting changes (run-request.ts, writeBackDeadline). */
  deadline: number;
  /** Entries of the manifest the command started from. */
  manifestFiles: number;
  /** A live sandbox's change journal: the walk re-reads only the directories it names (change-journal.ts). */
  journal?: ChangeJournal | null;
}

export interface SyncedOut {
  after: WalkResult;
  changes: Change[];
  dirDelta: DirChange[];
  quotaHit: boolean;
  /** Written back (the command finished and stayed in its quota). */
  finished: boolean;
  wb: WriteBackOutcome | null;
  dirsOut: DirOutcome | null;
  linksChanged: string[];
  /** Of linksChanged, those removed. */
  linksRemoved: string[];
  /** Files whose execute bit the command set or cleared, saved in the workspace's modes table. */
  modesChanged: string[];
  modeSkips: Skipped[];
  walkMs: number;
  /** The walk had a change journal's word (SyncStats.walk_dirs). */
  journaled: boolean;
  /** No walk was made: the journal heard nothing since the last one, whose result stood (change-journal.ts, standing). */
  walked: boolean;
  /** Files compared with the slot: every file the walk found, only those of the directories it read, or none (no walk). */
  compared: number;
}

/**
 * Puts the slot back to exactly what storage holds after the write-back, and its view of
 * storage with it (what was written, what was deleted). Any change ends Slot.synced (syncOut
 * gives it back when every change was written). Only the directories settle emptied are looked
 * at (pruneSettled); explicit directories (slot.dirs, after settleDirs) stay. Returns whether
 * every change was written: the tree and the view then agree on each of them.
 */
async function settle(slot: Slot, after: WalkResult, changes: Change[], outcome: WriteBackOutcome | null): Promise<boolean> {
  const removed: string[] = [];
  if (changes.length) slot.synced = null;
  const deleted = new Set(outcome?.deleted);
  let exact = true;
  for (const c of changes) {
    const written = outcome?.written.get(c.path);
    if (written) {
      slot.files.set(c.path, written);
      slot.view.set({ path: c.path, etag: written.etag, size: written.size });
    } else {
      slot.files.delete(c.path);
      if (c.kind !== "deleted") removed.push(c.path);
      if (!deleted.has(c.path)) exact = false;
    }
  }
  // Thousands after a cut write-back: side by side (an unlink can wait on the disk).
  await pool(16, removed, (p) => fs.rm(join(slot.tree, p), { force: true }));
  for (const p of outcome?.deleted ?? []) slot.view.delete(p);
  for (const s of after.skipped) {
    // A name that is not UTF-8 is reached through its bytes only: its shown path names nothing.
    await fs.rm(after.rawPaths.get(s.path) ?? join(slot.tree, s.path), { recursive: true, force: true });
    removed.push(s.path);
  }
  await pruneSettled(slot.tree, after, removed, slot.dirs);
  return exact;
}

export async function syncOut(i: SyncOutInput): Promise<SyncedOut> {
  const { slot, sync, limits } = i;
  const wasSynced = slot.synced;
  const t1 = Date.now();
  const hooks = (await i.journal?.begin(slot.listings)) ?? undefined;
  // Nothing happened in the tree since the last walk (the journal's word): its result stands, no walk is made.
  const standing = hooks ? i.journal!.standing(slot.listings) : null;
  const after = standing ?? (await walk(slot.tree, slot.listings, Date.now(), hooks));
  i.journal?.walked(after);
  const walkMs = Date.now() - t1;
  // A standing result is the tree as the last sync-out left it, settled: no file differs from the slot (its passes over every file are skipped).
  // Otherwise, on a slot that was its view's fixpoint, a directory the journal vouched for holds the slot's files as they were: only the directories read are compared.
  const readOnly = !standing && hooks !== undefined && wasSynced !== null && i.journal!.settledBefore;
  const changes = standing ? [] : await diff(slot, after, readOnly);
  let afterBytes = 0;
  if (!standing) for (const f of after.files.values()) afterBytes += f.size;
  // The sample may have missed a last burst: the exact figure decides too.
  const quotaHit = i.diskExceeded || (!standing && afterBytes - i.baseBytes > limits.disk_mb * MiB);
  const finished = i.ran && !quotaHit;
  // Directories by the rule of dirs.ts: with the write-back's hold, removals beside its deletes (credited in it) and new markers after
  // the files, drawn on it; without, the removals a written file crosses before the files, the rest after; none when the quotas refused it.
  const dirDelta = dirChanges(slot.dirs, after, i.cwdMade);
  const dirPlan = dirOutcome(dirDelta, Math.max(0, limits.max_writeback_files - changes.length));
  const dirsOut: DirOutcome | null = finished ? dirPlan.outcome : null;
  const crossed = crossedBy(dirPlan.accepted.filter((d) => d.kind === "deleted"), changes.filter((c) => c.kind !== "deleted").map((c) => c.path));
  /** Each marker change is sent once, whichever step comes to it first. */
  const sent = new Set<DirChange>();
  const send = (which: Iterable<DirChange>, kind: DirChange["kind"], hold: string | null) => {
    const todo = [...which].filter((d) => d.kind === kind && !sent.has(d));
    for (const d of todo) sent.add(d);
    return writeBackDirs(sync, todo, kind, dirsOut!, hold);
  };
  const beforeWrites = dirsOut && crossed.size ? async () => void (await send(crossed, "deleted", null)) : undefined;
  // One marker change and nothing else is whole by its own charge, as one file is: no plan, no hold.
  const alone = changes.length === 0 && dirPlan.accepted.length === 1;
  const count = (kind: DirChange["kind"]) => (alone ? 0 : dirPlan.accepted.filter((d) => d.kind === kind).length);
  const markers = dirsOut && dirPlan.accepted.length ? { made: count("created"), removed: count("deleted"), remove: (hold: string | null) => send(dirPlan.accepted, "deleted", hold), make: async (hold: string | null) => void (await send(dirPlan.accepted, "created", hold)) } : undefined;
  const wb = finished ? await writeBack({ tree: slot.tree, changes, sync, runId: i.runId, maxFiles: limits.max_writeback_files, deadline: i.deadline, workspaceFiles: i.manifestFiles, beforeWrites, ...(markers ? { markers } : {}) }) : null;
  const refused = wb?.refused ?? null;
  if (dirsOut && refused) notSaved(dirsOut, dirPlan.accepted.filter((d) => !sent.has(d)), refused);

  settleDirs(slot, dirDelta, dirsOut);
  const exact = await settle(slot, after, changes, wb);
  const modeSkips: Skipped[] = [];
  let linksChanged: string[] = [];
  let linksRemoved: string[] = [];
  let modesChanged: string[] = [];
  const delta = wb && runDelta(standing ? null : modesDelta(slot, after, changes, wb, readOnly), linksDelta(slot, after));
  // The bits to settle beside the files compared: those the workspace's list changed (another writer's too, in the answer).
  const bitsChanged = new Set<string>();
  if (delta && refused) {
    // The write-back was refused whole: its bits and links are not saved either, named with the quotas' message.
    for (const path of [...delta.add, ...delta.remove]) modeSkips.push({ path, reason: "error", detail: refused, change: "execute_bit" });
    for (const path of Object.keys(delta.links ?? {})) modeSkips.push({ path, reason: "error", detail: refused, change: "symlink" });
  } else if (delta) {
    try {
      const before = slot.modes?.exec ?? new Set<string>();
      slot.modes = slotModes(await sync.updateModes(delta));
      for (const p of slot.modes.exec) if (!before.has(p)) bitsChanged.add(p);
      for (const p of before) if (!slot.modes.exec.has(p)) bitsChanged.add(p);
      linksChanged = Object.keys(delta.links ?? {}).sort();
      linksRemoved = linksChanged.filter((p) => delta.links![p] === null);
      modesChanged = [...delta.add.filter((p) => !before.has(p)), ...delta.remove.filter((p) => before.has(p))].sort();
    } catch (e) {
      const why = String((e as Error).message ?? e).slice(0, 200);
      for (const path of [...delta.add, ...delta.remove]) modeSkips.push({ path, reason: "error", detail: `execute bit not saved: ${why}` });
      for (const path of Object.keys(delta.links ?? {})) modeSkips.push({ path, reason: "error", detail: `symlink change not saved: ${why}` });
    }
  }
  if (!standing) settleModes(slot, after, readOnly ? [...after.readFiles, ...bitsChanged] : undefined);
  modeSkips.push(...(await settleLinks(slot, after, i.owner)));
  i.journal?.settled();
  // The slot was its view's fixpoint and every change went to storage as the tree holds it (no directory, link or bit left aside):
  // it still is, so the next sync-in reconciles nothing when storage is unchanged (only what changed otherwise).
  if (wasSynced && wasSynced.skipped.length === 0 && exact && !dirDelta.length && !after.skipped.length && !modeSkips.length && !linksChanged.length) slot.synced = wasSynced;
  return { after, changes, dirDelta, quotaHit, finished, wb, dirsOut, linksChanged, linksRemoved, modesChanged, modeSkips, walkMs, journaled: i.journal != null, walked: standing === null, compared: standing ? 0 : readOnly ? after.readFiles.length : after.files.size };
}

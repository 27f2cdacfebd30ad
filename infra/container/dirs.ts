/**
 * Explicit directories in the runner's tree. Storage keeps an empty directory only as a marker
 * (a zero-byte object at "<dir>/", lib/layout/paths.ts); the manifest carries markers as entries whose
 * path ends in "/". A slot knows the markers storage holds (Slot.dirs: directory → marker etag)
 * and materializes each as a directory, empty or not.
 *
 * The rule after a command (the simplest one that keeps what mkdir, rmdir and git expect):
 *  - a directory the command leaves EMPTY gets a marker, unless it has one already;
 *  - a marker whose directory the command REMOVED goes (If-Match: the version the run saw);
 *  - a marker of a directory that still exists stays, empty or not.
 * Directories with entries below them need no marker: what is below implies them. Directories
 * the runner made itself (a working_dir that did not exist) are not the command's: no marker.
 * A marker is one entry of the storage quotas' files. With a hold (the write-back's, when it makes markers,
 * or removes some and writes files: writeback.ts), its plan counts each new marker and credits each removed
 * one, as its deleted files: the removals go with the deletes, after the hold and before any write, each
 * freeing its entry into the hold; the new markers after the files, each drawn on the hold, before it is
 * released. Without one (an API without holds), a marker whose directory a written file takes the name of
 * (crossedBy) is removed before the files are written, every other removal and every new marker (a
 * directory may take a deleted file's name) after them. A write-back the quotas refused whole
 * (WriteBackOutcome.refused) removes and makes none: each is skipped, named (notSaved).
 */
import { isDirMarker, markerDir, parentOf } from "../../lib/layout/paths.js";
import type { Conflict, Skipped } from "../../lib/exec/types.js";
import type { SyncClient, SyncEntry } from "../../lib/sync/types.js";
import type { WalkResult } from "./walk.js";
import { mkdirs, pool, pruneEmptyDirs, type Owner, type Slot } from "./tree.js";
import { isValidName } from "./file-marks.js";

export interface DirChange {
  /** The directory (canonical, without the trailing "/"). */
  path: string;
  kind: "created" | "deleted";
  /** The marker's etag the run started from (deleted). */
  base?: string;
}

export interface DirOutcome {
  /** Markers made: directory → etag. */
  created: Map<string, string>;
  deleted: string[];
  conflicts: Conflict[];
  skipped: Skipped[];
}

/** A manifest's files, and its markers as directory → etag (a marker with a bad name is skipped). */
export function splitManifest(entries: Iterable<SyncEntry>): { files: SyncEntry[]; dirs: Map<string, string>; skipped: Skipped[] } {
  const files: SyncEntry[] = [];
  const dirs = new Map<string, string>();
  const skipped: Skipped[] = [];
  for (const e of entries) {
    if (!isDirMarker(e.path)) files.push(e);
    else if (isValidName(markerDir(e.path))) dirs.set(markerDir(e.path), e.etag);
    else skipped.push({ path: e.path, reason: "invalid_name" });
  }
  return { files, dirs, skipped };
}

/**
 * Makes the slot's explicit directories those of the manifest (after reconcile placed its files):
 * a marker storage no longer has is forgotten and its directory removed if empty; every marker
 * is made a directory (a cold start, or one a failed removal left out). clean: all of them are.
 */
export async function reconcileDirs(slot: Slot, want: Map<string, string>, owner: Owner): Promise<{ skipped: Skipped[]; clean: boolean }> {
  const skipped: Skipped[] = [];
  const gone: string[] = [];
  for (const d of slot.dirs.keys()) if (!want.has(d)) gone.push(d);
  for (const d of gone) slot.dirs.delete(d);
  await pruneEmptyDirs(slot.tree, gone);
  const known = new Set<string>();
  for (const [d, etag] of want) {
    // An object store may hold a file "a" and a marker "a/" (or "a/b/"); a file system cannot: the file wins.
    let file: string | undefined;
    for (let p = d; p !== "" && file === undefined; p = parentOf(p)) if (slot.files.has(p)) file = p;
    try {
      if (file !== undefined) throw new Error(`${file} is a file`);
      mkdirs(slot.tree, d, owner, known);
      slot.dirs.set(d, etag);
    } catch (e) {
      slot.dirs.delete(d);
      skipped.push({ path: `${d}/`, reason: "path_conflict", detail: String((e as Error).message) });
    }
  }
  return { skipped, clean: skipped.length === 0 };
}

/** What the command did to directories, by the rule above. */
export function dirChanges(known: ReadonlyMap<string, string>, after: WalkResult, runnerMade: ReadonlySet<string>): DirChange[] {
  const out: DirChange[] = [];
  const present = new Set(after.dirs);
  for (const d of after.dirs) if (after.counts.get(d) === 0 && !known.has(d) && !runnerMade.has(d)) out.push({ path: d, kind: "created" });
  for (const [d, etag] of known) if (!present.has(d)) out.push({ path: d, kind: "deleted", base: etag });
  return out.sort((a, b) => (a.path < b.path ? -1 : 1));
}

/** An empty outcome, with the changes past `budget` (the write-back's file limit) listed as skipped. */
export function dirOutcome(changes: DirChange[], budget: number): { accepted: DirChange[]; outcome: DirOutcome } {
  const outcome: DirOutcome = { created: new Map(), deleted: [], conflicts: [], skipped: [] };
  for (const c of changes.slice(budget)) outcome.skipped.push({ path: `${c.path}/`, reason: "limit", detail: "more than the write-back limit of changed files and directories in one run" });
  return { accepted: changes.slice(0, budget), outcome };
}

/** The removals a written file crosses (it takes the directory's name, or an ancestor's): these go before the files are written. */
export function crossedBy(removals: DirChange[], writes: Iterable<string>): Set<DirChange> {
  const files = new Set(writes);
  const out = new Set<DirChange>();
  for (const d of removals) for (let p = d.path; p !== "" && !out.has(d); p = parentOf(p)) if (files.has(p)) out.add(d);
  return out;
}

/** Records `changes` as not saved: the quotas refused the run's write-back whole (`why`: their message). */
export function notSaved(out: DirOutcome, changes: DirChange[], why: string): void {
  for (const c of changes) out.skipped.push({ path: `${c.path}/`, reason: "error", detail: why, change: c.kind === "created" ? "dir_created" : "dir_deleted" });
}

/**
 * Writes back one kind of change (removals first, creations last: see the header); `hold`: the write-back's,
 * each marker made draws its entry on it, each marker removed frees its entry into it. Answers how many
 * removals freed nothing into the hold (in another version, already gone, failed): the hold then awaits them.
 */
export async function writeBackDirs(sync: SyncClient, changes: DirChange[], kind: DirChange["kind"], out: DirOutcome, hold: string | null = null, concurrency = 16): Promise<number> {
  let unfreed = 0;
  await pool(concurrency, changes.filter((c) => c.kind === kind), async (c) => {
    try {
      if (c.kind === "created") {
        const r = await sync.mkdir(c.path, hold ? { hold } : undefined);
        if (r.ok) out.created.set(c.path, r.etag);
        else out.conflicts.push({ path: `${c.path}/`, change: "created", reason: "changed_meanwhile" });
      } else {
        unfreed++; // less this one, once it is known removed here
        const r = await sync.rmdir(c.path, { ifMatch: c.base!, ...(hold ? { hold } : {}) });
        if (r.ok && !r.gone) unfreed--;
        if (r.ok) out.deleted.push(c.path);
        else out.conflicts.push({ path: `${c.path}/`, change: "deleted", reason: "changed_meanwhile" });
      }
    } catch (e) {
      out.skipped.push({ path: `${c.path}/`, reason: "error", detail: String((e as Error).message ?? e).slice(0, 300) });
    }
  });
  out.deleted.sort();
  out.conflicts.sort((a, b) => (a.path < b.path ? -1 : 1));
  return unfreed;
}

/**
 * Records what was written in the slot (its markers and its view of storage). A marker not made
 * leaves its directory unknown, so settling prunes it when empty; a marker not removed stays known
 * while its directory is gone from the tree, and the next run's reconcile (the slot is no longer
 * synced) makes it again.
 */
export function settleDirs(slot: Slot, changes: DirChange[], outcome: DirOutcome | null): void {
  if (changes.length) slot.synced = null;
  if (!outcome) return;
  for (const [d, etag] of outcome.created) {
    slot.dirs.set(d, etag);
    slot.view.set({ path: `${d}/`, etag, size: 0 });
  }
  for (const d of outcome.deleted) {
    slot.dirs.delete(d);
    slot.view.delete(`${d}/`);
  }
}

/**
 * The change journal of a live sandbox's tree (issue #29): one inotify watch per directory
 * (fs.watch, not recursive: libuv reads every watch of the process through ONE inotify
 * descriptor, in order), so that the walk after a command (walk.ts) re-reads only the
 * directories something happened in since the last walk, and takes every other directory's
 * listing and file entries as they were: a no-change command on 10,000 files makes no system
 * call per file.
 *
 * What inotify says of a directory (libuv's mask: create, delete, rename in or out, a write or
 * an attribute change of an entry, the directory's own deletion or move) covers every way a
 * command changes what the walk reads there, but three, each handled here or in the walk:
 *   - events not yet delivered: begin() first writes a file into a private fence directory and
 *     waits for its event; everything queued before it has then been delivered;
 *   - a queue overflow (libuv drops IN_Q_OVERFLOW silently): an overflow needs the kernel's
 *     whole queue (max_queued_events) filled since the last fence, and all of it is delivered
 *     after, so a walk after a quarter of that many events trusts nothing (a full walk); a
 *     watch that cannot be set (the watch limit, ENOSPC), more than MAX_WATCHES directories, a
 *     watcher error or a fence that never arrives end the journal for the sandbox's life
 *     (every later walk is a full one, as a fresh run's);
 *   - a file with several hard links is written through any of its names, and only that name's
 *     directory hears it: a directory holding one is never vouched for (DirListing.multi); and
 *     a link made to a file of a directory vouched for is heard only where the new name is
 *     (the link count's change reaches no directory's watch), so a walk that finds a
 *     hard-linked file with a name it did not state makes the next walk trust no directory.
 * A directory named by an event of its parent (made, deleted, renamed, its attributes changed)
 * may be another directory now: its watch and its subtree's are set again and the subtree is
 * read in full. A directory is vouched for only from the walk after the one that set its watch
 * (every read that walk made of it came after the watch).
 * When nothing at all happened since the last walk (no event up to the fence, no overflow
 * risk, every directory that walk found watched since before it read it, no hard-linked file),
 * that walk's result still describes the tree exactly: standing() hands it back and no walk is
 * made (sync-out.ts). Anything the runner itself does to the tree after a walk (settling,
 * downloading) is an event too, so the next walk reads what it touched.
 * Node only.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, watch, writeFileSync, type FSWatcher } from "node:fs";
import { join } from "node:path";
import type { DirListings, WalkJournal, WalkResult } from "./walk.js";

/** Most directories watched; past it the journal ends (full walks). */
export const MAX_WATCHES = 8192;
/** How long a fence may take before the journal is taken for broken. */
const FENCE_MS = 5000;

/** The kernel's inotify queue length (events past it are dropped): a walk after a quarter of that many events since the last trusts nothing. */
function overflowRisk(): number {
  try {
    return Math.max(64, Math.floor(Number(readFileSync("/proc/sys/fs/inotify/max_queued_events", "utf8")) / 4));
  } catch {
    return 4096;
  }
}

export interface JournalStats {
  /** Full walks since the journal started (the first one's included) and why the last one was. */
  fullWalks: number;
  lastFull: "start" | "overflow" | null;
  /** Why the journal ended, if it did. */
  ended: string | null;
  watches: number;
  /** Walks not made: the last one's result stood (standing()). */
  standing: number;
}

export class ChangeJournal {
  private readonly watches = new Map<string, { w: FSWatcher; since: number }>();
  /** Directories something happened in since the last begin(), and paths an event named (an entry of a watched directory). */
  private dirty = new Set<string>();
  private named = new Set<string>();
  private events = 0;
  private readonly risk: number;
  private readonly maxWatches: number;
  /** The walk under way (watches set during walk n vouch from walk n + 1). */
  private walkNo = 0;
  /** A walk began and did not finish (it threw): what it was told is lost, so the next one trusts nothing. */
  private unfinished = false;
  private readonly fenceDir: string;
  private readonly fenceWatch: FSWatcher;
  private fenceSeq = 0;
  private fenceWait: { name: string; done: () => void } | null = null;
  /** The last walk found a hard-linked file with a name it did not state: the next one trusts no directory. */
  private trustNone = false;
  /** The last finished walk's result, whether the sync-out that made it settled the slot to it, and whether begin() found no event at all since. */
  private last: WalkResult | null = null;
  private lastSettled = false;
  private quiet = false;
  /**
   * Set by begin(): the sync-out of the last walk settled, so every file of a directory this walk
   * vouches for is in the slot as that walk found it (sync-out.ts then compares only the files
   * of the directories read).
   */
  settledBefore = false;
  readonly stats: JournalStats = { fullWalks: 0, lastFull: null, ended: null, watches: 0, standing: 0 };

  /**
   * `tree`: the directory watched; `privateDir`: a directory no sandbox can write (its fence lives
   * there). `opts` (tests): the most directories, and the events between walks past which a walk trusts nothing.
   */
  constructor(private readonly tree: string, privateDir: string, opts: { maxWatches?: number; overflowAfter?: number } = {}) {
    this.risk = opts.overflowAfter ?? overflowRisk();
    this.maxWatches = opts.maxWatches ?? MAX_WATCHES;
    mkdirSync(privateDir, { recursive: true, mode: 0o700 });
    this.fenceDir = mkdtempSync(join(privateDir, "journal-"));
    this.fenceWatch = watch(this.fenceDir, { persistent: false }, (_e, name) => {
      if (this.fenceWait && name === this.fenceWait.name) this.fenceWait.done();
    });
    this.fenceWatch.on("error", () => this.end("the fence's watch failed"));
  }

  get active(): boolean {
    return this.stats.ended === null;
  }

  /** Waits until every event queued before now has been delivered. */
  private fence(): Promise<boolean> {
    const name = `f${++this.fenceSeq}`;
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => finish(false), FENCE_MS);
      const finish = (ok: boolean) => {
        clearTimeout(timer);
        this.fenceWait = null;
        rmSync(join(this.fenceDir, name), { force: true });
        resolve(ok);
      };
      this.fenceWait = { name, done: () => finish(true) };
      writeFileSync(join(this.fenceDir, name), "");
    });
  }

  /**
   * Before a walk of the tree: what happened since the last walk, as the hooks the walk takes
   * (null: walk everything, as without a journal; the watches are set again meanwhile).
   * `listings`: the slot's, whose directories the walk prefetches: each is watched before.
   */
  async begin(listings: DirListings): Promise<WalkJournal | null> {
    if (!this.active) return null;
    const fenced = await this.fence();
    if (!fenced) this.end("a fence never arrived");
    if (!this.active) return null;
    this.walkNo++;
    const overflow = this.events >= this.risk || this.unfinished;
    const trustNone = this.trustNone;
    this.settledBefore = this.lastSettled && this.last !== null;
    this.quiet = !overflow && !trustNone && this.walkNo > 1 && this.events === 0 && this.dirty.size === 0 && this.named.size === 0;
    this.unfinished = true;
    const dirty = this.dirty;
    const named = this.named;
    this.dirty = new Set();
    this.named = new Set();
    this.events = 0;
    if (overflow || this.walkNo === 1) {
      for (const d of [...this.watches.keys()]) this.unwatch(d);
      this.stats.fullWalks++;
      this.stats.lastFull = overflow ? "overflow" : "start";
    } else {
      // A directory an event of its parent named may be another one now: watched again, read in full with its subtree.
      for (const p of named) if (this.watches.has(p)) this.dropSubtree(p, listings);
    }
    // Every directory whose kept listing the walk will use is watched before the walk reads it.
    for (const d of listings.keys()) if (!this.watches.has(d)) this.watch(d);
    if (!this.active) return null;
    const walkNo = this.walkNo;
    return {
      trusted: (d) => {
        const w = this.watches.get(d);
        return !trustNone && w !== undefined && w.since < walkNo && !dirty.has(d);
      },
      reading: (d) => {
        if (!this.watches.has(d)) this.watch(d);
      },
    };
  }

  /**
   * After begin(): the last walk's result when nothing can have changed since (see the top of
   * this file), to stand for the walk (it is then passed to walked() as this walk's); null: walk.
   * `listings` (the slot's): only once the last walk kept every directory's listing, so that the
   * first walk after a quiet spell reads only what it is told of, as the walk before it would have.
   */
  standing(listings: DirListings): WalkResult | null {
    const last = this.last;
    if (!this.active || !this.quiet || !last || !this.lastSettled || last.hardLinked || last.skipped.length) return null;
    const walkNo = this.walkNo;
    const watched = (d: string) => {
      const w = this.watches.get(d);
      return w !== undefined && w.since < walkNo && listings.has(d);
    };
    if (!watched("") || !last.dirs.every(watched)) return null;
    this.stats.standing++;
    return { ...last, vouched: last.dirs.length + 1 };
  }

  /** After the walk: the watches of directories no longer there are closed. */
  walked(after: WalkResult): void {
    this.unfinished = false;
    this.last = null;
    this.lastSettled = false;
    this.trustNone = after.linkNamesUnseen;
    if (!this.active) return;
    this.last = after;
    const dirs = new Set(after.dirs);
    for (const d of [...this.watches.keys()]) if (d !== "" && !dirs.has(d)) this.unwatch(d);
    this.stats.watches = this.watches.size;
  }

  /** After the sync-out of the last walk put the slot and the tree back to what storage holds (its settle finished). */
  settled(): void {
    this.lastSettled = this.last !== null;
  }

  /** Ends the journal for good: every later walk is a full one. */
  private end(why: string): void {
    if (!this.active) return;
    this.stats.ended = why;
    this.last = null;
    for (const d of [...this.watches.keys()]) this.unwatch(d);
    this.stats.watches = 0;
  }

  /** Stops watching and removes the fence directory. */
  close(): void {
    this.end("closed");
    this.fenceWatch.close();
    rmSync(this.fenceDir, { recursive: true, force: true });
  }

  private watch(d: string): void {
    if (this.watches.size >= this.maxWatches) return this.end(`more than ${this.maxWatches} directories`);
    let w: FSWatcher;
    try {
      w = watch(d === "" ? this.tree : join(this.tree, d), { persistent: false }, (_e, name) => this.event(d, name));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // Gone or not a directory: the walk finds out; nothing to watch. Anything else (ENOSPC: the watch limit) ends the journal.
      if (code === "ENOENT" || code === "ENOTDIR") return;
      return this.end(`a watch could not be set (${code ?? String(e)})`);
    }
    w.on("error", () => this.end("a watch failed"));
    this.watches.set(d, { w, since: this.walkNo });
  }

  private unwatch(d: string): void {
    this.watches.get(d)?.w.close();
    this.watches.delete(d);
  }

  /** Closes the watches of `d` and below, and forgets their listings: the walk reads them again after watching them anew. */
  private dropSubtree(d: string, listings: DirListings): void {
    const pre = d === "" ? "" : `${d}/`;
    for (const k of [...this.watches.keys()]) if (k === d || k.startsWith(pre)) this.unwatch(k);
    for (const k of [...listings.keys()]) if (k === d || k.startsWith(pre)) listings.delete(k);
  }

  private event(d: string, name: string | Buffer | null): void {
    this.events++;
    this.dirty.add(d);
    if (typeof name === "string" && name !== "") this.named.add(d === "" ? name : `${d}/${name}`);
    else this.named.add(d); // no name: take it as the directory's own change
  }
}

/** A journal of `tree`, or null when none can be kept here (no inotify): the sandbox's walks are then full ones. */
export function openJournal(tree: string, privateDir: string): ChangeJournal | null {
  try {
    return new ChangeJournal(tree, privateDir);
  } catch {
    return null;
  }
}

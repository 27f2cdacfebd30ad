/**
 * The first walk after a cold download, on the download's word (issue #31 §2). A cold slot's
 * tree is empty until its download (download.ts) makes every directory and file of it, so when
 * the download ends the runner knows the tree's every listing and every file's fingerprint
 * without reading them. Handed to a change journal armed at that moment (change-journal.ts,
 * arm), they let the walk after the command (walk.ts) take every directory's listing that no
 * event named since (the rest of the sync-in, the command) without a readdir; every file is still
 * lstat'ed, as in any walk with kept listings (a change inotify does not report, a write through
 * a shared mmap or through a hard link made and removed meanwhile, still shows in its ctime). On
 * 10,000 files in 3,467 directories the full walk was 0.3–2 s of a cold run (docs/benchmarks.md).
 *
 * Exact only while nothing but the download has touched the tree: the listings are made, and the
 * journal armed, synchronously as the download returns, before anything else runs in the tree.
 * A listing made here has no key (its directory's fingerprint is not read): a walk without the
 * journal's word reads the directory; one with it takes the key from its prefetched lstat.
 * Node only.
 */
import type { DirListing, DirListings, FileEntry } from "./walk.js";
import type { FileState, Slot } from "./tree.js";
import { openJournal, type ChangeJournal } from "./change-journal.js";

/**
 * Below this many files a cold walk costs a few ms: no journal is armed (its fence and its
 * watches would cost about as much). The bench's 10,000 files: 0.3–0.8 s.
 */
export const HANDOVER_MIN_FILES = 1000;

/**
 * The listings of a tree made from nothing: `files` (the slot's, as the download recorded each:
 * fingerprint, size, execute bit) and `dirs` (every directory it made), the root's "" included.
 */
export function madeListings(files: ReadonlyMap<string, FileState>, dirs: Iterable<string>): DirListings {
  const out: DirListings = new Map();
  const listing = (d: string): DirListing => {
    let l = out.get(d);
    if (!l) out.set(d, (l = { key: "", names: [], dirs: [], paths: [], seen: [], multi: false }));
    return l;
  };
  const add = (path: string, entry: FileEntry | undefined) => {
    const i = path.lastIndexOf("/");
    const l = listing(i < 0 ? "" : path.slice(0, i));
    l.names.push(i < 0 ? path : path.slice(i + 1));
    l.dirs.push(entry === undefined);
    l.paths!.push(path);
    l.seen!.push(entry);
  };
  listing("");
  for (const d of dirs) {
    listing(d);
    add(d, undefined);
  }
  for (const [p, f] of files) add(p, { fp: f.fp, size: f.size, exec: f.exec });
  return out;
}

/**
 * A cold run's hand-over (runner.ts, as its download returns): the slot's listings made from what
 * the download made, and a change journal of the tree (`home`: where the walk will find it)
 * armed on them at `at` (where the tree is now). null, and no listing, for a download too small
 * to be worth it or where no journal can be kept (the walk then reads every directory, as before).
 * The caller closes the journal after the walk.
 */
export function handOver(slot: Slot, dirs: ReadonlySet<string>, home: string, privateDir: string, minFiles = HANDOVER_MIN_FILES): ChangeJournal | null {
  if (slot.files.size < minFiles || slot.listings.size) return null;
  const journal = openJournal(home, privateDir);
  if (!journal) return null;
  for (const [d, l] of madeListings(slot.files, dirs)) slot.listings.set(d, l);
  journal.arm(slot.listings, slot.tree);
  if (journal.active) return journal;
  slot.listings.clear(); // a watch could not be set: a listing without a key is no use to a walk without a journal
  journal.close();
  return null;
}

/**
 * After the run (walked or not): a listing still without a key (no walk took it) is dropped, and
 * the journal's watches are closed after the answer (thousands of them cost tens of ms).
 */
export function endHandOver(journal: ChangeJournal | null, slot: Slot): void {
  if (!journal) return;
  for (const [d, l] of slot.listings) if (l.key === "") slot.listings.delete(d);
  setImmediate(() => journal.close());
}

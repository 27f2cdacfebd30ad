/**
 * The walk of a slot's tree after a run: every regular file with its fingerprint, every
 * directory, every symlink with its target (docs/symlinks.md), and what may not be written
 * back (special files, bad names). No symlink is followed; names that are not UTF-8 are read
 * as bytes (dir-entries.ts).
 */
import { constants, lstatSync, promises as fs, readdirSync, statfsSync, type Dirent } from "node:fs";
import { join } from "node:path";
import type { Skipped } from "../../lib/exec/types.js";
import { rawPath, readEntries, shownName } from "./dir-entries.js";
import { statPaths, type Stats } from "./stat-pool.js";
import { answer, partOf, prefetch, raised, statAt, type Stat } from "./lstat-answers.js";
import { fingerprint, isExec, isValidName, nameProblem } from "./file-marks.js";
import { listingSettledMs } from "./listing-settled.js";
import { noteLink, someNameUnseen, type LinkNames } from "./hard-links.js";

export interface WalkResult {
  /** Regular files: path → fingerprint, size and execute bit. */
  files: Map<string, FileEntry>;
  dirs: string[];
  /** Entries of each directory walked ("" = the root): what pruneSettled counts down. */
  counts: Map<string, number>;
  /** Symlinks (valid names): path → target, as readlink gives it. */
  links: Map<string, string>;
  /** Fifos, sockets, devices, bad names (a link's included): never uploaded, removed when settling. */
  skipped: Skipped[];
  /** Skipped entries whose name is not UTF-8: their shown path → the raw path that reaches them (removal). */
  rawPaths: Map<string, Buffer>;
  /** Directories taken on a change journal's word (their listing and files not read again). */
  vouched: number;
  /** A regular file had more than one hard link (a write through a name elsewhere is heard only there: change-journal.ts). */
  hardLinked: boolean;
  /**
   * Such a file has a name this walk did not state: in a directory taken on a journal's word (a link
   * made since it was read adds no event there), or outside the tree. The next walk then trusts none.
   */
  linkNamesUnseen: boolean;
  /** The regular files of the directories this walk read (not vouched for): with a journal, the only ones that can differ from the last walk's. */
  readFiles: string[];
}

/** A directory's listing as a walk read it: its names, which of them are directories, and the key it holds for. */
export interface DirListing {
  /** The directory's fingerprint (inode, size, mtime and ctime) when it was read: the key it holds for. */
  key: string;
  names: string[];
  dirs: boolean[];
  /** Each entry's path from the root (made once while the listing holds: the same string, its hash kept, every walk). */
  paths?: string[];
  /** The last walk's entry of each regular file, by index: the next walk keeps it while the file's fingerprint is the same. */
  seen?: (FileEntry | undefined)[];
  /** A file of it had more than one hard link when last stated: a change through another name leaves this directory's watch silent (never vouched for). */
  multi?: boolean;
}

/**
 * What a change journal (change-journal.ts) tells a walk: the directories it vouches for (no
 * entry added, removed or renamed, no file of it written or its attributes changed since the
 * walk that last read them, whose listing and file entries then stand without a system call),
 * and a hook called before a directory it does not know is first read (its watch is set first).
 */
export interface WalkJournal {
  trusted(dir: string): boolean;
  reading(dir: string, abs: string): void;
}

/** A regular file as a walk found it. */
export interface FileEntry {
  fp: string;
  size: number;
  exec: boolean;
}

/** Listings a walk may reuse (directory → listing): the slot's, from its last walk. */
export type DirListings = Map<string, DirListing>;

/** A reused listing named an entry that is gone: the walk starts again without listings. */
class StaleListing extends Error {}

/** Entries of the walk whose lstat is under way: their paths, and the batches that stat them (in order). */
interface Deferred {
  rel: string[];
  abs: string[];
  /** The listing each entry is of (none for a directory read as bytes), and its index there: its entry is kept in the listing's `seen`. */
  listing: (DirListing | undefined)[];
  index: number[];
  batches: Promise<Stats>[];
  sent: number;
}

/** Paths are stated in batches of this many (stat-pool.ts): side by side, and beside the walk of the directories. */
const STAT_BATCH = 2048;

/**
 * Lists the tree without following any symlink. The lstat calls are made side by side in
 * batches (stat-pool.ts): those of the paths the kept listings name before the walk starts
 * (prefetch), those of entries no listing named while the walk goes on (a directory no listing
 * named is stated where the walk reaches it). Nothing else changes the tree during a walk, so
 * an answer taken early is the answer.
 * The entry type comes from readdir (Node lstats entries of unknown type itself), and every
 * entry gets the one lstat its fingerprint or its kind needs. Names are read as strings; a
 * directory holding a name that is not UTF-8 (decoded with U+FFFD, which would name another
 * file) is read again as bytes (dir-entries.ts).
 *
 * `listings` (the slot's, updated in place): while a directory's fingerprint (inode, size,
 * mtime, ctime) is that of its kept listing, the listing stands for readdir (no open +
 * getdents + close). Adding, removing or renaming an entry changes the directory's mtime and
 * ctime, and ctime cannot be set by a command; a listing is only kept for a directory settled
 * for listingSettledMs, so no change after it can reuse its ctime. Files are lstat'ed every
 * time (their content changes leave the directory alone). `now` is the walk's start (tests move it).
 */
export async function walk(tree: string, listings: DirListings = new Map(), now = Date.now(), journal?: WalkJournal): Promise<WalkResult> {
  try {
    return await walkWith(tree, listings, now, journal);
  } catch (e) {
    if (!(e instanceof StaleListing)) throw e;
    listings.clear();
    return walkWith(tree, listings, now, journal);
  }
}

/** A kept listing the journal vouches for, whose every entry is a directory or a regular file the last walk stated (no link, no special file, no hard-linked file). */
function vouched(l: DirListing | undefined, rel: string, journal: WalkJournal | undefined): l is DirListing & { paths: string[]; seen: FileEntry[] } {
  if (!journal || !l || l.multi !== false || !l.seen || !l.paths || !journal.trusted(rel)) return false;
  for (let i = 0; i < l.names.length; i++) if (!l.dirs[i] && l.seen[i] === undefined) return false;
  return true;
}

async function walkWith(tree: string, listings: DirListings, now: number, journal?: WalkJournal): Promise<WalkResult> {
  const out: WalkResult = { files: new Map(), dirs: [], counts: new Map(), links: new Map(), skipped: [], rawPaths: new Map(), vouched: 0, hardLinked: false, linkNamesUnseen: false, readFiles: [] };
  const named: LinkNames = new Map(); // hard-linked files by inode: their names stated
  const links: string[] = []; // their targets are read after the walk (asynchronously)
  const settled = BigInt(now - listingSettledMs(statfsSync(tree).type)) * 1_000_000n;
  const kept: DirListings = new Map();
  const reused = listings.size > 0;
  const skip = journal && ((d: string) => vouched(listings.get(d), d, journal));
  const known = reused ? await prefetch(tree, listings, skip) : null;
  const stack = [""];
  try {
    while (stack.length) {
      const later: Deferred = { rel: [], abs: [], listing: [], index: [], batches: [], sent: 0 };
      while (stack.length) {
        const rel = stack.pop()!;
        const abs = rel === "" ? tree : `${tree}/${rel}`;
        const pre = rel === "" ? "" : `${rel}/`;
        let l = listings.get(rel);
        if (vouched(l, rel, journal)) {
          // Unchanged since the walk that read it: its listing and its files' entries stand as they are.
          kept.set(rel, l);
          out.vouched++;
          out.counts.set(rel, l.names.length);
          for (let i = 0; i < l.names.length; i++) {
            if (l.dirs[i]) sortOut(out, stack, links, l.paths[i]!, null);
            else out.files.set(l.paths[i]!, l.seen[i]!);
          }
          continue;
        }
        const at = known?.at.get(rel);
        if (at === undefined) journal?.reading(rel, abs);
        const st = at === undefined ? statNow(abs) : raised(rel, statAt(known!, at));
        // The prefetched answers of a listing's entries hold while the listing does (they follow its directory's).
        let next = at === undefined ? -1 : at + 1;
        if (!l || l.key !== st.fp) {
          next = -1;
          let names: Dirent[];
          try {
            names = readdirSync(abs, { withFileTypes: true });
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== "EACCES") throw e;
            await fs.chmod(abs, 0o755); // the command took its own permission away
            names = readdirSync(abs, { withFileTypes: true });
          }
          if (names.some((d) => d.name.includes("\uFFFD"))) {
            out.counts.set(rel, names.length);
            walkBytes(out, stack, links, later, abs, pre); // never kept
            continue;
          }
          l = { key: st.fp, names: names.map((d) => d.name), dirs: names.map((d) => d.isDirectory()) };
        }
        l.multi = false;
        if (ctimeOf(st.fp) < settled) kept.set(rel, l);
        out.counts.set(rel, l.names.length);
        // Its entries' paths are made once while the listing holds, and each regular file's entry is kept in it.
        const paths = (l.paths ??= l.names.map((n) => pre + n));
        const seen = (l.seen ??= new Array<FileEntry | undefined>(l.names.length));
        if (next < 0) {
          for (let i = 0; i < l.names.length; i++) visit(out, stack, links, later, abs, l, i);
        } else {
          // The listing holds: a file whose fingerprint holds keeps its entry.
          for (let i = 0; i < l.names.length; i++) {
            const r = paths[i]!;
            if (l.dirs[i]) {
              sortOut(out, stack, links, r, null);
              continue;
            }
            const k = partOf(known!, next);
            const part = known!.parts[k]!;
            const j = next++ - known!.starts[k]!;
            const prev = seen[i];
            if (part.nlink[j]! > 1 && part.err[j] === undefined) noteLink(out, named, part.fp[j]!, part.nlink[j]!), (l.multi = true);
            if (prev !== undefined && part.err[j] === undefined && part.fp[j] === prev.fp) out.files.set(r, prev), out.readFiles.push(r);
            else seen[i] = sortOut(out, stack, links, r, answer(part, j));
          }
        }
        if (later.abs.length - later.sent >= STAT_BATCH) send(later);
      }
      send(later);
      // Entries that turned out to be directories go on the stack: the loop walks them next.
      let i = 0;
      for (const b of await Promise.all(later.batches))
        for (let j = 0; j < b.fp.length; j++, i++) {
          const entry = sortOut(out, stack, links, later.rel[i]!, answer(b, j));
          if (b.nlink[j]! > 1 && entry) noteLink(out, named, entry.fp, b.nlink[j]!);
          const l = later.listing[i];
          if (!l) continue;
          l.seen![later.index[i]!] = entry;
          if (b.nlink[j]! > 1) l.multi = true;
        }
    }
  } catch (e) {
    // Nothing else changes the tree during a walk: an entry gone can only be a reused listing's.
    if (reused && ((e as NodeJS.ErrnoException).code === "ENOENT" || (e as NodeJS.ErrnoException).code === "ENOTDIR")) throw new StaleListing();
    throw e;
  }
  out.linkNamesUnseen = someNameUnseen(named);
  listings.clear();
  for (const [d, l] of kept) listings.set(d, l);
  for (const p of links) {
    const target = await fs.readlink(join(tree, p)).catch(() => null);
    if (target === null || target.includes("\uFFFD")) out.skipped.push({ path: p, reason: "invalid_name", detail: "the link's target could not be read as UTF-8" });
    else out.links.set(p, target);
  }
  return out;
}

/** A directory's lstat taken now (one no kept listing named). Throws what lstat threw. */
function statNow(abs: string): Exclude<Stat, string> {
  const st = lstatSync(abs, { bigint: true });
  return { mode: Number(st.mode), size: Number(st.size), fp: fingerprint(st), nlink: Number(st.nlink) };
}

/** The ctime (ns) a fingerprint holds: its last field. */
const ctimeOf = (fp: string): bigint => BigInt(fp.slice(fp.lastIndexOf(":") + 1));

/** Sends the entries not yet under way to the stat workers. */
function send(later: Deferred): void {
  if (later.abs.length > later.sent) later.batches.push(statPaths(later.abs.slice(later.sent)));
  later.sent = later.abs.length;
}

/** Entry `i` of listing `l` of a directory just read: a directory goes on the stack; anything else waits for its lstat (deferred). */
function visit(out: WalkResult, stack: string[], links: string[], later: Deferred, abs: string, l: DirListing, i: number): void {
  const r = l.paths![i]!;
  if (l.dirs[i]) return void sortOut(out, stack, links, r, null);
  defer(later, r, `${abs}/${l.names[i]!}`, l, i);
}

function defer(later: Deferred, rel: string, abs: string, l: DirListing | undefined, i: number): void {
  later.rel.push(rel);
  later.abs.push(abs);
  later.listing.push(l);
  later.index.push(i);
}

/** An entry by its kind: null (readdir says a directory), or what lstat said (an error code is thrown). Returns a regular file's entry. */
function sortOut(out: WalkResult, stack: string[], links: string[], r: string, answered: Stat | null): FileEntry | undefined {
  const st = answered === null ? null : raised(r, answered);
  const type = st === null ? constants.S_IFDIR : st.mode & constants.S_IFMT;
  if (type === constants.S_IFDIR) {
    // From readdir, or readdir said otherwise and the entry changed meanwhile (or the file system reports no types).
    if (!isValidName(r)) return void out.skipped.push({ path: r, reason: "invalid_name", detail: nameProblem(r) });
    out.dirs.push(r);
    stack.push(r);
  } else if (type === constants.S_IFREG) {
    if (!isValidName(r)) return void out.skipped.push({ path: r, reason: "invalid_name", detail: nameProblem(r) });
    const entry: FileEntry = { fp: st!.fp, size: st!.size, exec: isExec(st!.mode) };
    out.files.set(r, entry);
    out.readFiles.push(r);
    return entry;
  } else if (type === constants.S_IFLNK) {
    if (!isValidName(r)) return void out.skipped.push({ path: r, reason: "invalid_name", detail: nameProblem(r) });
    links.push(r);
  } else out.skipped.push({ path: r, reason: "special_file" });
}

/** A directory holding a name that is not UTF-8: its entries as bytes; such a name is skipped whole (a directory is not entered). */
function walkBytes(out: WalkResult, stack: string[], links: string[], later: Deferred, abs: string, pre: string): void {
  for (const d of readEntries(abs)) {
    if (d.name !== null) {
      if (d.isDirectory) sortOut(out, stack, links, pre + d.name, null);
      else defer(later, pre + d.name, `${abs}/${d.name}`, undefined, 0);
      continue;
    }
    const shown = pre + shownName(d.raw);
    out.skipped.push({ path: shown, reason: "invalid_name", detail: "the name is not valid UTF-8" });
    out.rawPaths.set(shown, rawPath(abs, d.raw));
  }
}

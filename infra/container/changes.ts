/**
 * What a command changed: the walk of a slot's tree after the run (no symlink followed, names
 * read as bytes) and its diff against the slot's files as of the start of the run.
 */
import { lstatSync, promises as fs, readdirSync, type Dirent } from "node:fs";
import { join } from "node:path";
import type { Skipped } from "../../lib/exec/types.js";
import { rawPath, readEntries, shownName } from "./dir-entries.js";
import { fingerprint, hashFile, isExec, isValidName, pool, type FileState, type Slot } from "./tree.js";

export interface WalkResult {
  /** Regular files: path → fingerprint, size and execute bit. */
  files: Map<string, { fp: string; size: number; exec: boolean }>;
  dirs: string[];
  /** Entries of each directory walked ("" = the root): what pruneSettled counts down. */
  counts: Map<string, number>;
  /** Symlinks, fifos, sockets, devices, bad names: never uploaded, removed when settling. */
  skipped: Skipped[];
  /** Skipped entries whose name is not UTF-8: their shown path → the raw path that reaches them (removal). */
  rawPaths: Map<string, Buffer>;
}

/** A directory's listing as a walk read it: its names, which of them are directories, and the key it holds for. */
export interface DirListing {
  /** The directory's inode, mtime and ctime (ns) when it was read: the key it holds for. */
  ino: bigint;
  mtime: bigint;
  ctime: bigint;
  names: string[];
  dirs: boolean[];
}

/** Listings a walk may reuse (directory → listing): the slot's, from its last walk. */
export type DirListings = Map<string, DirListing>;

/**
 * A listing is kept for the next walk only when its directory's ctime was at least this much
 * older than the walk's start: any later change of the directory then gets a ctime the key
 * cannot hold, even with timestamps as coarse as 2 s (FAT) or a clock tick behind.
 */
export const LISTING_SETTLED_MS = 3000;

/** A reused listing named an entry that is gone: the walk starts again without listings. */
class StaleListing extends Error {}

/**
 * Lists the tree without following any symlink. Synchronous on purpose: 10,000 lstat calls
 * through the thread pool cost ~5x more, and nothing else of this run can proceed meanwhile.
 * The entry type comes from readdir (Node lstats entries of unknown type itself): directories
 * need no lstat, files get the one lstat their fingerprint needs. Names are read as strings;
 * a directory holding a name that is not UTF-8 (decoded with U+FFFD, which would name another
 * file) is read again as bytes (dir-entries.ts).
 *
 * `listings` (the slot's, updated in place): each directory is lstat'ed, and while its inode,
 * mtime and ctime are those of its kept listing, that listing stands for readdir (one system
 * call instead of open + getdents + close). Adding, removing or renaming an entry changes the
 * directory's mtime and ctime, and ctime cannot be set by a command; a listing is only kept
 * for a directory settled for LISTING_SETTLED_MS, so no change after it can reuse its ctime.
 * Files are lstat'ed every time (their content changes leave the directory alone).
 * `now` is the walk's start (tests move it).
 */
export async function walk(tree: string, listings: DirListings = new Map(), now = Date.now()): Promise<WalkResult> {
  try {
    return await walkWith(tree, listings, now);
  } catch (e) {
    if (!(e instanceof StaleListing)) throw e;
    listings.clear();
    return walkWith(tree, listings, now);
  }
}

async function walkWith(tree: string, listings: DirListings, now: number): Promise<WalkResult> {
  const out: WalkResult = { files: new Map(), dirs: [], counts: new Map(), skipped: [], rawPaths: new Map() };
  const links: Skipped[] = []; // their targets are read after the walk (asynchronously)
  const settled = BigInt(now - LISTING_SETTLED_MS) * 1_000_000n;
  const kept: DirListings = new Map();
  const reused = listings.size > 0;
  const stack = [""];
  try {
    while (stack.length) {
      const rel = stack.pop()!;
      const abs = rel === "" ? tree : `${tree}/${rel}`;
      const pre = rel === "" ? "" : `${rel}/`;
      const st = lstatSync(abs, { bigint: true });
      let l = listings.get(rel);
      if (!l || l.ino !== st.ino || l.mtime !== st.mtimeNs || l.ctime !== st.ctimeNs) {
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
          walkBytes(out, stack, links, abs, pre); // never kept
          continue;
        }
        l = { ino: st.ino, mtime: st.mtimeNs, ctime: st.ctimeNs, names: names.map((d) => d.name), dirs: names.map((d) => d.isDirectory()) };
      }
      if (st.ctimeNs < settled) kept.set(rel, l);
      out.counts.set(rel, l.names.length);
      for (let i = 0; i < l.names.length; i++) visit(out, stack, links, abs, pre, l.names[i]!, l.dirs[i]!);
    }
  } catch (e) {
    // Nothing else changes the tree during a walk: an entry gone can only be a reused listing's.
    if (reused && ((e as NodeJS.ErrnoException).code === "ENOENT" || (e as NodeJS.ErrnoException).code === "ENOTDIR")) throw new StaleListing();
    throw e;
  }
  listings.clear();
  for (const [d, l] of kept) listings.set(d, l);
  for (const s of links) s.detail = `-> ${await fs.readlink(join(tree, s.path)).catch(() => "?")}`;
  return out;
}

/** One entry of the walk (a name that is UTF-8). */
function visit(out: WalkResult, stack: string[], links: Skipped[], abs: string, pre: string, name: string, isDirectory: boolean): void {
  const r = pre + name;
  if (isDirectory) {
    if (isValidName(r)) {
      out.dirs.push(r);
      stack.push(r);
    } else out.skipped.push({ path: r, reason: "invalid_name" });
    return;
  }
  const st = lstatSync(`${abs}/${name}`, { bigint: true });
  if (st.isFile()) {
    if (isValidName(r)) out.files.set(r, { fp: fingerprint(st), size: Number(st.size), exec: isExec(st.mode) });
    else out.skipped.push({ path: r, reason: "invalid_name" });
  } else if (st.isDirectory()) {
    // readdir said otherwise: the entry changed meanwhile (or the file system reports no types).
    visit(out, stack, links, abs, pre, name, true);
  } else if (st.isSymbolicLink()) {
    const s: Skipped = { path: r, reason: "symlink" };
    out.skipped.push(s);
    links.push(s);
  } else out.skipped.push({ path: r, reason: "special_file" });
}

/** A directory holding a name that is not UTF-8: its entries as bytes; such a name is skipped whole (a directory is not entered). */
function walkBytes(out: WalkResult, stack: string[], links: Skipped[], abs: string, pre: string): void {
  for (const d of readEntries(abs)) {
    if (d.name !== null) {
      visit(out, stack, links, abs, pre, d.name, d.isDirectory);
      continue;
    }
    const shown = pre + shownName(d.raw);
    out.skipped.push({ path: shown, reason: "invalid_name", detail: "the name is not valid UTF-8" });
    out.rawPaths.set(shown, rawPath(abs, d.raw));
  }
}

export interface Change {
  path: string;
  kind: "created" | "modified" | "deleted";
  /** The version the run started from (modified, deleted). */
  base?: FileState;
}

/** What the command changed: created, modified (content differs), deleted. */
export async function diff(slot: Slot, after: WalkResult): Promise<Change[]> {
  const changes: Change[] = [];
  const suspects: string[] = [];
  for (const [p, loc] of after.files) {
    const st = slot.files.get(p);
    if (!st) changes.push({ path: p, kind: "created" });
    else if (st.fp !== loc.fp) suspects.push(p);
  }
  await pool(8, suspects, async (p) => {
    const st = slot.files.get(p)!;
    const loc = after.files.get(p)!;
    // Same bytes (a touch, a chmod): no change of content; the execute bit is the runner's business.
    if (loc.size === st.size && (await hashFile(join(slot.tree, p))) === st.hash) slot.files.set(p, { ...st, fp: loc.fp });
    else changes.push({ path: p, kind: "modified", base: st });
  });
  for (const [p, st] of slot.files) if (!after.files.has(p)) changes.push({ path: p, kind: "deleted", base: st });
  return changes.sort((a, b) => (a.path < b.path ? -1 : 1));
}

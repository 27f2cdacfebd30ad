/**
 * Where a slot's directories land on disk (ext4's Orlov allocator), so that a cold start creates
 * its thousands of files in block groups of their own instead of where trees were just deleted:
 * ext4 without a journal (this VM's root, and a common /tmp) skips every inode freed in the last
 * minute (up to six while its table block is dirty) one by one on each create, so creating
 * files where a tree was just removed costs a scan per file (quadratic in the tree's size).
 *
 * Two steps. The slot's tree and its staging directory carry the "top directory" flag (`chattr
 * +T`, set by the slot's first download that makes a directory: download.ts): a directory made in them is placed as ext4 places directories at its root, in a group
 * with few directories and above-average free inodes and blocks, and the files and directories
 * below it follow it into that group. But that search starts at a group chosen by a hash of the
 * directory's name, and the first group it finds with the fewest directories is most often the
 * one a deleted namesake just emptied (the same repository's `src`, made again by the next cold
 * start after the last one's tree was removed). So a top-level directory is made in the staging
 * directory under a random name (a random start) and renamed into the tree: the rename moves a
 * name, not the inode, and the subtree then grows where the random name put it. Measured on this
 * machine's shared ext4 (10,000 files in 3,190 directories, mkdir/open/write/close only, runs
 * alternated): 12.2-13.0 s by name, 1.3-2.4 s by random name
 * (docs/benchmarks/investigations-cold-runs-and-uploads.md, "The cold run's download").
 * Best effort throughout: other file systems refuse the flag, and the rename's only cost there is
 * one more system call per top-level directory.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { lstatSync, mkdirSync, renameSync, rmdirSync } from "node:fs";
import { join } from "node:path";

/** Sets the "top directory" flag on `dirs` (one `chattr` process; errors ignored). */
export async function spreadDirectories(...dirs: string[]): Promise<void> {
  await new Promise<void>((resolve) => execFile("chattr", ["+T", ...dirs], () => resolve()));
}

/**
 * Makes the directory `abs` (a child of a spread tree's root) as mkdirSync(abs, {mode}) would,
 * placed at random: made in `staging` (a spread directory on the same file system) under a random
 * name, then renamed to `abs`. Only when nothing is at `abs` (a rename would replace an empty
 * directory there); otherwise, or when staging fails, plain mkdirSync, with its errors (EEXIST).
 */
export function mkdirPlaced(abs: string, staging: string | null, mode: number): void {
  if (staging && !lstatSync(abs, { throwIfNoEntry: false })) {
    const tmp = join(staging, `d-${randomBytes(8).toString("hex")}`);
    let made = false;
    try {
      mkdirSync(tmp, { mode });
      made = true;
      renameSync(tmp, abs);
      return;
    } catch {
      if (made) rmdirSync(tmp); // empty: it was never moved
    }
  }
  mkdirSync(abs, { mode });
}

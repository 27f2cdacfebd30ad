/**
 * How much a command may add to the workspace tree (RunLimits.disk_mb). RLIMIT_FSIZE bounds
 * one file; this bounds the sum, so a loop of 1 GiB files cannot fill the runner's disk.
 *
 * While the command runs, the tree's size is sampled (`treeUsage`, one lstat per file, never
 * following a link) every 0.5-2 s, the interval 20 times the cost of a sample (~5% of a core;
 * more for a tree whose sample takes over 100 ms, since the interval stops at 2 s); past the
 * quota the run is stopped. Between two samples a command can
 * overshoot by what the disk writes in that time: the operator sizes the runner's disk with
 * that margin. After the run the runner checks the exact figure from its own walk (runner.ts),
 * so a run over the quota never writes anything back.
 *
 * Sizes alone miss what holds the disk without bytes: a directory is a 4 KiB block, every entry
 * (an empty file, a link) an inode. So each entry the tree gained since the first sample counts
 * ENTRY_BYTES too: a command making millions of directories or empty files (~17,000 a second here:
 * 42 GB and 10 million inodes in a 600 s call) is stopped at the same quota (1 million entries for
 * 4 GiB). The first sample is the baseline, so nothing is counted before the run (no walk more);
 * what a command makes before it (0.5 s) is the overshoot between two samples, as for bytes.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync } from "node:fs";
import { rawPath, readEntries, type DirEntry } from "./dir-entries.js";

/** What one entry of the tree holds of the runner's disk at least, whatever its size: a block (and an inode). */
export const ENTRY_BYTES = 4096;

/** What a tree holds: the bytes of its regular files, and its entries of every kind (the top not counted). */
export interface TreeUsage {
  bytes: number;
  entries: number;
}

/**
 * Bytes of the regular files under `tree` (directories, links and special files count 0), and its entries.
 * Paths are bytes (dir-entries.ts): a name that is not UTF-8 cannot hide a file from the count.
 * Synchronous system calls (several times cheaper than the thread pool's), yielding to the
 * event loop every 2,000 entries so other runs of this handler keep streaming.
 *
 * The command's processes run while this walks, and may swap a directory the walk has listed for
 * a symlink (to a host directory, another slot's tree) before the walk goes into it. So the walk
 * never goes by a path it has not checked: each directory is opened without following a link
 * (O_NOFOLLOW) and read only if it is the very directory its parent listed (device and inode, from
 * the parent's lstat); its entries are then listed and measured through that open descriptor
 * (/proc/self/fd/N/name), where a swap of any directory above it changes nothing.
 */
export async function treeUsage(tree: string): Promise<TreeUsage> {
  let total = 0;
  let seen = 0;
  const top = identity(Buffer.from(tree));
  if (!top) return { bytes: 0, entries: 0 };
  const stack: Dir[] = [top];
  while (stack.length) {
    const dir = stack.pop()!;
    const fd = openListed(dir);
    if (fd === null) continue; // gone, swapped, or made unreadable by the command: the exact check after the run counts it
    try {
      const here = `/proc/self/fd/${fd}`;
      let entries: DirEntry[];
      try {
        entries = readEntries(here);
      } catch {
        continue;
      }
      for (const d of entries) {
        if (++seen % 2000 === 0) await new Promise((r) => setImmediate(r));
        if (!d.isDirectory && !d.isFile) continue;
        try {
          const st = lstatSync(rawPath(here, d.raw), { bigint: true });
          if (d.isFile && st.isFile()) total += Number(st.size);
          else if (d.isDirectory && st.isDirectory()) stack.push({ path: rawPath(dir.path, d.raw), dev: st.dev, ino: st.ino });
        } catch {
          /* removed meanwhile */
        }
      }
    } finally {
      closeSync(fd);
    }
  }
  return { bytes: total, entries: seen };
}

/** A directory the walk will enter: its path and the identity its parent's listing saw. */
type Dir = { path: Buffer; dev: bigint; ino: bigint };

function identity(path: Buffer): Dir | null {
  try {
    const st = lstatSync(path, { bigint: true });
    return st.isDirectory() ? { path, dev: st.dev, ino: st.ino } : null;
  } catch {
    return null;
  }
}

/** An open descriptor of `dir` if its path still names the directory that was listed; else null. */
function openListed(dir: Dir): number | null {
  let fd: number;
  try {
    fd = openSync(dir.path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch {
    return null;
  }
  const st = fstatSync(fd, { bigint: true });
  if (st.dev === dir.dev && st.ino === dir.ino) return fd;
  closeSync(fd);
  return null;
}

export interface DiskWatch {
  /** Set once a sample found the tree over the quota (the run was then stopped). */
  readonly exceeded: boolean;
  stop(): void;
}

/**
 * Samples the tree until stop(); calls onExceed once when it grew more than `limitBytes` past `baseBytes`
 * (bytes, and ENTRY_BYTES per entry gained). Entries are gained past the first sample's count or
 * `baseFiles` (the slot's files before the command), whichever is more: a command that deletes a
 * large tree and makes it again (`rm -rf node_modules && npm ci`) is not charged for what its first
 * 0.5 s deleted.
 */
export function watchDisk(tree: string, baseBytes: number, limitBytes: number, onExceed: () => void, baseFiles = 0): DiskWatch {
  let exceeded = false;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  const schedule = (costMs: number) => {
    if (stopped) return;
    timer = setTimeout(() => void sample(), Math.min(2000, Math.max(500, costMs * 20)));
    timer.unref();
  };
  let entriesFirst: number | null = null;
  const sample = async () => {
    const t0 = Date.now();
    const usage = await treeUsage(tree);
    if (stopped) return;
    entriesFirst ??= Math.max(usage.entries, baseFiles);
    if (usage.bytes - baseBytes + ENTRY_BYTES * Math.max(0, usage.entries - entriesFirst) > limitBytes) {
      exceeded = true;
      onExceed();
      return;
    }
    schedule(Date.now() - t0);
  };
  schedule(0);
  return {
    get exceeded() {
      return exceeded;
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}

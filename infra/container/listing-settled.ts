/** When a directory's listing may be kept for the next walk (walk.ts): how long it must have been unchanged. */

/**
 * A listing is kept for the next walk only when its directory's ctime was at least this much
 * older than the walk's start: any later change of the directory then gets a ctime the key
 * cannot hold, even with timestamps as coarse as 2 s (FAT) or a clock tick behind.
 */
export const LISTING_SETTLED_MS = 3000;

/**
 * The same on the file systems whose timestamps have nanoseconds (statfs magic numbers: ext2-4,
 * tmpfs, XFS, btrfs, f2fs, overlayfs). Linux stamps a change with its coarse clock, at most one
 * tick (≤ 10 ms) behind the time the walk reads with Date.now(), so a change after a walk's
 * start gets a ctime later than any kept listing's. A second run soon after a cold start (whose
 * download changed every directory) then reuses its listings too.
 */
export const FINE_LISTING_SETTLED_MS = 100;

const FINE_TIMESTAMPS = new Set([0xef53, 0x01021994, 0x58465342, 0x9123683e, 0xf2f52010, 0x794c7630]);

/** How long a directory of the file system with statfs magic `type` must be unchanged before its listing is kept. */
export const listingSettledMs = (type: number | bigint): number => (FINE_TIMESTAMPS.has(Number(type)) ? FINE_LISTING_SETTLED_MS : LISTING_SETTLED_MS);

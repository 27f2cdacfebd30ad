/**
 * The write-back's plan (lib/sync/writeback-bound.ts): what the run's created and modified files
 * add up to, from one lstat per file after the command (the sizes the write-back then uses to
 * split its files into batches). The API checks it against the storage quotas before anything is
 * written, so a write-back past a quota is refused whole, packed or file by file: the packed path
 * sends it with every stage request (writeback-packed.ts); the file-by-file path with its only put
 * batch, or as a hold taken by a put batch of no file before anything else (planWay). A write-back of one change
 * sends none: one file is written whole or refused by its own charge, as before.
 */
import { promises as fs } from "node:fs";
import { join } from "node:path";
import { BATCH_MAX_FILE_BYTES, batchesOf } from "../../lib/sync/batch.js";
import { PUT_BATCH_MAX_FILES, PUT_BATCH_TARGET_BYTES } from "../../lib/sync/put-batch.js";
import type { WriteBackPlan } from "../../lib/sync/writeback-bound.js";
import type { Change } from "./changes.js";
import { pool } from "./tree.js";

/** Files stat'ed at once. */
const STATS = 16;

/** Each written path's size, or null when it is not a regular file any more (written alone: single says why). */
export type Sizes = Map<string, number | null>;

export async function sizesOf(tree: string, writes: Change[]): Promise<Sizes> {
  const sizes: Sizes = new Map();
  await pool(STATS, writes, async (c) => {
    const st = await fs.lstat(join(tree, c.path)).catch(() => null);
    sizes.set(c.path, st && st.isFile() ? st.size : null);
  });
  return sizes;
}

/** Written in a put batch or a stage request (else alone, streamed). */
export const isSmall = (size: number | null | undefined): size is number => size != null && size <= BATCH_MAX_FILE_BYTES;

/**
 * The plan of writing `writes` (the run's running count at 0): their bytes, how many are new paths, the bytes of the versions the
 * modified ones replace; `markers`: the new directory markers the run makes, each a new entry of no bytes (dirs.ts).
 */
export function planOf(writes: Change[], sizes: Sizes, markers = 0): WriteBackPlan {
  const plan = { bytes: 0, files: markers, replaces: 0, before: { bytes: 0, files: 0 } };
  for (const c of writes) {
    const size = sizes.get(c.path);
    if (size == null) continue;
    plan.bytes += size;
    if (c.base) plan.replaces += c.base.size;
    else plan.files++;
  }
  return plan;
}

/**
 * The deletes of `changes`: their files and the bytes of the versions they delete (room, once applied, for a write-back that holds its room);
 * `markers`: the directory markers the run removes, each an entry of no bytes (dirs.ts).
 */
export function deletesOf(changes: Change[], markers = 0): { files: number; bytes: number } {
  const dels = changes.filter((c) => c.kind === "deleted");
  return { files: dels.length + markers, bytes: dels.reduce((n, c) => n + (c.base?.size ?? 0), 0) };
}

/**
 * How the file-by-file write-back of `changes` carries the plan: "none" (nothing is written, or one
 * change is all: whole by itself), "batch" (one group of at most `group` changes, no delete, whose
 * writes are one put batch: the plan rides with it, charged at once, no request more), "hold" (a
 * put batch of no file takes the whole charge ahead, its deletes credited: lib/sync/writeback-hold.ts;
 * then its deletes, its writes drawing on the hold, and a request of no file that releases it).
 * (A run's directory markers made, or removed beside writes, take a hold too: writeback.ts.)
 */
export function planWay(changes: Change[], sizes: Sizes, group: number): "none" | "batch" | "hold" {
  const writes = changes.filter((c) => c.kind !== "deleted");
  if (changes.length < 2 || !writes.length) return "none";
  if (changes.length <= group && writes.length === changes.length && oneBatch(writes, sizes)) return "batch";
  return "hold";
}

/** Whether `writes` go as one put batch (each small, one batch by count and bytes): then it is the write-back's last request, and releases its hold. */
export function oneBatch(writes: Change[], sizes: Sizes): boolean {
  const ws = writes.map((c) => ({ size: sizes.get(c.path) }));
  return writes.length <= PUT_BATCH_MAX_FILES && ws.every((w) => isSmall(w.size)) && batchesOf(ws as { size: number }[], PUT_BATCH_MAX_FILES, PUT_BATCH_TARGET_BYTES).length === 1;
}

/**
 * Packed write-back (wire: lib/sync/stage.ts): when a run created or modified at least
 * STAGE_MIN small files (and 1% of the workspace's), they go as stage requests (up to STAGE_FILES files / STAGE_BYTES each,
 * STAGES_IN_FLIGHT at a time: their bytes land in new packs, nothing visible), then ONE commit
 * makes them current with one switch of the layer pointer. The commit answers per file:
 * written, conflict (as a refused put: the runner saves its copy), or `alone` (an upper object
 * stands at the path: the ordinary conditional put does it). Everything this does not settle
 * (alone files, files no longer small, stage requests refused, an API without the routes) is
 * returned for the ordinary path (writeback.ts), which also keeps deletes, large files and markers.
 * No stage request and no commit starts after the deadline: what is left then is unsynced
 * (staged packs nobody commits are unreferenced: GC deletes them after its grace period).
 * Bounded by the storage quotas before anything is written: every stage request carries the plan
 * of the whole write-back (writeback-plan.ts: the bytes of every file it writes, new files and the
 * bytes they replace) and the run's running count (what it staged before), and the API refuses
 * (QUOTA_EXCEEDED) a write-back the quotas could not accept, before it writes the pack that would
 * pass them (lib/sync/writeback-bound.ts). A stage request answered means the plan was accepted:
 * the ordinary path then sends it no more.
 * Refused: no stage request more, no commit, and none of these files goes the ordinary way (that
 * would write some of them up to the quota): each is skipped with the API's message.
 * Held (writeback-held.ts, when the API holds): the write-back's whole charge was held before any
 * stage request, its deletes credited and applied first; every stage request and the commit carry
 * the hold (`hold`): the stage route counts the hold's room as the run's, the commit draws on it, so
 * a writer racing it cannot take the room between its stages and its commit.
 */
import { join } from "node:path";
import { BATCH_MAX_FILE_BYTES } from "../../lib/sync/batch.js";
import type { PutManyItem } from "../../lib/sync/put-batch.js";
import type { SyncClient } from "../../lib/sync/types.js";
import type { WriteBackPlan } from "../../lib/sync/writeback-bound.js";
import { readSmall } from "./file-body.js";
import type { Change } from "./changes.js";
import { pool } from "./tree.js";
import { isSmall, type Sizes } from "./writeback-plan.js";
import { quotaRefusal } from "./writeback-outcome.js";

/**
 * Fewer small created/modified files than this go the ordinary way; and fewer than 1 per
 * WORKSPACE_RATIO files of the workspace: a commit rewrites the whole manifest (~100 B per file),
 * which for a large workspace costs more than a few hundred single PUTs.
 */
export const STAGE_MIN = 200;
const WORKSPACE_RATIO = 100;
const threshold = (workspaceFiles: number) => Math.max(STAGE_MIN, Math.ceil(workspaceFiles / WORKSPACE_RATIO));
const STAGE_FILES = 2000;
/** Bytes aimed at per stage request (the server takes 8 MiB). */
const STAGE_BYTES = 6 * 1024 * 1024;
const STAGES_IN_FLIGHT = 3;
/** Files read (or stat'ed) at once. */
const READS = 16;
/** Timings for benchmarks (TOOLSHED_LOG_SYNC_STATS, as runner.ts). */
const log = (what: string) => void (process.env.TOOLSHED_LOG_SYNC_STATS && console.error(`sync-stats packed ${what}`));

export interface PackedHooks {
  /** False (and the changes counted as late) once the deadline has passed. */
  inTime(cs: Change[]): boolean;
  written(c: Change, etag: string, size: number, hash: string): Promise<void>;
  conflicted(c: Change): Promise<void>;
  skip(c: Change, e: unknown): void;
}

/** Whether this run's write-back should be packed. */
export const canPack = (sync: SyncClient, changes: Change[], workspaceFiles: number): boolean =>
  !!sync.stage && !!sync.commit && !!sync.putMany && changes.filter((c) => c.kind !== "deleted").length >= threshold(workspaceFiles);

/**
 * What a packed write-back left: the changes for the ordinary path, and the storage quotas' refusal
 * when there was one (then the caller writes nothing more either: a write-back past the quotas is
 * refused whole, its deletes and large files too).
 */
export interface PackedOutcome {
  rest: Change[];
  refused: unknown;
  /** A stage request carrying the plan was answered: the API accepted the write-back's plan. */
  planned: boolean;
}

/**
 * Writes back `changes` (created/modified; `sizes` as stat'ed, `plan` the whole write-back's) through stage + commit;
 * says what is left for the ordinary path, or that the quotas refused the write-back.
 */
export async function packedWriteBack(tree: string, changes: Change[], sync: SyncClient, hooks: PackedHooks, workspaceFiles: number, sizes: Sizes, whole: WriteBackPlan, hold: string | null = null): Promise<PackedOutcome> {
  const terms = hold ? { hold } : undefined;
  const rest: Change[] = [];
  const small: { c: Change; size: number }[] = [];
  for (const c of changes) {
    const size = sizes.get(c.path);
    if (isSmall(size)) small.push({ c, size });
    else rest.push(c);
  }
  if (small.length < threshold(workspaceFiles)) return { rest: changes, refused: null, planned: false };
  small.sort((a, b) => (a.c.path < b.c.path ? -1 : 1));
  const batches: (typeof small)[] = [];
  let bytes = 0;
  for (const x of small) {
    const cur = batches[batches.length - 1];
    if (cur && cur.length < STAGE_FILES && bytes + x.size <= STAGE_BYTES) {
      cur.push(x);
      bytes += x.size;
    } else {
      batches.push([x]);
      bytes = x.size;
    }
  }
  const staged: { c: Change; hash: string; size: number; n: number }[] = [];
  const receipts: string[] = [];
  let unsupported = false;
  /** The storage quotas' refusal of the write-back (the API's QUOTA_EXCEEDED): nothing more is staged or committed. */
  let refused: unknown = null;
  const plan = { ...whole, before: { bytes: 0, files: 0 } };
  let planned = false;
  await pool(STAGES_IN_FLIGHT, batches, async (b) => {
    const cs = b.map((x) => x.c);
    if (refused) return void cs.forEach((c) => hooks.skip(c, refused));
    if (unsupported) return void rest.push(...cs);
    if (!hooks.inTime(cs)) return;
    const read = new Array<{ bytes: Uint8Array; hash: string } | null | undefined>(cs.length);
    await pool(READS, cs.map((c, i) => ({ c, i })), async ({ c, i }) => {
      try {
        read[i] = await readSmall(join(tree, c.path), BATCH_MAX_FILE_BYTES);
      } catch (e) {
        hooks.skip(c, e);
      }
    });
    const items: PutManyItem[] = [];
    const sent: { c: Change; hash: string }[] = [];
    cs.forEach((c, i) => {
      const got = read[i];
      if (got === null) rest.push(c);
      else if (got) {
        items.push({ path: c.path, bytes: got.bytes, ...(c.base ? { ifMatch: c.base.etag } : { ifNoneMatch: "*" as const }) });
        sent.push({ c, hash: got.hash });
      }
    });
    if (!items.length) return;
    // The run's count before this request: what it sent before (as read, not as the walk saw it).
    const before = { ...plan.before };
    for (const i of items) (plan.before.bytes += i.bytes.length), (plan.before.files += i.ifMatch === undefined ? 1 : 0);
    if (refused) return void sent.forEach((s) => hooks.skip(s.c, refused));
    const t0 = Date.now();
    let r;
    try {
      r = await sync.stage!(items, { ...plan, before }, terms);
    } catch (e) {
      if (quotaRefusal(e)) {
        refused ??= e;
        return void sent.forEach((s) => hooks.skip(s.c, refused));
      }
      r = null; // nothing is visible before the commit: the ordinary path writes these
    }
    if (!r) {
      unsupported = true;
      return void rest.push(...sent.map((s) => s.c));
    }
    planned = true;
    log(`stage ${items.length} files ${Date.now() - t0} ms`);
    const n = receipts.push(r.receipt) - 1;
    r.files.forEach((f, i) => {
      if (f.ok) staged.push({ ...sent[i]!, size: items[i]!.bytes.length, n });
      else hooks.skip(sent[i]!.c, f.error);
    });
  });
  if (refused) {
    for (const s of staged) hooks.skip(s.c, refused); // staged by requests answered before the refusal: never committed (GC takes their packs)
    return { rest, refused, planned };
  }
  if (!staged.length || !hooks.inTime(staged.map((s) => s.c))) return { rest, refused: null, planned };
  // The commit answers in receipt order, each receipt's files in the order staged.
  staged.sort((a, b) => a.n - b.n);
  let results;
  const t0 = Date.now();
  try {
    results = await sync.commit!(receipts, staged.map((s) => s.c.path), terms);
    log(`commit ${staged.length} files ${Date.now() - t0} ms`);
  } catch (e) {
    for (const s of staged) hooks.skip(s.c, e); // the outcome is unknown: settle syncs the slot with storage
    // The commit's charge refused (a write landed between the stages and the commit): refused whole, as a stage's refusal is.
    return { rest, refused: quotaRefusal(e) ? e : null, planned };
  }
  if (!results) return { rest: [...rest, ...staged.map((s) => s.c)], refused: null, planned };
  await pool(READS, [...results.entries()], async ([i, r]) => {
    const { c, hash, size } = staged[i]!;
    try {
      if (r.ok) await hooks.written(c, r.etag, size, hash);
      else if ("conflict" in r) await hooks.conflicted(c);
      else if ("alone" in r) rest.push(c);
      else hooks.skip(c, r.error);
    } catch (e) {
      hooks.skip(c, e);
    }
  });
  return { rest, refused: null, planned };
}

/**
 * Write-back of a finished run. Rule: PER FILE, each file whole or not at all, each write
 * conditional on the version the run started from (If-Match; If-None-Match: * for files
 * the command created; deletes with If-Match). A file a tool changed meanwhile is not
 * overwritten: it is listed under `conflicts` and the command's version is saved at
 * `.toolshed/conflicts/<run>/<path>`, so neither change is lost. A run that timed out or
 * was killed writes back nothing (its changes are listed under `discarded`).
 *
 * Batched: changes go in path order, in groups of GROUP_FILES, GROUPS_IN_FLIGHT groups at a
 * time. A group's small files (up to 1 MiB) go as put batches of about PUT_BATCH_TARGET_BYTES
 * (SyncClient.putMany, one request and one index segment each), its deletes as one delete
 * batch, its large files alone and streamed. Against an API without batches (putMany null or
 * absent) every file goes alone, as before. The outcome of every file is its own: a batch
 * answers per file.
 *
 * Packed (writeback-packed.ts): a run with many small created/modified files stages them into
 * packs and commits them with one switch of the layer pointer; what that leaves (files an upper
 * object stands at, an API without the routes) goes the way described above.
 *
 * All or nothing against the storage quotas (writeback-plan.ts): the API is told the whole
 * write-back's plan (its files' bytes, new paths, the bytes they replace) before anything is
 * written, with the only put batch, or as a hold taken ahead of the rest, packed or not (a put
 * batch of no file: the plan's whole charge held, its deletes credited; then the deletes, the hold
 * made whole when one freed nothing, the writes drawing on it, and its release: writeback-held.ts,
 * lib/sync/writeback-hold.ts; against an API without holds, the plan rides on each stage request); refused (QUOTA_EXCEEDED), none
 * of the run's changes is written back, deletes and markers included, each skipped with the API's
 * message (WriteBackOutcome.refused: writeback-outcome.ts). One change sends no plan: its charge refuses it whole.
 *
 * Bounded: at most `maxFiles` changes, and no group, batch or file is started after `deadline`
 * (the requests in flight then finish: cutting one off would leave unknown whether it was
 * written). What is left is returned as `unsynced`: those changes are not in the workspace.
 * Groups start in path order, so what is left is the end of the path order, give or take the
 * groups in flight.
 */
import { promises as fs } from "node:fs";
import { join } from "node:path";
import { BATCH_MAX_FILE_BYTES, batchesOf } from "../../lib/sync/batch.js";
import type { WriteBackPlan } from "../../lib/sync/writeback-bound.js";
import { PUT_BATCH_MAX_FILES, PUT_BATCH_TARGET_BYTES, type PutManyItem } from "../../lib/sync/put-batch.js";
import type { SyncClient } from "../../lib/sync/types.js";
import { openBody, readSmall } from "./file-body.js";
import type { Change } from "./changes.js";
import { pool } from "./tree.js";
import { fingerprint, isExec } from "./file-marks.js";
import { canPack, packedWriteBack } from "./writeback-packed.js";
import { isSmall, oneBatch, planOf, planWay, sizesOf } from "./writeback-plan.js";
import { heldFirst } from "./writeback-held.js";
import { emptyOutcome, quotaRefusal, recorder, type WriteBackOutcome } from "./writeback-outcome.js";

export type { WriteBackOutcome } from "./writeback-outcome.js";

/** Changes per group: the size of a put batch's file count and of a delete batch. */
const GROUP_FILES = 64;
/** Groups written at once (each: up to a put batch and a delete batch in flight, or SINGLES_PER_GROUP files alone). */
const GROUPS_IN_FLIGHT = 4;
/** Files sent alone at once within a group (large files, or every file against an API without batches). */
const SINGLES_PER_GROUP = 4;
/** Requests in flight with a client that has no batches (one per change). */
const SINGLES_IN_FLIGHT = 16;

const groupsOf = (cs: Change[]) => Array.from({ length: Math.ceil(cs.length / GROUP_FILES) }, (_, i) => cs.slice(i * GROUP_FILES, (i + 1) * GROUP_FILES));

export async function writeBack(opts: {
  tree: string;
  changes: Change[];
  sync: SyncClient;
  runId: string;
  maxFiles: number;
  /** Epoch ms after which no further change is started. */
  deadline: number;
  /**
   * Run once before the first write, after the quotas' word where it comes first, never when they
   * refused the write-back: without a hold, the removals of the run's markers that a written file crosses (sync-out.ts).
   */
  beforeWrites?: () => Promise<void>;
  /** Groups in flight (default GROUPS_IN_FLIGHT), or single requests without batches (default SINGLES_IN_FLIGHT). */
  concurrency?: number;
  now?: () => number;
  /** Files the workspace had at the start (a packed write-back rewrites its whole manifest: writeback-packed.ts). */
  workspaceFiles?: number;
  /**
   * The run's markers (sync-out.ts): `made` new ones, each a new entry of the plan, `removed` ones, each credited as a deleted file;
   * either, beside writes, takes a hold (refused whole with it). Removed beside the deletes on the hold, else after the files; made after the files, on the hold, unless refused.
   */
  markers?: { made: number; removed: number; remove(hold: string | null): Promise<number>; make(hold: string | null): Promise<void> };
}): Promise<WriteBackOutcome> {
  const now = opts.now ?? Date.now;
  const sync = opts.sync;
  const out = emptyOutcome();
  const accepted = opts.changes.slice(0, opts.maxFiles);
  const overLimit = opts.changes.slice(opts.maxFiles).map((c) => c.path);
  const late: string[] = [];
  const abs = (c: Change) => join(opts.tree, c.path);
  const condition = (c: Change) => (c.base ? { ifMatch: c.base.etag } : { ifNoneMatch: "*" as const });
  const { skip, refuse } = recorder(out);
  /** False (and the changes listed as late) once the deadline has passed. */
  const inTime = (cs: Change[]) => {
    if (now() < opts.deadline) return true;
    late.push(...cs.map((c) => c.path));
    return false;
  };

  const saveCopy = async (path: string): Promise<string | undefined> => {
    const saved = `.toolshed/conflicts/${opts.runId}/${path}`;
    try {
      const { body, close } = await openBody(join(opts.tree, path));
      try {
        const r = await sync.put(saved, body.body, { ifNoneMatch: "*", size: body.size });
        return r.ok ? saved : undefined;
      } finally {
        await close();
      }
    } catch {
      return undefined;
    }
  };

  const written = async (c: Change, etag: string, size: number, hash: string) => {
    const st = await fs.lstat(abs(c), { bigint: true });
    out.written.set(c.path, { etag, size, hash, fp: fingerprint(st), exec: isExec(st.mode) });
    out.uploaded_bytes += size;
    (c.kind === "created" ? out.created : out.modified).push(c.path);
  };
  const conflicted = async (c: Change) => {
    if (c.kind === "deleted") return void out.conflicts.push({ path: c.path, change: "deleted", reason: "changed_meanwhile" });
    const saved_as = await saveCopy(c.path);
    out.conflicts.push({ path: c.path, change: c.kind, reason: "changed_meanwhile", ...(saved_as ? { saved_as } : {}) });
  };

  /** One change alone: a PUT (streamed when large) or a DELETE. */
  const single = async (c: Change) => {
    if (!inTime([c])) return;
    try {
      if (c.kind === "deleted") {
        const r = await sync.delete(c.path, { ifMatch: c.base!.etag });
        if (r.ok) out.deleted.push(c.path);
        else await conflicted(c);
        return;
      }
      const { body, close } = await openBody(abs(c));
      let r;
      try {
        r = await sync.put(c.path, body.body, { ...condition(c), size: body.size, ...(hold ? { hold } : {}) });
      } finally {
        await close();
      }
      if (r.ok) await written(c, r.etag, body.size, body.hash());
      else await conflicted(c);
    } catch (e) {
      // The write-back's one change refused by its own charge: refused whole (it sends no plan).
      if (accepted.length === 1 && quotaRefusal(e)) refuse([c], e);
      else skip(c, e);
    }
  };
  const singles = (cs: Change[]) => pool(SINGLES_PER_GROUP, cs, single);

  /** Deletes that did not free their room into the write-back's hold (writeback-held.ts). */
  let unfreed = 0;
  const deleteBatch = async (cs: Change[]) => {
    if (!cs.length) return;
    unfreed += cs.length; // less those this write-back deleted, below
    if (!inTime(cs)) return;
    let rs;
    try {
      rs = await sync.deleteMany!(cs.map((c) => ({ path: c.path, ifMatch: c.base!.etag })), hold ? { hold } : undefined);
    } catch (e) {
      for (const c of cs) skip(c, e);
      return;
    }
    if (!rs) return singles(cs);
    for (const [i, r] of rs.entries()) {
      const c = cs[i]!;
      if (r.ok && !r.gone) unfreed--;
      if (r.ok) out.deleted.push(c.path);
      else if ("conflict" in r) await conflicted(c);
      else skip(c, r.error);
    }
  };

  /** The plan the next put batch carries (the write-back's only batch: planWay "batch"; refused, nothing more is written). */
  let planWith: WriteBackPlan | undefined;
  /** The write-back's hold on the storage quotas (planWay "hold"): every request draws on it, each put batch with its share; `lastBatch`: its only put batch releases it. */
  let hold: string | null = null;
  let lastBatch = false;
  /** One put batch: read (a file that is no longer small goes alone), send, record per file. */
  const putBatch = async (cs: Change[]) => {
    const plan = planWith;
    planWith = undefined;
    if (!inTime(cs)) return;
    const items: PutManyItem[] = [];
    const sent: { c: Change; hash: string }[] = [];
    const alone: Change[] = [];
    await Promise.all(cs.map(async (c) => {
      try {
        const got = await readSmall(abs(c), BATCH_MAX_FILE_BYTES);
        if (!got) return void alone.push(c);
        items.push({ path: c.path, bytes: got.bytes, ...condition(c) });
        sent.push({ c, hash: got.hash });
      } catch (e) {
        skip(c, e);
      }
    }));
    if (items.length) {
      try {
        // Drawing on the hold: this batch's own share (its bytes as read), charged from the hold at once.
        const share = hold ? planOf(sent.map((x) => x.c), new Map(items.map((it) => [it.path, it.bytes.length]))) : plan;
        const release = lastBatch && alone.length === 0;
        const rs = await sync.putMany!(items, share, hold ? { hold, ...(release ? { release } : {}) } : undefined);
        if (release) hold = null; // released by this batch (its lease ends it if the answer was lost)
        if (rs === null) alone.push(...sent.map((s) => s.c));
        for (const [i, r] of (rs ?? []).entries()) {
          const { c, hash } = sent[i]!;
          try {
            if (r.ok) await written(c, r.etag, items[i]!.bytes.length, hash);
            else if ("conflict" in r) await conflicted(c);
            else skip(c, r.error);
          } catch (e) {
            skip(c, e);
          }
        }
      } catch (e) {
        // The only batch's plan refused: refused whole, its files over 1 MiB (alone) included.
        if (plan && quotaRefusal(e)) return refuse([...sent.map((s) => s.c), ...alone], e);
        for (const { c } of sent) skip(c, e); // the batch failed as a whole (network, 5xx): not written as far as we know
      }
    }
    await singles(alone.sort((a, b) => (a.path < b.path ? -1 : 1)));
  };

  const puts = async (cs: Change[]) => {
    if (!cs.length) return;
    const small: (Change & { size: number })[] = [];
    const large: Change[] = [];
    for (const c of cs) {
      const size = sizes.get(c.path);
      if (isSmall(size)) small.push({ ...c, size });
      else large.push(c); // alone: large, or not a file any more (single says why)
    }
    small.sort((a, b) => (a.path < b.path ? -1 : 1));
    for (const b of batchesOf(small, PUT_BATCH_MAX_FILES, PUT_BATCH_TARGET_BYTES)) await putBatch(b);
    await singles(large.sort((a, b) => (a.path < b.path ? -1 : 1)));
  };

  // The sizes of the files written, and the whole write-back's plan (told to the API before anything is written).
  const writes = accepted.filter((c) => c.kind !== "deleted");
  const sizes = await sizesOf(opts.tree, writes);
  const { made = 0, removed = 0 } = opts.markers ?? {};
  const plan = planOf(writes, sizes, made);
  const batches = !!sync.putMany && !!sync.deleteMany;
  const pack = canPack(sync, accepted, opts.workspaceFiles ?? 0);
  // How the plan goes: a packed write-back holds its room (else its stage requests carry the plan); markers made, or removed beside writes: held; file by file as planWay says.
  const markersHeld = made > 0 || (removed > 0 && writes.length > 0);
  const way = !batches ? "none" : pack || (markersHeld && sync.hold) ? (sync.hold ? "hold" : "none") : planWay(accepted, sizes, GROUP_FILES);
  let ordinary = accepted;
  if (way === "batch") planWith = plan;
  else if (way === "hold" && now() < opts.deadline) {
    // The hold first (refused: none of it is written, deletes included), then its deletes (the room they free moves into it), made whole before any write.
    const deleteBatches = (cs: Change[]) => pool(opts.concurrency ?? GROUPS_IN_FLIGHT, groupsOf(cs), deleteBatch);
    ordinary = await heldFirst(sync, accepted, plan, (id) => void (hold = id), { deleteBatches, refuse, unfreed: () => unfreed, ...(opts.markers ? { markers: { removed, remove: opts.markers.remove } } : {}) });
    lastBatch = !pack && !made && oneBatch(ordinary.filter((c) => c.kind !== "deleted"), sizes);
  }
  try {
    if (!out.refused) await opts.beforeWrites?.();
    // Many small created/modified files: into packs, one commit (writeback-packed.ts), drawing on the hold; the rest below.
    let planned = way === "hold";
    if (pack && ordinary.length) {
      const packed = await packedWriteBack(opts.tree, ordinary.filter((c) => c.kind !== "deleted"), sync, { inTime, written, conflicted, skip }, opts.workspaceFiles ?? 0, sizes, plan, hold);
      const left = new Set(packed.rest);
      ordinary = ordinary.filter((c) => c.kind === "deleted" || left.has(c));
      planned ||= packed.planned;
      // Refused by the storage quotas: refused whole, so its deletes and large files are not written either (the API's message says nothing was).
      if (packed.refused) refuse(ordinary.splice(0), packed.refused);
    }
    // A packed write-back the API took no hold or plan of: the rest carries the plan the file-by-file way.
    if (pack && !planned && batches && planWay(ordinary, sizes, GROUP_FILES) === "batch") planWith = plan;
    if (!batches) {
      // A client without batches: one request per change, SINGLES_IN_FLIGHT at a time, in path order.
      await pool(opts.concurrency ?? SINGLES_IN_FLIGHT, ordinary, single);
    } else if (hold) {
      // Held: its deletes went first; the writes draw on it.
      await pool(opts.concurrency ?? GROUPS_IN_FLIGHT, groupsOf(ordinary), async (g) => void (inTime(g) && (await puts(g))));
    } else {
      // Its deletes beside its writes (a write-back whose only batch carries the plan has none: planWay).
      await pool(opts.concurrency ?? GROUPS_IN_FLIGHT, groupsOf(ordinary), async (g) => {
        if (!inTime(g)) return;
        await Promise.all([deleteBatch(g.filter((c) => c.kind === "deleted")), puts(g.filter((c) => c.kind !== "deleted"))]);
      });
    }
    // The markers last (those not removed beside the deletes), on the hold's room (its plan counted the new ones) before it is released.
    if (!out.refused) for (const step of [opts.markers?.remove, opts.markers?.make]) await step?.(hold);
  } finally {
    if (hold) await sync.putMany!([], undefined, { hold, release: true }).catch(() => {}); // unreleased, the hold's lease ends with the run's token
  }
  for (const list of [out.created, out.modified, out.deleted]) list.sort();
  if (overLimit.length) out.unsynced.reasons.push("limit");
  if (late.length) out.unsynced.reasons.push("deadline");
  out.unsynced.paths = [...late, ...overLimit].sort();
  out.conflicts.sort((a, b) => (a.path < b.path ? -1 : 1));
  return out;
}

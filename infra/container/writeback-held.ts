/**
 * The runner's side of a write-back's hold on the storage quotas (the API's: lib/sync/writeback-hold.ts),
 * for a write-back of more than one request, packed or file by file. In this order, before any write:
 *  0. when the write-back has deletes or removed markers, and writes (or new markers): first the hold
 *     with nothing credited (one request): when the free room takes the writes alone, no delete's
 *     outcome can leave the hold short, so nothing is looked at and no fill is asked (the deletes' room
 *     goes back to the free room as they land). Refused, its deletes are looked at, nothing written
 *     (lib/sync/delete-check.ts, one request per DELETE_BATCH_MAX_FILES): a file that changed or went
 *     since the command started frees nothing, so it is not credited in the hold of step 1;
 *  1. the hold, with the whole write-back's plan and its deletes still current, removed markers counted
 *     as deleted files (one request, one round trip to the limits object); refused (QUOTA_EXCEEDED):
 *     none of the run's changes is written back, deletes and markers included, and storage is as it was;
 *  2. the deletes, and the removals of the run's directory markers (the room each frees moves into the hold);
 *  3. when a credited one freed nothing into the hold after all (its file changed between the check and
 *     its delete; a marker already gone; a failed or late request), the hold made whole from the free
 *     room (`fill`, one request); refused: none of the writes is written, and the deletes that landed
 *     stay (each one conditional on the version the run started from; the output names them). Before
 *     step 0 (until 2026-12-02) every delete was credited, so a file changed during the command came to this.
 * Then the writes draw on the hold (writeback.ts, writeback-packed.ts), and the last request releases it.
 */
import type { SyncClient } from "../../lib/sync/types.js";
import { DELETE_BATCH_MAX_FILES } from "../../lib/sync/put-batch.js";
import type { WriteBackPlan } from "../../lib/sync/writeback-bound.js";
import type { Change } from "./changes.js";
import { deletesOf } from "./writeback-plan.js";
import { quotaRefusal as refusal } from "./writeback-outcome.js";
import { ToolError } from "../../lib/shared/errors.js";

export interface HeldIo {
  /** Sends the deletes (drawing on the hold once it is set). */
  deleteBatches(cs: Change[]): Promise<void>;
  /** The quotas refused the write-back whole: `cs` are not written (writeback.ts, WriteBackOutcome.refused). */
  refuse(cs: Change[], e: unknown): void;
  /** How many of the deletes sent did not free their room into the hold (not deleted by this write-back). */
  unfreed(): number;
  /** The run's directory markers removed (dirs.ts): credited as deleted files, removed beside the deletes; answers how many freed nothing into the hold. */
  markers?: { removed: number; remove(hold: string): Promise<number> };
}

/**
 * Takes the hold of `changes` (`plan`: their writes'), applies their deletes, makes the hold whole;
 * answers the hold (null: none taken, as the API counts nothing or has no holds) and the changes
 * left to write (the writes; all of `changes` without a hold; none when refused).
 */
export async function heldFirst(sync: SyncClient, changes: Change[], plan: WriteBackPlan, hold: (h: string) => void, io: HeldIo): Promise<Change[]> {
  const deletes = changes.filter((c) => c.kind === "deleted");
  const writes = changes.filter((c) => c.kind !== "deleted");
  if (!sync.hold) return changes; // a client without holds: each file is charged as it is written
  const removedMarkers = io.markers?.removed ?? 0;
  const both = (deletes.length > 0 || removedMarkers > 0) && (writes.length > 0 || plan.files > 0); // plan.files without writes: the run's new markers (sync-out.ts), drawn on the hold after
  let id: string | null | undefined;
  let stale = new Set<string>();
  let credited = true;
  try {
    // Step 0: the writes' room alone, nothing credited; then nothing a delete or a marker's removal does can leave the hold short.
    if (both) id = await sync.hold({ ...plan, deletes: { files: 0, bytes: 0 } }).catch((e: unknown) => (refusal(e) ? undefined : Promise.reject(e)));
    if (id === undefined) {
      // The deletes' room is needed: those that can free nothing (their file changed or went since the command started) are not credited, found before any delete.
      if (both && deletes.length) stale = await staleDeletes(sync, deletes);
      id = await sync.hold({ ...plan, deletes: deletesOf(changes.filter((c) => !stale.has(c.path)), removedMarkers) });
    } else credited = false;
  } catch (e) {
    if (!refusal(e)) return changes; // an API older than holds, a failed request: each file is still charged as it is written
    io.refuse(changes, stale.size ? notCounted(e, stale) : e);
    return [];
  }
  if (!id) return changes;
  hold(id);
  const [, markersUnfreed] = await Promise.all([io.deleteBatches(deletes), io.markers?.remove(id) ?? 0]);
  // Nothing credited (step 0 fitted), or only stale deletes unfreed: nothing awaited; a credited delete or marker that freed nothing leaves the hold short.
  if (both && credited && io.unfreed() + markersUnfreed > stale.size) {
    try {
      await sync.putMany!([], undefined, { hold: id, fill: true });
    } catch (e) {
      if (!refusal(e)) return writes; // not known: the writes past the hold are charged as usual
      io.refuse(writes, e);
      return [];
    }
  }
  return writes;
}

/** The paths of `deletes` whose file is no longer the version the run started from (changed, or gone); none known when the API cannot say (an older API, a failed request: every delete credited, as before). */
async function staleDeletes(sync: SyncClient, deletes: Change[]): Promise<Set<string>> {
  const stale = new Set<string>();
  if (!sync.checkDeletes) return stale;
  for (let i = 0; i < deletes.length; i += DELETE_BATCH_MAX_FILES) {
    const group = deletes.slice(i, i + DELETE_BATCH_MAX_FILES);
    const states = await sync.checkDeletes(group.map((c) => ({ path: c.path, ifMatch: c.base!.etag }))).catch(() => null);
    if (!states) return new Set();
    states.forEach((s, j) => void (s !== "current" && stale.add(group[j]!.path)));
  }
  return stale;
}

/** The hold's refusal with the deletes it did not count named (at most 3, each cut to 100 characters), so the model reads why their room was missing. */
function notCounted(e: ToolError, stale: Set<string>): ToolError {
  const named = [...stale].sort().slice(0, 3).map((p) => (p.length > 100 ? `${p.slice(0, 99)}…` : p));
  const more = stale.size > named.length ? ` and ${stale.size - named.length} more` : "";
  return new ToolError(e.code, `${e.message} Not counted as room: the deletes of ${named.join(", ")}${more}, whose files another writer changed or deleted while the command ran (deleting them frees nothing).`, e.details);
}

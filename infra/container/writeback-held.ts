/**
 * The runner's side of a write-back's hold on the storage quotas (the API's: lib/sync/writeback-hold.ts),
 * for a write-back of more than one request, packed or file by file. In this order, before any write:
 *  1. the hold, with the whole write-back's plan and its deletes, removed markers counted as deleted files
 *     (one request, one round trip to the limits object); refused (QUOTA_EXCEEDED): none of the run's
 *     changes is written back, deletes and markers included;
 *  2. the deletes, and the removals of the run's directory markers (the room each frees moves into the hold);
 *  3. when one of them freed nothing into the hold (a conflict: the file changed meanwhile; another
 *     writer deleted it first; a failed or late request), the hold made whole from the free room
 *     (`fill`, one request); refused: none of the writes is written (the deletes that landed stay,
 *     each one conditional on the version the run started from).
 * Then the writes draw on the hold (writeback.ts, writeback-packed.ts), and the last request releases it.
 */
import type { SyncClient } from "../../lib/sync/types.js";
import type { WriteBackPlan } from "../../lib/sync/writeback-bound.js";
import type { Change } from "./changes.js";
import { deletesOf } from "./writeback-plan.js";
import { quotaRefusal as refusal } from "./writeback-outcome.js";

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
  let id: string | null;
  try {
    id = await sync.hold({ ...plan, deletes: deletesOf(changes, io.markers?.removed) });
  } catch (e) {
    if (!refusal(e)) return changes; // an API older than holds, a failed request: each file is still charged as it is written
    io.refuse(changes, e);
    return [];
  }
  if (!id) return changes;
  hold(id);
  const [, markersUnfreed] = await Promise.all([io.deleteBatches(deletes), io.markers?.remove(id) ?? 0]);
  if (io.unfreed() + markersUnfreed > 0 && (writes.length || plan.files > 0)) { // plan.files without writes: the run's new markers (sync-out.ts), drawn on the hold after
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

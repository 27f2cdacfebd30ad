/**
 * Conditional delete on the R2 binding, which has none: `bucket.delete` takes no condition.
 *
 * The scheme: a delete of `key` if its etag is E is
 *   1. put a tombstone over `key` with onlyIf { etagMatches: E }   (the atomic step: the decision)
 *   2. delete `key` unconditionally                                  (removes the tombstone)
 * A tombstone is an object with a random body (so an etag nobody holds) and the customMetadata
 * marker below. The R2 driver hides tombstones from head, get and list, so no reader ever sees
 * one, and its create-only put treats a tombstone as "no object" (it replaces it with
 * onlyIf { etagMatches: <the tombstone's etag> }, still atomic).
 *
 * What this guarantees, interleaving by interleaving (W = another writer of the same key):
 * - W conditional (If-Match E', or create-only) before step 1: if W changed the object, step 1's
 *   etag check fails and nothing is deleted (the caller gets ConditionFailedError): W's write
 *   stays. If W was refused, nothing changed. Exactly one of "delete of E" and "W over E" wins.
 * - W with If-Match between 1 and 2: refused (the tombstone's etag is unknown to W), correctly:
 *   the version W read is already deleted.
 * - W create-only between 1 and 2: its If-None-Match is refused by the tombstone. W then waits
 *   for step 2 (settledHead: up to ~0.5 s, polling) and creates on the missing key. Only a
 *   tombstone older than that (a crashed deleter) is replaced in place (etagMatches tombstone).
 * - THE RESIDUAL WINDOW: an *unconditional* put (raw PUT without If-Match) that lands between
 *   steps 1 and 2 is acknowledged and then removed by step 2; so is a create that replaced the
 *   tombstone because step 2 came more than ~0.5 s after step 1 (a stalled deleter).
 *   No conditional overwrite (If-Match) can ever be lost. AWS S3 and the memory driver have no
 *   such window (native / atomic conditional delete).
 * - W after step 2: an ordinary write to a missing key.
 * - A crash between 1 and 2 (the isolate dies): the tombstone stays. Readers never see it
 *   (head/get null, not listed); creates replace it; If-Match writers are refused as for a
 *   missing file. The one visible trace: its parent directory may still be listed as a
 *   (then empty) directory by a delimited listing (ls) until a file is written at that key.
 * - If step 2 itself fails (a storage error), the delete has still happened as far as every
 *   reader and writer can tell; it is logged, not thrown.
 */
import { deleteTargets, throwIfRefused, type DeleteTarget } from "../types.js";

/** The customMetadata key that marks a tombstone. */
const TOMBSTONE = "toolshed-tombstone";

/** Tombstones written at once (Workers allow 6 simultaneous connections per request). */
const CONCURRENCY = 6;

/** How long a creator waits for a tombstone to go before it treats it as left by a crash. */
const SETTLE_POLLS = 5;
const SETTLE_MS = 100;

export const isTombstone = (o: { customMetadata?: Record<string, string> | undefined }): boolean => o.customMetadata?.[TOMBSTONE] !== undefined;

/** A tombstone's body: random, so its etag is one nobody holds; always TOMBSTONE_BYTES long (listings find suspects by size: r2-list.ts). */
export const tombstoneBody = (): string => `deleted ${crypto.randomUUID()}`;
/** The size of every tombstone ("deleted " and a UUID). */
export const TOMBSTONE_BYTES = 44;

/**
 * The current object of `key` for a creator: a tombstone is waited out (a deleter is between its
 * two steps), up to SETTLE_POLLS × SETTLE_MS; one still there after that is returned as is.
 */
export async function settledHead(bucket: R2Bucket, key: string): Promise<R2Object | null> {
  for (let i = 0; ; i++) {
    const o = await bucket.head(key);
    if (!o || !isTombstone(o) || i >= SETTLE_POLLS) return o;
    await new Promise((r) => setTimeout(r, SETTLE_MS));
  }
}

/** The tombstone step: true if `t.key` held `t.ifMatch` and is now a tombstone. */
async function bury(bucket: R2Bucket, t: DeleteTarget): Promise<boolean> {
  const o = await bucket.put(t.key, tombstoneBody(), { onlyIf: { etagMatches: t.ifMatch! }, customMetadata: { [TOMBSTONE]: new Date().toISOString() } });
  return o !== null;
}

/** StorageDriver.delete for R2: plain keys in batches of 1000, conditional ones through tombstones. */
export async function deleteConditionally(bucket: R2Bucket, keys: string | readonly (string | DeleteTarget)[]): Promise<void> {
  const targets = deleteTargets(keys);
  const plain = targets.filter((t) => t.ifMatch === undefined).map((t) => t.key);
  const conditional = targets.filter((t) => t.ifMatch !== undefined);
  const buried: string[] = [];
  const refused: string[] = [];
  for (let i = 0; i < conditional.length; i += CONCURRENCY) {
    await Promise.all(conditional.slice(i, i + CONCURRENCY).map(async (t) => ((await bury(bucket, t)) ? buried : refused).push(t.key)));
  }
  const all = [...plain, ...buried];
  const isPlain = new Set(plain);
  for (let i = 0; i < all.length; i += 1000) {
    const batch = all.slice(i, i + 1000);
    try {
      await bucket.delete(batch);
    } catch (e) {
      // Plain keys: the delete failed. Buried keys only: already deleted for every reader (see above).
      if (batch.some((k) => isPlain.has(k))) throw e;
      console.warn(`r2: ${batch.length} tombstone(s) left in place, first ${batch[0]}: ${String(e)}`);
    }
  }
  throwIfRefused(refused);
}

/**
 * The lazy sweep of small JSON records that would otherwise live forever (pending calls, task
 * records): one rule for every kind of record, run by the calls that write or list them.
 *
 * A record is a candidate when its last write (the LIST's `modified`) is older than `graceMs`: every
 * record kind's "stale" time comes after its last write, so a younger one is never read. At most
 * `max` candidates (oldest first) are read (1 GET each) and `isStale` decides on their content;
 * the stale ones are deleted in one call, each only if it is still the version read (ifMatch its
 * etag), so a record written between the read and the delete (a late answer, a task's last step)
 * stays. A refused delete is no error. Cost: 0 extra requests when no record is a candidate;
 * otherwise ≤ max GETs + 1 DELETE (plus the LIST when the caller has none to hand).
 */
import { isConditionFailed, type ObjectInfo, type StorageDriver } from "./types.js";

/** How long after a record's end it is kept (answered or expired pending calls, finished tasks). */
export const RECORD_GRACE_MS = 24 * 60 * 60 * 1000;
/** Most records one sweep reads and deletes. */
export const MAX_SWEPT_PER_CALL = 20;

export interface SweepSpec<R> {
  driver: StorageDriver;
  prefix: string;
  now: number;
  /** Whether the record (parsed JSON) may go: its end lies more than the grace before now. */
  isStale: (rec: R, now: number) => boolean;
  graceMs?: number;
  max?: number;
  /** The LIST of prefix the caller already made (first page); without it the sweep makes one. */
  listed?: readonly ObjectInfo[];
  /** The sweep's own LIST starts after this key: records kept in time order skip the young ones (lib/run/tasks/store.ts). */
  startAfter?: string;
}

/** Deletes up to `max` stale records under the prefix; returns the keys deleted. Never throws. */
export async function sweepRecords<R>(spec: SweepSpec<R>): Promise<string[]> {
  try {
    const grace = spec.graceMs ?? RECORD_GRACE_MS;
    const objects = spec.listed ?? (await spec.driver.list({ prefix: spec.prefix, limit: 1000, ...(spec.startAfter ? { startAfter: spec.startAfter } : {}) })).objects;
    const candidates = objects
      .filter((o) => o.key.startsWith(spec.prefix) && o.modified.getTime() <= spec.now - grace)
      .sort((a, b) => a.modified.getTime() - b.modified.getTime())
      .slice(0, spec.max ?? MAX_SWEPT_PER_CALL);
    if (candidates.length === 0) return [];
    const read = await Promise.all(
      candidates.map(async (o) => {
        const got = await spec.driver.get(o.key);
        if (!got) return null;
        try {
          const rec = JSON.parse(await new Response(got.body).text()) as R;
          return spec.isStale(rec, spec.now) ? { key: o.key, ifMatch: got.etag } : null;
        } catch {
          return null; // not ours to judge: a record we cannot read stays
        }
      }),
    );
    const targets = read.filter((t): t is { key: string; ifMatch: string } => t !== null);
    if (targets.length === 0) return [];
    try {
      await spec.driver.delete(targets);
      return targets.map((t) => t.key);
    } catch (e) {
      if (!isConditionFailed(e)) return [];
      const refused = new Set(e.keys);
      return targets.map((t) => t.key).filter((k) => !refused.has(k));
    }
  } catch {
    return []; // the sweep is housekeeping: it never fails the call that runs it
  }
}

/**
 * A stopped run's discarded changes (RunResult.discarded: what it changed and did not write back) as a
 * result lists them: bounded like the result's other listings (`unsynced`), the rest counted. Before, a
 * killed run with 68,015 changes answered a 700 KB result. Bundles for Workers; the runner uses it too.
 */
import type { RunResult } from "./types.js";

/** Paths of `discarded` listed in a result (the rest counted in `discarded_count`). */
export const DISCARDED_SHOWN = 100;

/** The first DISCARDED_SHOWN of `paths` in path order, and how many there were when more. */
export function discardedOf(paths: string[]): Pick<RunResult, "discarded" | "discarded_count"> {
  const sorted = paths.sort();
  return sorted.length <= DISCARDED_SHOWN ? { discarded: sorted } : { discarded: sorted.slice(0, DISCARDED_SHOWN), discarded_count: sorted.length };
}

/** How many changes a stopped run discarded (its list may name only the first). */
export const discardedCount = (r: Partial<Pick<RunResult, "discarded" | "discarded_count">>): number => Math.max(r.discarded_count ?? 0, r.discarded?.length ?? 0);

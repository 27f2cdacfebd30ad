/**
 * Undo retention (lib/run/undo/): a session keeps its newest RETAIN_CALLS calls, none older than
 * RETAIN_MS. Pruned by one listing of the session's undo prefix (newest first: stamps count time
 * down), run by 1 in PRUNE_EVERY record commits; every object of a dropped call (records, blobs,
 * claim) is deleted. Undo of a pruned call answers NOT_FOUND ("expired").
 */
import type { StorageDriver } from "../storage/types.js";

export const RETAIN_CALLS = 100;
export const RETAIN_MS = 24 * 60 * 60 * 1000;
export const PRUNE_EVERY = 16;

export interface RetentionPolicy {
  calls: number;
  ms: number;
  now: number;
}

/** Deletes the calls of a session past the policy; returns the stamps dropped. `stampTime` reads a stamp's time. */
export async function pruneSession(storage: StorageDriver, sessionPrefix: string, stampTime: (stamp: string) => number, policy: RetentionPolicy): Promise<string[]> {
  const byStamp = new Map<string, string[]>();
  let cursor: string | undefined;
  do {
    const page = await storage.list({ prefix: sessionPrefix, ...(cursor ? { cursor } : {}) });
    for (const o of page.objects) {
      const rest = o.key.slice(sessionPrefix.length);
      const stamp = rest.slice(0, rest.indexOf("/"));
      if (!stamp) continue;
      const keys = byStamp.get(stamp) ?? [];
      keys.push(o.key);
      byStamp.set(stamp, keys);
    }
    cursor = page.cursor;
  } while (cursor);
  const stamps = [...byStamp.keys()].sort(); // newest first
  const dropped = stamps.filter((s, i) => i >= policy.calls || policy.now - stampTime(s) > policy.ms);
  const keys = dropped.flatMap((s) => byStamp.get(s)!);
  for (let i = 0; i < keys.length; i += 1000) await storage.delete(keys.slice(i, i + 1000));
  return dropped;
}

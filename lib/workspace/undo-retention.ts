/**
 * Undo retention (lib/run/undo/): a session keeps its newest RETAIN_CALLS calls, none older than
 * RETAIN_MS. Pruned by one listing of the session's undo prefix (newest first: stamps count time
 * down), run by 1 in PRUNE_EVERY record commits; every object of a dropped call (records, blobs,
 * claim) is deleted. Undo of a pruned call answers NOT_FOUND ("expired").
 */
import type { ObjectInfo, StorageDriver } from "../storage/types.js";
import { listAll } from "../storage/list-all.js";

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
  const listed = (await listAll(storage, sessionPrefix)).objects;
  return (await prune(storage, sessionPrefix, listed, 0, stampTime, policy)).dropped.map((c) => c.stamp);
}

/**
 * The same policy over every session of a workspace, on the listing of its undo prefix (`undoPrefix`)
 * that GC made for its roots (lib/layers/gc.ts `pruneUndo`, given by the scheduled tick:
 * lib/runtime/housekeeping.ts), so a session that stopped making calls, whose own commits no longer
 * prune it, keeps nothing past RETAIN_MS either. Returns how many calls were dropped and the listed
 * objects still there.
 */
export async function pruneWorkspaceUndo(storage: StorageDriver, undoPrefix: string, listed: ObjectInfo[], stampTime: (stamp: string) => number, policy: RetentionPolicy): Promise<{ dropped: number; kept: ObjectInfo[] }> {
  const r = await prune(storage, undoPrefix, listed, 1, stampTime, policy);
  return { dropped: r.dropped.length, kept: r.kept };
}

/** Groups the objects listed under `prefix` by call (`<session>/<stamp>/` below it, or `<stamp>/` at depth 0) and deletes the calls past the policy. */
async function prune(storage: StorageDriver, prefix: string, listed: ObjectInfo[], depth: 0 | 1, stampTime: (stamp: string) => number, policy: RetentionPolicy): Promise<{ dropped: { session: string; stamp: string }[]; kept: ObjectInfo[] }> {
  const sessions = new Map<string, Map<string, string[]>>();
  for (const o of listed) {
    const parts = o.key.slice(prefix.length).split("/");
    if (parts.length < depth + 2) continue; // not an object of a call
    const session = depth ? parts[0]! : "";
    const stamp = parts[depth]!;
    if (!stamp) continue;
    const calls = sessions.get(session) ?? new Map<string, string[]>();
    sessions.set(session, calls);
    calls.set(stamp, [...(calls.get(stamp) ?? []), o.key]);
  }
  const dropped: { session: string; stamp: string; keys: string[] }[] = [];
  for (const [session, calls] of sessions) {
    const stamps = [...calls.keys()].sort(); // newest first
    for (const [i, stamp] of stamps.entries()) if (i >= policy.calls || policy.now - stampTime(stamp) > policy.ms) dropped.push({ session, stamp, keys: calls.get(stamp)! });
  }
  const keys = dropped.flatMap((c) => c.keys);
  for (let i = 0; i < keys.length; i += 1000) await storage.delete(keys.slice(i, i + 1000));
  const gone = new Set(keys);
  return { dropped, kept: listed.filter((o) => !gone.has(o.key)) };
}

/**
 * Undo retention (lib/run/undo/): a session keeps its newest RETAIN_CALLS calls, none older than
 * RETAIN_MS, and a workspace, across all its sessions, its newest WORKSPACE_RETAIN_CALLS calls within
 * WORKSPACE_RETAIN_BYTES of undo objects (a client that sends a new X-Session-Id with every call
 * makes sessions of one call each: only the workspace's bound holds them). Newest first by the
 * call's stamp (its start); a call is dropped whole (records, blobs, claim), the oldest first. Pruned
 * by one listing of the workspace's undo prefix, run by a record commit (`pruneDue`: the workspace's
 * 1st commit in an isolate, then every PRUNE_EVERY-th) and by the scheduled tick on GC's listing.
 * Undo of a dropped call answers NOT_FOUND (expired).
 */
import type { ObjectInfo, StorageDriver } from "../storage/types.js";
import { listAll } from "../storage/list-all.js";

export const RETAIN_CALLS = 100;
export const RETAIN_MS = 24 * 60 * 60 * 1000;
/** Calls a workspace keeps across its sessions: ten sessions' full history. */
export const WORKSPACE_RETAIN_CALLS = 1000;
/** Bytes of undo objects a workspace keeps across its sessions (docs/versions.md, "Retention", says why). */
export const WORKSPACE_RETAIN_BYTES = 1024 ** 3;
export const PRUNE_EVERY = 16;

/** What a prune keeps: per session (`calls`, `ms`) and per workspace (`workspaceCalls`, `workspaceBytes`). */
export interface UndoRetention {
  calls: number;
  ms: number;
  workspaceCalls: number;
  workspaceBytes: number;
}

export const UNDO_RETENTION: UndoRetention = { calls: RETAIN_CALLS, ms: RETAIN_MS, workspaceCalls: WORKSPACE_RETAIN_CALLS, workspaceBytes: WORKSPACE_RETAIN_BYTES };

/** The retention in words, for the NOT_FOUND of an undo of a dropped call (lib/run/undo/apply.ts). */
export const RETENTION_TEXT = `a session keeps its newest ${RETAIN_CALLS} calls, a workspace its newest ${WORKSPACE_RETAIN_CALLS.toLocaleString("en-US")} within ${WORKSPACE_RETAIN_BYTES / 1024 ** 3} GiB across its sessions, none older than ${RETAIN_MS / 3_600_000} h, the oldest dropped first`;

export interface RetentionPolicy extends UndoRetention {
  now: number;
}

/** Record commits per workspace in this isolate (bounded: past MAX_COUNTED the counts start over, so a workspace's next commit prunes). */
const commits = new Map<string, number>();
const MAX_COUNTED = 10_000;

/**
 * Whether this record commit of the workspace (`undoPrefix`) prunes it: its 1st in this isolate, then
 * every `every`-th (0: never). So between two prunes, an isolate commits at most `every` − 1 records
 * of a workspace, whatever sessions they are in.
 */
export function pruneDue(undoPrefix: string, every: number): boolean {
  if (every <= 0) return false;
  if (commits.size >= MAX_COUNTED && !commits.has(undoPrefix)) commits.clear();
  const n = commits.get(undoPrefix) ?? 0;
  commits.set(undoPrefix, (n + 1) % every);
  return n === 0;
}

/** Lists a workspace's undo prefix and deletes what is past the policy (a record commit's prune); returns how many calls were dropped. */
export async function pruneUndoPrefix(storage: StorageDriver, undoPrefix: string, stampTime: (stamp: string) => number, policy: RetentionPolicy): Promise<number> {
  const listed = (await listAll(storage, undoPrefix)).objects;
  return (await pruneWorkspaceUndo(storage, undoPrefix, listed, stampTime, policy)).dropped;
}

/**
 * The policy over every session of a workspace, on a listing of its undo prefix: a record commit's
 * own (pruneUndoPrefix) or the one GC made for its roots (lib/layers/gc.ts `pruneUndo`, given by the
 * scheduled tick: lib/runtime/housekeeping.ts), so a session that stopped making calls, whose own
 * commits no longer prune it, keeps nothing past RETAIN_MS either. Returns how many calls were
 * dropped and the listed objects still there.
 */
export async function pruneWorkspaceUndo(storage: StorageDriver, undoPrefix: string, listed: ObjectInfo[], stampTime: (stamp: string) => number, policy: RetentionPolicy): Promise<{ dropped: number; kept: ObjectInfo[] }> {
  const dropped = pastPolicy(groupCalls(undoPrefix, listed), stampTime, policy);
  const keys = dropped.flatMap((c) => c.keys);
  for (let i = 0; i < keys.length; i += 1000) await storage.delete(keys.slice(i, i + 1000));
  const gone = new Set(keys);
  return { dropped: dropped.length, kept: listed.filter((o) => !gone.has(o.key)) };
}

interface ListedCall {
  session: string;
  stamp: string;
  keys: string[];
  bytes: number;
}

/** The objects listed under a workspace's undo prefix by call (`<session>/<stamp>/` below it). */
function groupCalls(prefix: string, listed: ObjectInfo[]): ListedCall[] {
  const calls = new Map<string, ListedCall>();
  for (const o of listed) {
    const [session, stamp, ...rest] = o.key.slice(prefix.length).split("/");
    if (!session || !stamp || rest.length === 0) continue; // not an object of a call
    const id = `${session}/${stamp}`;
    const call = calls.get(id) ?? calls.set(id, { session, stamp, keys: [], bytes: 0 }).get(id)!;
    call.keys.push(o.key);
    call.bytes += o.size;
  }
  return [...calls.values()];
}

/**
 * The calls past the policy: in each session those past its newest `calls` or older than `ms`; then,
 * of the rest, newest first across sessions (stamps count time down), every call from the first
 * that would pass `workspaceCalls` or `workspaceBytes` on: the oldest go first, and what is kept is
 * at most both.
 */
function pastPolicy(calls: ListedCall[], stampTime: (stamp: string) => number, policy: RetentionPolicy): ListedCall[] {
  const bySession = new Map<string, ListedCall[]>();
  for (const c of calls) (bySession.get(c.session) ?? bySession.set(c.session, []).get(c.session)!).push(c);
  const dropped: ListedCall[] = [];
  const left: ListedCall[] = [];
  for (const own of bySession.values()) {
    own.sort((a, b) => (a.stamp < b.stamp ? -1 : 1)); // newest first
    for (const [i, c] of own.entries()) (i >= policy.calls || policy.now - stampTime(c.stamp) > policy.ms ? dropped : left).push(c);
  }
  left.sort((a, b) => (a.stamp < b.stamp ? -1 : a.stamp > b.stamp ? 1 : a.session < b.session ? -1 : 1));
  let bytes = 0;
  for (const [i, c] of left.entries()) {
    bytes += c.bytes;
    if (i >= policy.workspaceCalls || bytes > policy.workspaceBytes) return [...dropped, ...left.slice(i)];
  }
  return dropped;
}

/**
 * Call tasks: a tool call that a door runs as a task (MCP tasks: lib/doors/mcp-tasks.ts), one JSON
 * record per task in the workspace's internal area, below the key that made it
 * (x/call-tasks/<key id>/<id>.json: lib/layout/paths.ts callTaskKey), so it survives the isolate that
 * started it, another tenant's, workspace's or key's id names nothing (NOT_FOUND), and a key lists
 * its own tasks without reading any other's. Ids sort newest first (their creation time counted down).
 * Every change is a conditional write (If-None-Match: * to create, If-Match the version read to
 * change): of two requests advancing one task, one wins and the other reads the winner's record.
 *
 * A record also names its key (key_id), checked on every read: a record of the first layout
 * (x/call-tasks/<id>.json, every key's side by side) is still read, changed and swept by its id until
 * its ttl, and is not listed. Kept ttl_ms from its creation (default CALL_TASK_TTL_MS, 24 h; at least 1
 * min, at most 7 days): past it, it is NOT_FOUND; the object is deleted once it is also 24 h past its
 * last write, by the sweep of the key's next task's creation (lib/storage/sweep.ts) and by the
 * housekeeping tick (lib/runtime/housekeeping.ts: every key's and the first layout's), each deleting
 * only the version it read.
 *
 * Storage operations: create = 1 PUT (+ the sweep: 1 LIST, ≤ 20 GETs + 1 DELETE when some record of
 * the key is older than its grace); read = 1 GET; a change = 1 PUT (+ 1 GET per lost race); a page of
 * the list = 1 LIST + 1 GET per record on it (at most LIST_PAGE), whatever other keys hold.
 */
import { ToolError } from "../../shared/errors.js";
import { randomId } from "../../shared/hash.js";
import { CALL_TASK_ID_PATTERN, callTaskKey, callTasksPrefix, keyCallTasksPrefix } from "../../layout/paths.js";
import { readJson } from "../../storage/json.js";
import { RECORD_GRACE_MS, sweepRecords } from "../../storage/sweep.js";
import { isConditionFailed, type StorageDriver } from "../../storage/types.js";

/** How long a task and its result are kept by default, from its creation. */
export const CALL_TASK_TTL_MS = 24 * 60 * 60 * 1000;
/** The longest a client may ask a task to be kept. */
export const MAX_CALL_TASK_TTL_MS = 7 * 24 * 60 * 60 * 1000;
/** The shortest: a client asking for less gets this (the result must outlive a poll or two). */
export const MIN_CALL_TASK_TTL_MS = 60 * 1000;
/** Partial output kept for tasks/get: the last this many characters. */
export const PARTIAL_OUTPUT_CHARS = 8_000;

/** Most tasks one page of the list holds. */
export const LIST_PAGE = 100;

/** The MCP statuses, which are the ones a task can be in whatever the door. */
export type CallTaskStatus = "working" | "input_required" | "completed" | "failed" | "cancelled";
export const isTerminal = (s: CallTaskStatus) => s === "completed" || s === "failed" || s === "cancelled";

/** What the call came to: the tool's outcome (as runTool returns it), or its error. */
export type CallTaskOutcome =
  | { ok: true; title: string; output: string; data: Record<string, unknown>; call_id?: string }
  | { ok: false; code: string; message: string; details: Record<string, unknown> };

export interface CallTaskRecord {
  id: string;
  tool: string;
  /** Who made it: only this key reads, waits on or cancels it. */
  key_id: string;
  session: string;
  status: CallTaskStatus;
  /** One line for the client's UI: what the task does or waits for. */
  status_message?: string;
  created_at: string;
  updated_at: string;
  ttl_ms: number;
  /** A sandbox run the task follows (bash or run_code started in the background: lib/exec/tasks.ts). */
  run_id?: string;
  /** A subagent the task follows (task with background: lib/tools/task/records.ts). */
  agent_task_id?: string;
  /** A call answered as a task after a threshold, running on under its request's waitUntil: not ended this long (ms) after the task's creation, it was lost (late.ts). */
  lost_after_ms?: number;
  /** That run's timeout in seconds (what a timed-out run's error says). */
  run_timeout_s?: number;
  /** What the call's start said before its work went on detached, said first in the work's result: what a human decided about the call (an approval's note, changed arguments: invariant 13), what was lost with the session's live sandbox. */
  preface?: string;
  /** A held call or question the task waits on (lib/tools/pending/store.ts). */
  pending_id?: string;
  /** The last PARTIAL_OUTPUT_CHARS characters of the run's output so far. */
  output?: string;
  /** Output events seen so far (a progress count for the client). */
  progress?: number;
  outcome?: CallTaskOutcome;
}

export interface CallTaskScope {
  storage: StorageDriver;
  tenant: string;
  workspace: string;
  /** The key calling: a record of another key is NOT_FOUND. */
  key_id: string;
  now?: () => number;
}

function keyOf(s: CallTaskScope, id: string): string {
  const key = callTaskKey(s.tenant, s.workspace, s.key_id, id);
  if (key === null) throw notFound(id);
  return key;
}

/** Base32 digits in their ASCII order, so that the text of a number sorts as the number. */
const SORTED_DIGITS = "234567abcdefghijklmnopqrstuvwxyz";
/** 9 such digits hold 45 bits of milliseconds (to the year 3084), counted down: later times sort first. */
const TIME_DIGITS = 9;
const COUNTDOWN_FROM = 2 ** (5 * TIME_DIGITS) - 1;
function countdown(ms: number): string {
  let n = COUNTDOWN_FROM - Math.max(0, Math.min(Math.floor(ms), COUNTDOWN_FROM));
  let out = "";
  for (let i = 0; i < TIME_DIGITS; i++, n = Math.floor(n / 32)) out = SORTED_DIGITS[n % 32] + out;
  return out;
}
/** A new task id: "c", its creation time counted down, 16 random characters (CALL_TASK_ID_PATTERN). */
const newCallTaskId = (ms: number) => `c${countdown(ms)}${randomId(16)}`;
/** Where the ids of tasks made before `ms` begin (they sort after it). */
const madeBefore = (ms: number) => `c${countdown(ms)}`;

export const notFound = (id: string) =>
  new ToolError("NOT_FOUND", `No task ${JSON.stringify(id.slice(0, 40))} for this key in this workspace (it never existed, belongs to another key or workspace, or was kept past its ttl and removed). Call the tool again to start a new one.`, { task_id: id.slice(0, 40) });

const nowOf = (s: Pick<CallTaskScope, "now">) => (s.now ?? Date.now)();
export const expiresAt = (r: CallTaskRecord) => Date.parse(r.created_at) + r.ttl_ms;

/** The ttl a client asked for, within the bounds (default CALL_TASK_TTL_MS). */
export function ttlOf(asked: number | undefined): number {
  if (asked === undefined || !Number.isFinite(asked)) return CALL_TASK_TTL_MS;
  return Math.min(Math.max(Math.round(asked), MIN_CALL_TASK_TTL_MS), MAX_CALL_TASK_TTL_MS);
}

/** A new task record, created only if its id is new; the lazy sweep of expired ones runs beside it. */
export async function createCallTask(s: CallTaskScope, init: Pick<CallTaskRecord, "tool" | "session" | "ttl_ms">): Promise<{ rec: CallTaskRecord; etag: string }> {
  const at = new Date(nowOf(s)).toISOString();
  const rec: CallTaskRecord = { id: newCallTaskId(nowOf(s)), key_id: s.key_id, status: "working", created_at: at, updated_at: at, ...init };
  const put = await s.storage.put(keyOf(s, rec.id), JSON.stringify(rec), { contentType: "application/json", ifNoneMatch: "*" });
  void sweepKeyCallTasks(s.storage, keyCallTasksPrefix(s.tenant, s.workspace, s.key_id), nowOf(s)).catch(() => {});
  return { rec, etag: put.etag };
}

/** The caller's task and its version; NOT_FOUND when missing, another key's, or past its ttl. */
export async function loadCallTask(s: CallTaskScope, id: string): Promise<{ rec: CallTaskRecord; etag: string }> {
  const got = await readJson<CallTaskRecord>(s.storage, keyOf(s, id));
  if (!got || got.value.key_id !== s.key_id || expiresAt(got.value) <= nowOf(s)) throw notFound(id);
  return { rec: got.value, etag: got.etag };
}

/**
 * Changes a task with `change` (a pure function of the record read) until the write holds: reads
 * again after a lost race. `change` returns null to leave the record as it is. Returns the record as
 * written (or as found) and whether this call's change was the one written.
 */
export async function changeCallTask(s: CallTaskScope, id: string, change: (rec: CallTaskRecord) => CallTaskRecord | null, first?: { rec: CallTaskRecord; etag: string }): Promise<{ rec: CallTaskRecord; changed: boolean }> {
  let cur = first ?? (await loadCallTask(s, id));
  for (let attempt = 0; attempt < 5; attempt++) {
    const next = change(cur.rec);
    if (!next) return { rec: cur.rec, changed: false };
    const rec = { ...next, updated_at: new Date(nowOf(s)).toISOString() };
    try {
      await s.storage.put(keyOf(s, id), JSON.stringify(rec), { contentType: "application/json", ifMatch: cur.etag });
      return { rec, changed: true };
    } catch (e) {
      if (!isConditionFailed(e)) throw e;
      cur = await loadCallTask(s, id);
    }
  }
  throw new ToolError("CONFLICT", `Task ${id} is being changed by several requests at once; ask again.`, { task_id: id });
}

/**
 * One page of the caller's tasks in this workspace, newest first: after the task `cursor` names (the
 * last one listed on the page before), at most LIST_PAGE of them. Listed from the key's own folder:
 * one LIST and one GET per task on the page, whatever other keys hold. `next` when more may follow.
 * Tasks of the first layout are not listed (they are still read by their id until their ttl).
 */
export async function listCallTasks(s: CallTaskScope, opts: { cursor?: string; limit?: number } = {}): Promise<{ tasks: CallTaskRecord[]; next?: string }> {
  const prefix = keyCallTasksPrefix(s.tenant, s.workspace, s.key_id);
  if (opts.cursor !== undefined && !CALL_TASK_ID_PATTERN.test(opts.cursor)) {
    throw new ToolError("INVALID_ARGUMENT", "Invalid cursor: pass back the nextCursor of the previous tasks/list answer as it was, or no cursor for the first page.", { cursor: opts.cursor.slice(0, 40) });
  }
  const listed = await s.storage.list({ prefix, limit: Math.min(opts.limit ?? LIST_PAGE, LIST_PAGE), ...(opts.cursor ? { startAfter: `${prefix}${opts.cursor}.json` } : {}) });
  const ids = listed.objects.map((o) => o.key.slice(prefix.length, -".json".length)).filter((id) => CALL_TASK_ID_PATTERN.test(id));
  const recs = await Promise.all(ids.map((id) => readJson<CallTaskRecord>(s.storage, `${prefix}${id}.json`)));
  const now = nowOf(s);
  const tasks = recs.map((r) => r?.value).filter((r): r is CallTaskRecord => !!r && r.key_id === s.key_id && expiresAt(r) > now);
  const last = ids.at(-1);
  return { tasks, ...(listed.cursor && last ? { next: last } : {}) };
}

const isStale = (r: CallTaskRecord, t: number) => expiresAt(r) <= t;

/** The sweep of one key's folder: only its tasks made before the sweep's grace are candidates, so the listing starts where they do (newest first). */
function sweepKeyCallTasks(storage: StorageDriver, prefix: string, now: number): Promise<string[]> {
  return sweepRecords<CallTaskRecord>({ driver: storage, prefix, now, isStale, startAfter: `${prefix}${madeBefore(now - RECORD_GRACE_MS)}` });
}

/**
 * Deletes (each only if unchanged since read) task records past their ttl in a workspace: up to 20 of
 * each key's folder and 20 of the first layout's; never throws. Cost: 1 LIST of the folders (a page per
 * 1,000 keys and records of the first layout), then the sweep of each (1 LIST, GETs only of candidates).
 */
export async function sweepCallTasks(storage: StorageDriver, tenant: string, workspace: string, now = Date.now()): Promise<string[]> {
  const prefix = callTasksPrefix(tenant, workspace);
  const deleted: string[] = [];
  try {
    let cursor: string | undefined;
    do {
      const page = await storage.list({ prefix, delimiter: "/", ...(cursor ? { cursor } : {}) });
      // Candidates: records last written more than the sweep's grace (24 h) ago, the rule of every record kind; one past its ttl is NOT_FOUND before that.
      if (page.objects.length > 0) deleted.push(...(await sweepRecords<CallTaskRecord>({ driver: storage, prefix, now, isStale, listed: page.objects })));
      for (const folder of page.prefixes) deleted.push(...(await sweepKeyCallTasks(storage, folder, now)));
      cursor = page.cursor;
    } while (cursor);
  } catch {
    // the sweep is housekeeping: it never fails the call that runs it
  }
  return deleted;
}

/**
 * Call tasks: a tool call that a door runs as a task (MCP tasks: lib/doors/mcp-tasks.ts), one JSON
 * record per task in the workspace's internal area (x/call-tasks/<id>.json), so it survives the
 * isolate that started it and another tenant's or workspace's id names nothing (NOT_FOUND).
 * Every change is a conditional write (If-None-Match: * to create, If-Match the version read to
 * change): of two requests advancing one task, one wins and the other reads the winner's record.
 *
 * A record is bound to the key that made it (another key of the same tenant gets NOT_FOUND too)
 * and kept ttl_ms from its creation (default CALL_TASK_TTL_MS, 24 h; at least 1 min, at most 7 days):
 * past it, it is NOT_FOUND; the object is deleted once it is also 24 h past its last write, by the
 * sweep of a later task's creation (lib/storage/sweep.ts) and by the housekeeping tick
 * (lib/runtime/housekeeping.ts), each deleting only the version it read.
 *
 * Storage operations: create = 1 PUT (+ the sweep: 1 LIST, ≤ 20 GETs + 1 DELETE when some record is
 * older than its grace); read = 1 GET; a change = 1 PUT (+ 1 GET per lost race); list = 1 LIST + 1 GET per record.
 */
import { ToolError } from "../../shared/errors.js";
import { randomId } from "../../shared/hash.js";
import { internalPrefix } from "../../layout/paths.js";
import { readJson } from "../../storage/json.js";
import { sweepRecords } from "../../storage/sweep.js";
import { isConditionFailed, type StorageDriver } from "../../storage/types.js";

/** How long a task and its result are kept by default, from its creation. */
export const CALL_TASK_TTL_MS = 24 * 60 * 60 * 1000;
/** The longest a client may ask a task to be kept. */
export const MAX_CALL_TASK_TTL_MS = 7 * 24 * 60 * 60 * 1000;
/** The shortest: a client asking for less gets this (the result must outlive a poll or two). */
export const MIN_CALL_TASK_TTL_MS = 60 * 1000;
/** Partial output kept for tasks/get: the last this many characters. */
export const PARTIAL_OUTPUT_CHARS = 8_000;

/** Task ids: "c" + 24 base32 characters. */
export const CALL_TASK_ID_PATTERN = /^c[a-z2-7]{24}$/;

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

const prefixOf = (s: Pick<CallTaskScope, "tenant" | "workspace">) => `${internalPrefix(s.tenant, s.workspace)}call-tasks/`;

function keyOf(s: CallTaskScope, id: string): string {
  if (!CALL_TASK_ID_PATTERN.test(id)) throw notFound(id);
  return `${prefixOf(s)}${id}.json`;
}

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
  const rec: CallTaskRecord = { id: `c${randomId(24)}`, key_id: s.key_id, status: "working", created_at: at, updated_at: at, ...init };
  const put = await s.storage.put(keyOf(s, rec.id), JSON.stringify(rec), { contentType: "application/json", ifNoneMatch: "*" });
  void sweepCallTasks(s.storage, s.tenant, s.workspace, nowOf(s)).catch(() => {});
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

/** The caller's tasks in this workspace, newest first (at most `max`). */
export async function listCallTasks(s: CallTaskScope, max = 100): Promise<CallTaskRecord[]> {
  const listed = await s.storage.list({ prefix: prefixOf(s), limit: 1000 });
  const recs = await Promise.all(listed.objects.map((o) => readJson<CallTaskRecord>(s.storage, o.key)));
  const now = nowOf(s);
  return recs
    .map((r) => r?.value)
    .filter((r): r is CallTaskRecord => !!r && r.key_id === s.key_id && expiresAt(r) > now)
    .sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0))
    .slice(0, max);
}

/** Deletes (each only if unchanged since read) up to 20 task records past their ttl; never throws. */
export function sweepCallTasks(storage: StorageDriver, tenant: string, workspace: string, now = Date.now()): Promise<string[]> {
  // Candidates: records last written more than the sweep's grace (24 h) ago, the rule of every record kind; one past its ttl is NOT_FOUND before that.
  return sweepRecords<CallTaskRecord>({ driver: storage, prefix: prefixOf({ tenant, workspace }), now, isStale: (r, t) => expiresAt(r) <= t });
}

/**
 * Task records: one JSON object per `task` run in the workspace's private area
 * (x/tasks/<id>.json, lib/layout/paths.ts taskKey), so another workspace or tenant cannot see it (NOT_FOUND).
 * Written at the start of a background task, after each of its steps, and at the end (1 PUT each);
 * a foreground task writes it once, at the end. Read: 1 GET.
 * Stopping a background task (an MCP client's tasks/cancel: lib/run/tasks/run.ts) writes its stop
 * flag beside the record (x/tasks/<id>.stop.json, 1 PUT), which the subagent looks for before each
 * model turn and each tool call (1 HEAD each): a durable flag, as a sandbox run's kill flag, so the
 * request that asks and the process that runs the subagent need not share an isolate. The flag
 * carries the task's deadline, so the same sweep removes it.
 * Records live RECORD_GRACE_MS (24 h) past their deadline: each new task sweeps (lib/storage/sweep.ts)
 * up to 20 older ones, each deleted only if still the version read. Cost per task start: 1 LIST,
 * plus ≤ 20 GETs + 1 DELETE when some record was last written more than 24 h ago.
 */
import { ToolError } from "../../shared/errors.js";
import { randomId } from "../../shared/hash.js";
import { internalPrefix, taskKey } from "../../layout/paths.js";
import { RECORD_GRACE_MS, sweepRecords } from "../../storage/sweep.js";
import type { StorageDriver } from "../../storage/types.js";

export type TaskStatus = "running" | "completed" | "max_steps" | "failed" | "cancelled";

export interface TaskRecord {
  task_id: string;
  status: TaskStatus;
  description?: string;
  answer: string;
  steps: number;
  files_changed: string[];
  /** The undo ids of the subagent's calls that changed files, in order (POST /v1/workspaces/{ws}/undo). */
  call_ids: string[];
  pending_ids: string[];
  usage: { prompt_tokens: number; completion_tokens: number };
  error?: { code: string; message: string };
  created_at: string;
  /** When the task's max_seconds is up: a record still `running` well past it was lost (its worker ended). */
  deadline: string;
}

export interface TaskScope {
  driver: StorageDriver;
  tenant: string;
  workspace: string;
}

/**
 * Whether the sweep may delete it: its deadline (max_seconds after the start; every task has ended by
 * then, a record still `running` after it was lost) lies more than the grace ago.
 */
export const isTaskSweepable = (r: TaskRecord, now: number, graceMs = RECORD_GRACE_MS) => {
  const end = Date.parse(r.deadline);
  return Number.isFinite(end) && end + graceMs <= now;
};

/** Deletes up to 20 task records of the workspace that ended more than 24 h before `now`; never throws. */
export const sweepTasks = (s: TaskScope, now: number) =>
  sweepRecords<TaskRecord>({ driver: s.driver, prefix: `${internalPrefix(s.tenant, s.workspace)}tasks/`, now, isStale: (r, at) => isTaskSweepable(r, at) });

export const TASK_ID_PATTERN = /^task_[A-Za-z0-9]{16,32}$/;
export const newTaskId = () => `task_${randomId(20)}`;

export async function saveTask(s: TaskScope, rec: TaskRecord): Promise<void> {
  await s.driver.put(taskKey(s.tenant, s.workspace, rec.task_id), JSON.stringify(rec), { contentType: "application/json" });
}

export async function loadTask(s: TaskScope, id: string): Promise<TaskRecord> {
  const missing = () => new ToolError("NOT_FOUND", `No task ${id} in workspace ${s.workspace}. Use the task_id a task call of this workspace returned.`, { task_id: id });
  if (!TASK_ID_PATTERN.test(id)) throw missing();
  const got = await s.driver.get(taskKey(s.tenant, s.workspace, id));
  if (!got) throw missing();
  const rec = JSON.parse(await new Response(got.body).text()) as TaskRecord;
  rec.call_ids ??= []; // records written before call_ids existed
  return rec;
}

const stopKey = (s: TaskScope, id: string) => taskKey(s.tenant, s.workspace, id).replace(/\.json$/, ".stop.json");

/** Asks a background task to stop: its subagent starts no model turn or tool call after it sees this. */
export async function requestTaskStop(s: TaskScope, rec: Pick<TaskRecord, "task_id" | "deadline">): Promise<void> {
  await s.driver.put(stopKey(s, rec.task_id), JSON.stringify({ task_id: rec.task_id, stop_requested_at: new Date().toISOString(), deadline: rec.deadline }), { contentType: "application/json" });
}

/** Whether the task was asked to stop (1 HEAD). */
export async function taskStopRequested(s: TaskScope, id: string): Promise<boolean> {
  return (await s.driver.head(stopKey(s, id))) !== null;
}

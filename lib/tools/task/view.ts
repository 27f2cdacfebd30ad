/** What task and task_output hand back: the data schema and the text for the model. */
import { z } from "@hono/zod-openapi";
import type { TaskRecord } from "./records.js";

export const TaskData = z.object({
  task_id: z.string(),
  status: z.enum(["running", "completed", "max_steps", "failed", "cancelled"]),
  answer: z.string().optional(),
  steps: z.number().int().optional(),
  files_changed: z.array(z.string()).optional(),
  call_ids: z.array(z.string()).optional().describe("Undo ids of the subagent's calls that changed files, in order (POST /v1/workspaces/{ws}/undo)"),
  usage: z.object({ prompt_tokens: z.number(), completion_tokens: z.number() }).optional(),
  pending_ids: z.array(z.string()).optional().describe("Calls of the subagent that wait for a human's approval (not run)"),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});

export function taskText(r: TaskRecord): string {
  const head =
    r.status === "completed" ? `Task ${r.task_id} completed in ${r.steps} steps.`
    : r.status === "max_steps" ? `Task ${r.task_id} stopped at the tenant's step limit (${r.steps} steps) without a final answer; its last words are below. Call task again with a narrower prompt.`
    : r.status === "running" ? `Task ${r.task_id} is still running (${r.steps} steps so far). Call task_output again to wait for it.`
    : r.status === "cancelled" ? `Task ${r.task_id} was cancelled after ${r.steps} ${r.steps === 1 ? "step" : "steps"}: it was asked to stop, and started nothing after that (what it did before stays; its files and undo ids are below).`
    : `Task ${r.task_id} failed after ${r.steps} steps: ${r.error?.code}: ${r.error?.message}`;
  const files = r.files_changed.length ? `\nFiles changed: ${r.files_changed.join(", ")}` : "";
  const undo = r.call_ids.length ? `\nUndo ids (oldest first): ${r.call_ids.join(", ")}` : "";
  const pend = r.pending_ids.length ? `\nWaiting for approval (not run): ${r.pending_ids.join(", ")}` : "";
  return `${head}${files}${undo}${pend}${r.answer ? `\n\n${r.answer}` : ""}`;
}

export const taskData = (r: TaskRecord) => ({
  task_id: r.task_id, status: r.status, answer: r.answer, steps: r.steps, files_changed: r.files_changed, call_ids: r.call_ids, usage: r.usage,
  ...(r.pending_ids.length ? { pending_ids: r.pending_ids } : {}), ...(r.error ? { error: r.error } : {}),
});

const RUNS_IN_BACKGROUND = " runs in the background. Read its outcome with task_output";

/** What the model reads of a background subagent's start (functions/task.ts). */
export const taskStartedText = (task_id: string): string => `Task ${task_id}${RUNS_IN_BACKGROUND} {task_id: "${task_id}"}.`;

/** The line of taskStartedText (lib/run/tasks/advance.ts leaves it out of a task's preface). */
export const isTaskStartedLine = (line: string): boolean => line.startsWith("Task ") && line.includes(RUNS_IN_BACKGROUND);

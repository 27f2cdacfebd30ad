import { z } from "@hono/zod-openapi";
import { defineTool } from "../lib/contract/tool.js";
import { loadTask, type TaskRecord } from "../lib/tools/task/records.js";
import { TaskData, taskData, taskText } from "../lib/tools/task/view.js";

const MAX_WAIT_S = 300;
/** A record still running this long past its deadline was lost (its worker ended before the task did). */
const LOST_AFTER_MS = 60_000;

const description = `Read the outcome of a background task (started with task, background: true).
- task_id: from task.
- wait: wait until the task ends or timeout seconds pass (default: true). timeout: seconds (default: 30, max ${MAX_WAIT_S}).
- status: running | completed | max_steps | failed | cancelled (stopped by its MCP task's cancel). An unknown task_id (or one of another workspace) gives NOT_FOUND.
Returns: {task_id, status, answer, steps, files_changed, call_ids, usage, error?}`;

export default defineTool({
  name: "task_output",
  description,
  category: "execute",
  permission: "execute",
  summary: "Read a background task's status and outcome (answer, files changed); wait (default true) waits up to timeout seconds for it to end.",
  annotations: { title: "Read a task's outcome", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  output: TaskData,
  input: z.object({
    task_id: z.string().min(1).max(100).describe("The task's id"),
    wait: z.boolean().optional().describe("Wait for the task to end (default: true)"),
    timeout: z.number().int().min(1).max(MAX_WAIT_S).optional().describe("Longest wait, seconds (default: 30)"),
  }),
  async execute(args, ctx) {
    const s = { driver: ctx.deps.storage, tenant: ctx.ws.tenant, workspace: ctx.ws.id };
    const until = Date.now() + (args.wait === false ? 0 : (args.timeout ?? 30) * 1000);
    let rec: TaskRecord = await loadTask(s, args.task_id);
    for (let pause = 100; rec.status === "running" && Date.now() + pause <= until && !ctx.signal?.aborted; pause = Math.min(pause * 2, 2000)) {
      await new Promise((r) => setTimeout(r, pause));
      rec = await loadTask(s, args.task_id);
    }
    if (rec.status === "running" && Date.now() > Date.parse(rec.deadline) + LOST_AFTER_MS) {
      rec = { ...rec, status: "failed", error: { code: "UNAVAILABLE", message: "The task stopped without finishing (the process running it ended before its deadline). Run it again, in the foreground if it is short." } };
    }
    return { title: `task ${rec.task_id}: ${rec.status}`, output: taskText(rec), data: taskData(rec) };
  },
});

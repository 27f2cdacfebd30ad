import { z } from "@hono/zod-openapi";
import { killTask } from "../lib/exec/tasks.js";
import { defineTool } from "../lib/contract/tool.js";

const description = `Stop a background task started by bash with run_in_background: true. Every process of the task is killed and its file changes are not written back.
- task_id: the task's id. An unknown task_id gives NOT_FOUND.
- status "stopping": the task was told to stop but had not confirmed within 15 s; bash_output shows when it has.
- killed_by "key_gone": the task was stopped because the API key that started it was revoked or expired, not by this call.
Returns: {task_id, status: "killed" | "already_completed" | "stopping", killed_by?}`;

export default defineTool({
  name: "kill_shell",
  description,
  category: "execute",
  permission: "execute",
  summary: "Stop a background bash task by task_id: every process is killed and its file changes are not written back.",
  annotations: { title: "Stop background task", readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  output: z.object({ task_id: z.string(), status: z.enum(["killed", "already_completed", "stopping"]), killed_by: z.literal("key_gone").optional() }),
  input: z.object({ task_id: z.string().min(1).max(100).describe("The background task's id") }),
  async execute(args, ctx) {
    // Sets the kill flag in the task's record; its runner checks it about every second.
    const { status, killed_by } = await killTask(ctx.deps.storage, { tenant: ctx.ws.tenant, workspace: ctx.ws.id, task_id: args.task_id });
    // Its starting key's end stopped it (before this call, or as this call's flag did): that is the reason the model reads.
    const keyGone = `every process of it was killed and none of its file changes was written back. Use bash_output to read what it printed.`;
    const output = killed_by === "key_gone"
      ? status === "killed"
        ? `Task ${args.task_id} killed; the API key that started it is revoked or expired too (killed_by: "key_gone"): ${keyGone}`
        : `Task ${args.task_id} had already been stopped because the API key that started it was revoked or expired (killed_by: "key_gone"), not by this call: ${keyGone}`
      : {
        killed: `Task ${args.task_id} killed.`,
        already_completed: `Task ${args.task_id} had already ended (it finished, reached its deadline, or an earlier kill_shell stopped it); use bash_output to read how it ended.`,
        stopping: `Task ${args.task_id} was told to stop and has not confirmed yet; call bash_output with wait: true to see it end.`,
      }[status];
    return {
      title: `${args.task_id}: ${status}`,
      output,
      data: { task_id: args.task_id, status, ...(killed_by ? { killed_by } : {}) },
    };
  },
});

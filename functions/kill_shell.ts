import { z } from "@hono/zod-openapi";
import { executorOf } from "../lib/exec/tool-support.js";
import { defineTool } from "../lib/tool.js";

const description = `Stop a background task started by bash with run_in_background: true. Every process of the task is killed and its file changes are not written back.
- task_id: the task's id. An unknown task_id gives NOT_FOUND.
Returns: {task_id, status: "killed" | "already_completed"}`;

export default defineTool({
  name: "kill_shell",
  description,
  category: "execute",
  permission: "execute",
  input: z.object({ task_id: z.string().min(1).max(100).describe("The background task's id") }),
  async execute(args, ctx) {
    const { status } = await executorOf(ctx.deps).kill({ tenant: ctx.ws.tenant, task_id: args.task_id });
    return {
      title: `${args.task_id}: ${status}`,
      output: status === "killed" ? `Task ${args.task_id} killed.` : `Task ${args.task_id} had already finished; use bash_output to read its result.`,
      data: { task_id: args.task_id, status },
    };
  },
});

import { z } from "@hono/zod-openapi";
import { ToolError, isToolError } from "../lib/shared/errors.js";
import { toToolError } from "../lib/contract/errors.js";
import { defineTool, type ToolContext } from "../lib/contract/tool.js";
import { runSubagent, type TaskToolDeps } from "../lib/tools/task/loop.js";
import { runInBackground } from "../lib/tools/task/background.js";
import { DEFAULT_MAX_SECONDS, loadModelConfig } from "../lib/tools/task/model-config.js";
import { newTaskId, saveTask, sweepTasks, taskStopRequested, type TaskRecord } from "../lib/tools/task/records.js";
import { TaskData, taskData, taskStartedText, taskText } from "../lib/tools/task/view.js";

const description = `Delegate a task to a subagent that works in this workspace with the same tools (and your key's permissions, the tenant's policy and approval gate), then answers.
- prompt: the whole task; the subagent sees nothing else of your conversation. description: a short title (3-5 words).
- background: true returns {task_id, status: "running"} at once; read the outcome with task_output (default: false).
- The subagent cannot call task, task_output or ask_user; a call of its own that needs approval is not run (its pending_ids are listed).
- Each of its calls that changed files is undoable on its own: call_ids lists them in order (POST /v1/workspaces/{ws}/undo with a call_id, or without one to walk back your session newest first).
- Without a model endpoint configured for this tenant: LLM_ASSIST_REQUIRED with the prompt in details (run it with your own agent).
- Bounded by the tenant's max_steps (status "max_steps" when reached) and max_seconds (TIMEOUT). Endpoint failure: UNAVAILABLE; an endpoint the SSRF guard refuses: BLOCKED.
Returns: {task_id, status, answer, steps, files_changed, call_ids, usage: {prompt_tokens, completion_tokens}}`;

export default defineTool({
  name: "task",
  description,
  category: "execute",
  // execute: it runs a loop of tool calls on the caller's behalf (bash among them when the key may) and spends the tenant's model budget.
  permission: "execute",
  summary: "Delegate a task to a subagent that uses this workspace's tools and answers; background: true returns a task_id for task_output.",
  annotations: { title: "Run a subagent", readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
  output: TaskData,
  input: z.object({
    prompt: z.string().trim().min(1).max(100_000).describe("The task for the subagent, with everything it needs to know"),
    description: z.string().max(200).optional().describe("A short title of the task (3-5 words)"),
    background: z.boolean().optional().describe("Return a task_id at once and run on (default: false)"),
  }),
  async execute(args, ctx: ToolContext<TaskToolDeps>) {
    const cfg = await loadModelConfig(ctx.deps.kv, ctx.auth.tenant);
    if (!cfg) {
      throw new ToolError("LLM_ASSIST_REQUIRED", `This tenant has no model endpoint for subagents, so Toolshed cannot run this task. Run the prompt (details.prompt) with your own agent, or ask an admin to configure PUT /v1/admin/tenants/${ctx.auth.tenant}/model.`, { prompt: args.prompt, ...(args.description ? { description: args.description } : {}) });
    }
    const now = Date.now();
    const rec: TaskRecord = {
      task_id: newTaskId(), status: "running", ...(args.description ? { description: args.description } : {}), answer: "", steps: 0, files_changed: [], call_ids: [], pending_ids: [],
      usage: { prompt_tokens: 0, completion_tokens: 0 }, created_at: new Date(now).toISOString(), deadline: new Date(now + (cfg.max_seconds ?? DEFAULT_MAX_SECONDS) * 1000).toISOString(),
    };
    const s = { driver: ctx.deps.storage, tenant: ctx.ws.tenant, workspace: ctx.ws.id };
    await sweepTasks(s, (ctx.deps.task?.now ?? Date.now)()); // records of tasks ended more than 24 h ago
    if (args.background) {
      await saveTask(s, rec);
      void runInBackground(args.prompt, cfg, ctx, rec, s); // metered where it ends (lib/tools/task/background.ts)
      return { title: `task ${rec.task_id}: running`, output: taskStartedText(rec.task_id), data: { task_id: rec.task_id, status: "running" } };
    }
    try {
      await runSubagent(args.prompt, cfg, ctx, rec);
    } catch (e) {
      const te = isToolError(e) ? e : toToolError(e);
      await saveTask(s, { ...rec, status: "failed", error: { code: te.code, message: te.message } });
      throw new ToolError(te.code, te.message, { ...te.details, task_id: rec.task_id, steps: rec.steps, files_changed: rec.files_changed, call_ids: rec.call_ids });
    }
    await saveTask(s, rec);
    return { title: `task ${rec.task_id}: ${rec.status}`, output: taskText(rec), data: taskData(rec) };
  },
});


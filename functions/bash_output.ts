import { z } from "@hono/zod-openapi";
import { KEEP_OUTPUT_LOGS, OUTPUT_LOG_DAYS, readOutputLog } from "../lib/sync/output-logs.js";
import { pollTask } from "../lib/exec/tasks.js";
import { ToolError } from "../lib/shared/errors.js";
import { commandData, MAX_COMMAND_OUTPUT, runCallId } from "../lib/exec/tool-support.js";
import { discardedNote, writeBackNotes } from "../lib/exec/write-back-notes.js";
import { cutText } from "../lib/shared/output-cut.js";
import { defineTool } from "../lib/contract/tool.js";
import { CommandResult } from "../lib/contract/tool-output.js";

const description = `Read a background task's output since the last call, and its status; or the full output of a command whose output was cut.
- task_id: from bash with run_in_background: true.
- output_file (instead of task_id): the saved full output a cut note names (bash, run_code, a task's result); offset: first line (default 1), limit: lines (default 2000, at most 50 KB). Full outputs are not workspace files (never exported or listed); the ${KEEP_OUTPUT_LOGS} newest of the workspace are kept, ${OUTPUT_LOG_DAYS} days at most.
- wait: true waits until the task finishes or timeout seconds pass (default: false). timeout: seconds (default: 30, max 600).
- status: running | completed | killed | timed_out (killed_by: "key_gone" when the API key that started it was revoked or expired). When it is no longer running, data.result has the exit code and the files changed and written back (and result.call_id when it changed files: undo the task's write-back with POST /v1/workspaces/{ws}/undo).
- Output is cut to ${MAX_COMMAND_OUTPUT} bytes, head and tail on line boundaries; a note says how many bytes and which lines were left out, and where the full output is. An unknown task_id (or one of another workspace) gives NOT_FOUND.
Returns: {task_id, status, exit_code, output, result?}, or {output_file, output, next_offset?}`;

export default defineTool({
  name: "bash_output",
  description,
  category: "execute",
  permission: "execute",
  summary: "Read a background bash task's new output and its status (running, completed, killed, timed_out); wait: true waits for it to finish.",
  annotations: { title: "Read background output", readOnlyHint: true, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  output: z.object({ task_id: z.string().optional(), output_file: z.string().optional(), next_offset: z.number().int().optional(), status: z.enum(["running", "completed", "killed", "timed_out"]).optional(), killed_by: z.literal("key_gone").optional(), exit_code: z.number().int().nullable().optional(), output: z.string(), result: CommandResult.optional(), error: z.object({ code: z.string(), message: z.string() }).optional() }),
  input: z.object({
    task_id: z.string().min(1).max(100).optional().describe("The background task's id"),
    output_file: z.string().min(1).max(100).optional().describe("A saved full output (output_file of a cut command), instead of task_id"),
    offset: z.number().int().min(1).optional().describe("With output_file: the first line to show (default: 1)"),
    limit: z.number().int().min(1).max(100_000).optional().describe("With output_file: how many lines (default: 2000)"),
    wait: z.boolean().optional().describe("Wait for the task to finish (default: false)"),
    timeout: z.number().int().min(1).max(600).optional().describe("Longest wait, seconds (default: 30)"),
  }),
  async execute(args, ctx) {
    if (args.output_file !== undefined) {
      if (args.task_id !== undefined) throw new ToolError("INVALID_ARGUMENT", "Give task_id (a background task) or output_file (a saved full output), not both.");
      const offset = args.offset ?? 1;
      const page = await readOutputLog(ctx.deps.storage, ctx.ws.tenant, ctx.ws.id, args.output_file, offset, args.limit ?? 2000);
      const more = page.next_offset ? `\n[Showing from line ${offset}. Call bash_output with output_file: "${args.output_file}", offset: ${page.next_offset} to continue.]` : "";
      return { title: `${args.output_file} from line ${offset}`, output: page.text + more, data: { output_file: args.output_file, output: page.text, ...(page.next_offset ? { next_offset: page.next_offset } : {}) } };
    }
    if (args.task_id === undefined) throw new ToolError("INVALID_ARGUMENT", "Missing required argument task_id (a background task's id), or output_file (a saved full output).");
    // The task's record in this workspace's storage: no call to the runner.
    const p = await pollTask(ctx.deps.storage, { tenant: ctx.ws.tenant, workspace: ctx.ws.id, task_id: args.task_id }, { ...(args.wait ? { wait_ms: (args.timeout ?? 30) * 1000 } : {}), ...(ctx.signal ? { signal: ctx.signal } : {}) });
    // Line-aware, with the real bytes and lines of what this poll's text loses, and where the whole output is.
    const running = p.status === "running" ? "The full output is saved when the task ends (output_file in its result)." : "";
    const out = cutText(p.output, MAX_COMMAND_OUTPUT, p.result?.output_file, running).text;
    // A task killed because the key that started it was revoked or expired (lib/sync/starting-key.ts): another key reading it is told why.
    const keyGone = p.result?.killed_by === "key_gone";
    const why = keyGone ? ": the API key that started it was revoked or has expired, so it was stopped and nothing of it was written back" : "";
    const tail = p.status === "running" ? "[still running]" : `[${p.status}${why}${p.exit_code !== null ? `, exit code ${p.exit_code}` : ""}]`;
    // A run stopped before it ended wrote back nothing: what it had changed is named (data.result lists no discarded paths).
    // One stopped by its disk quota has its error line, which says what to do instead.
    const stopped = p.status === "timed_out" ? "timed out" : p.status === "killed" ? "was killed" : null;
    const lost = p.result && stopped && !p.error ? discardedNote(p.result, stopped, stopped === "timed out" ? "Run it again with a larger timeout." : keyGone ? "Run it again with a valid key to make them." : "Run it again to make them.") : "";
    const err = (p.result ? writeBackNotes(p.result) : "") + lost + (p.error ? `\n[error: ${p.error.code}: ${p.error.message}]` : "");
    return {
      title: `${args.task_id}: ${p.status}`,
      output: `${out}${out && !out.endsWith("\n") ? "\n" : ""}${tail}${err}`,
      data: { task_id: p.task_id, status: p.status, ...(keyGone ? { killed_by: "key_gone" as const } : {}), exit_code: p.exit_code, output: out, ...(p.result ? { result: { ...commandData(p.result), ...runCallId(p.call_id, p.result) } } : {}), ...(p.error ? { error: p.error } : {}) },
    };
  },
});

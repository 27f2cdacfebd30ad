/**
 * The subagent: a bounded agent loop against the tenant's model endpoint. Each step is one
 * chat-completions call; each tool call in its answer runs through the run path as a sub-call
 * (ctx.subcalls, which lib/run/run-tool.ts provides: a tool never imports the run path), so the
 * caller's key scopes, the tenant policy and the approval gate apply exactly as to a direct call.
 * A gated call's NEEDS_APPROVAL answer is handed to the model and ends the step (the step's later
 * calls are skipped: they may depend on it). Malformed calls (arguments not JSON, unknown tool) are
 * answered to the model as tool errors. No task, task_output or ask_user inside a task.
 * Undo: each tool call gets its own Workspace with its own undo journal in the caller's session
 * (a call_id per call, as a direct call gets); the ids of the calls that changed files are kept in
 * rec.call_ids, in order, with stamps strictly increasing so a session undo walks them back newest first.
 * Bounds: max_steps model calls, max_seconds of wall time (each model call gets what is left).
 * Progress (ctx.progress): one status event per step, {message: "step 2: called read, edit", done: 2, total: max_steps}.
 * Stopping (hooks.stopRequested, a background task's stop flag): looked at before each model turn and
 * each tool call; once it says stop, nothing more starts (a call under way ends first) and the task
 * ends "cancelled", keeping what it did so far (steps, files, undo ids).
 */
import { isToolError, ToolError } from "../../shared/errors.js";
import { toToolError } from "../../contract/errors.js";
import { openaiTool } from "../../contract/formats.js";
import { truncateMiddle, type SubCalls, type Tool, type ToolContext } from "../../contract/tool.js";
import type { Workspace } from "../../workspace/workspace.js";
import type { WebToolDeps } from "../web/deps.js";
import type { NetMeter } from "../web/net-bytes.js";
import { chatCompletion, type ChatMessage, type ChatToolCall } from "./chat.js";
import { DEFAULT_MAX_SECONDS, DEFAULT_MAX_STEPS, type ModelConfig } from "./model-config.js";
import type { TaskRecord } from "./records.js";

/** Tools a subagent never gets: no recursion, no questions to a user it cannot reach. */
export const NOT_IN_TASK = new Set(["task", "task_output", "ask_user"]);
/** Bytes of one tool result handed to the subagent's model (head and tail; the note says what was left out). */
const MAX_TOOL_RESULT_BYTES = 30_000;

const SYSTEM = (ws: string) =>
  `You are a subagent working in the workspace "${ws}" through the tools given. Do the task you are given, using the tools, then answer with a short final report (what you found or changed). A tool result with ok:false tells you what to do next. A call that waits for a human's approval (NEEDS_APPROVAL) has not run: do not retry it; say so in your answer.`;

/** What the task tool reads of the app's wiring besides the web tools' (the model endpoint goes through deps.webFetch). */
export interface TaskToolDeps extends WebToolDeps {
  /** The clock the sweep of old task records reads (tests move it). */
  task?: { now?: () => number };
}

/** What the subagent may call: what the caller may (lib/run/toolset.ts: scopes, key and workspace tool lists), less NOT_IN_TASK. */
export async function subagentTools(subcalls: SubCalls): Promise<Tool[]> {
  return (await subcalls.usable()).filter((t) => !NOT_IN_TASK.has(t.name));
}

export interface LoopHooks {
  /** After every step (background tasks save their record). */
  onStep?: (rec: TaskRecord) => Promise<void>;
  /** Whether the task was asked to stop (a background task's stop flag: records.ts taskStopRequested). */
  stopRequested?: () => Promise<boolean>;
  /** Whose the model endpoint's network bytes are (default: the task call's, its Workspace). */
  meter?: NetMeter;
}

/** Runs the loop, updating `rec` in place; throws the endpoint's ToolError (rec keeps what was done). */
export async function runSubagent(prompt: string, cfg: ModelConfig, ctx: ToolContext<TaskToolDeps>, rec: TaskRecord, hooks: LoopHooks = {}): Promise<TaskRecord> {
  const subcalls = ctx.subcalls;
  if (!subcalls) throw new ToolError("INTERNAL", "The task tool was called outside the run path, which gives it its sub-calls (lib/run/run-tool.ts executeTool).");
  const maxSteps = cfg.max_steps ?? DEFAULT_MAX_STEPS;
  const deadline = Date.parse(rec.created_at) + (cfg.max_seconds ?? DEFAULT_MAX_SECONDS) * 1000;
  const tools = await subagentTools(subcalls);
  const byName = new Map(tools.map((t) => [t.name, t]));
  const changed = new Set<string>(rec.files_changed);
  // One more listener on each call's workspace: it collects the paths the subagent's file tools change.
  const recorder = { changed: async (_ws: Workspace, path: string) => void changed.add(path) };
  // One Workspace per call, each with its own journal; stamps 1 ms apart at least, so calls in one millisecond keep their order.
  let lastMs = 0;
  const runOne = (tool: Tool, args: unknown) => {
    lastMs = Math.max(Date.now(), lastMs + 1);
    return subcalls.run(tool, args, { stampMs: lastMs, listener: recorder, ...(ctx.signal ? { signal: ctx.signal } : {}) });
  };
  const chatTools = tools.map((t) => {
    const { name, description, parameters, strict } = openaiTool(t);
    return { type: "function", function: { name, description, parameters, strict } };
  });
  const messages: ChatMessage[] = [{ role: "system", content: SYSTEM(ctx.ws.id) }, { role: "user", content: prompt }];
  const sync = () => void (rec.files_changed = [...changed].sort());
  /** Ends the task as cancelled when it was asked to stop. */
  const stopped = async () => {
    if (!(await hooks.stopRequested?.())) return false;
    rec.status = "cancelled";
    sync();
    return true;
  };

  while (rec.steps < maxSteps) {
    const left = deadline - Date.now();
    if (left <= 0) throw new ToolError("TIMEOUT", `The task used its ${cfg.max_seconds ?? DEFAULT_MAX_SECONDS} s (max_seconds) after ${rec.steps} steps without a final answer. Give it a smaller job, or ask an admin to raise max_seconds.`, {});
    if (await stopped()) return rec;
    const reply = await chatCompletion(cfg, { messages, tools: chatTools }, { timeoutMs: left, meter: hooks.meter ?? ctx.ws, ...(ctx.deps.webFetch ? { web: ctx.deps.webFetch } : {}), ...(ctx.signal ? { signal: ctx.signal } : {}) });
    rec.steps += 1;
    rec.usage.prompt_tokens += reply.usage.prompt_tokens;
    rec.usage.completion_tokens += reply.usage.completion_tokens;
    if (reply.message.content) rec.answer = reply.message.content;
    messages.push(reply.message);
    const calls = reply.message.tool_calls ?? [];
    if (calls.length === 0) {
      ctx.progress?.({ kind: "status", message: `step ${rec.steps}: answered`, done: rec.steps, total: maxSteps });
      rec.status = "completed";
      sync();
      return rec;
    }
    let held = false;
    for (const call of calls) {
      if (!held && (await stopped())) return rec; // the calls of this step not started are not run
      const r: { content: string; held: boolean } = held ? { content: JSON.stringify({ ok: false, error: { code: "SKIPPED", message: "Not run: an earlier call of this step waits for a human's approval." } }), held } : await runCall(call, byName, runOne, changed, rec);
      held = r.held;
      const content = r.content;
      messages.push({ role: "tool", tool_call_id: call.id, content });
    }
    sync();
    ctx.progress?.({ kind: "status", message: `step ${rec.steps}: called ${[...new Set(calls.map((c) => String(c?.function?.name ?? "?").slice(0, 64)))].join(", ")}`, done: rec.steps, total: maxSteps });
    await hooks.onStep?.(rec);
  }
  rec.status = "max_steps";
  sync();
  return rec;
}

/** One tool call of the model, its result as the text handed back to it; throws only when the caller's key is gone (the task ends). */
async function runCall(call: ChatToolCall, byName: Map<string, Tool>, runOne: (tool: Tool, args: unknown) => ReturnType<SubCalls["run"]>, changed: Set<string>, rec: TaskRecord): Promise<{ content: string; held: boolean }> {
  const fail = (code: string, message: string, details: Record<string, unknown> = {}) => ({ content: JSON.stringify({ ok: false, error: { code, message, details } }), held: code === "NEEDS_APPROVAL" });
  const name = call?.function?.name;
  const tool = typeof name === "string" ? byName.get(name) : undefined;
  if (!tool) return fail("NOT_FOUND", `No tool named ${JSON.stringify(String(name ?? "")).slice(0, 80)} in this task. Tools: ${[...byName.keys()].join(", ")}.`);
  let args: unknown;
  try {
    args = JSON.parse(call.function.arguments || "{}");
  } catch {
    return fail("INVALID_ARGUMENT", `The arguments of ${tool.name} are not valid JSON (${String(call.function.arguments).slice(0, 100)}). Send one JSON object.`);
  }
  try {
    const r = await runOne(tool, args);
    if (r.call_id) rec.call_ids.push(r.call_id);
    const bashChanged = (r.data.result as { files_changed?: string[] } | undefined)?.files_changed;
    for (const p of bashChanged ?? []) changed.add(p);
    // Cut in the middle, as every door's output (the notes that say what to do next are at its end: read's page note, bash's write-back lines).
    return { content: truncateMiddle(r.output, MAX_TOOL_RESULT_BYTES).text, held: false };
  } catch (e) {
    const te = isToolError(e) ? e : toToolError(e);
    // A call that failed midway keeps what it wrote undoable (executeTool put its call_id in the details).
    if (typeof te.details.call_id === "string") rec.call_ids.push(te.details.call_id);
    if (te.code === "NEEDS_APPROVAL" && typeof te.details.pending_id === "string") rec.pending_ids.push(te.details.pending_id);
    if (te.details.refused_by === "key_gone") throw te; // the caller's key is gone: the task ends (failed, UNAUTHORIZED), no more model turns
    return fail(te.code, te.message, te.code === "NEEDS_APPROVAL" ? { pending_id: te.details.pending_id } : {});
  }
}

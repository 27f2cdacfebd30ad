/**
 * Tasks and input requests on the MCP 2026-07-28 door (lib/doors/mcp-2026.ts), over the call-task
 * layer every door shares (lib/run/tasks/: one durable record per task, no second store).
 * docs/mcp-and-providers.md "Tasks".
 *
 * The tasks extension (io.modelcontextprotocol/tasks, SEP-2663), declared in server/discover's
 * capabilities.extensions. The client declares it per request (its _meta envelope's capabilities);
 * the server decides per call:
 *   tools/call     bash and run_code run detached in the sandbox, task as a background subagent:
 *                  a CreateTaskResult (resultType "task") at once. A call the approval gate holds,
 *                  or an ask_user question, also becomes a task. Every other call answers its
 *                  CallToolResult as without the extension (no task record), unless it has not
 *                  ended within TASK_AFTER_MS (2 s) and the runtime has waitUntil (Workers): then it is
 *                  answered as a working task and goes on; its end is the task's result.
 *   tasks/get      the task now (a DetailedTask): working (statusMessage; _meta "toolshed/output":
 *                  the last 8,000 characters of a run's output, "toolshed/progress": output events
 *                  seen); input_required with inputRequests (ask_user's question as a form
 *                  elicitation, keyed by its pending call id); completed with `result` (a tool's error
 *                  too: an isError result, never "failed", which the extension keeps for JSON-RPC
 *                  errors); cancelled.
 *   tasks/update   inputResponses: the answer to the question (once; other keys are ignored).
 *   tasks/cancel   kills the sandbox run (nothing is written back), stops the subagent (after its step
 *                  under way) or closes the held call; an empty ack.
 * An approval is never put to the client (docs/mcp-pending.md: the calling key may not approve its
 * own calls): the task stays "working", its statusMessage naming the pending call a human answers
 * through the pending-call API; then it resumes. Unknown ids, and ids of another key, workspace or
 * tenant: -32602, the same answer. tasks/* from a client that did not declare the extension: -32021.
 *
 * Input requests without a task (multi round-trip requests): a client that declares form
 * elicitation but not the extension gets ask_user's question as an input_required result
 * (requestState: the pending call id); its retry carries the answer (inputResponses) and gets the
 * tool's result. A client with neither gets NEEDS_INPUT / NEEDS_APPROVAL and pending_result, as before.
 */
import { z } from "@hono/zod-openapi";
import { inputRequired, MissingRequiredClientCapabilityError, ProtocolError, ProtocolErrorCode, type Server, type ServerContext } from "@modelcontextprotocol/server";
import { toToolError } from "../contract/errors.js";
import { openWorkspace } from "../run/run-tool.js";
import { answerCallTask, askClient, callTaskInput, pendingAnswerOf, questionOutcome, type CallTaskInput } from "../run/tasks/input.js";
import { errorOutcome } from "../run/tasks/advance.js";
import { callOrStartTask, cancelCallTask, getCallTask, taskScopeOf } from "../run/tasks/run.js";
import type { CallTaskRecord } from "../run/tasks/store.js";
import { answerAsk, elicitAnswer, questionForm } from "./mcp-ask.js";
import { callToolResult, TASK_POLL_MS } from "./mcp-tasks.js";
import { callMcpTool, type McpCall, type McpCallChannel } from "./mcp-tools.js";
import { refusalAsRpcError } from "./json-rpc.js";

export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

/** A call not ended within this is answered as a task (where the runtime has waitUntil; deps.mcp.taskAfterMs overrides). */
export const TASK_AFTER_MS = 2000;

type Caps = { extensions?: Record<string, unknown>; elicitation?: Record<string, unknown> };

/** The capabilities the request declares (2026-07-28: per request, in its _meta envelope). */
const capsOf = (ctx: ServerContext): Caps => ((ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.["io.modelcontextprotocol/clientCapabilities"] ?? {}) as Caps;
const declaresTasks = (caps: Caps) => caps.extensions?.[TASKS_EXTENSION] !== undefined;
/** Form elicitation: an empty elicitation object means form mode; a client listing modes must list form. */
function answersForms(caps: Caps): boolean {
  const e = caps.elicitation;
  if (!e || typeof e !== "object") return false;
  return "form" in e ? e.form !== undefined : !("url" in e);
}

/** A refusal of the task layer as the protocol error both doors answer (./json-rpc.ts refusalAsRpcError; -32602 for an unknown task). */
function protocolError(e: unknown): ProtocolError {
  const r = refusalAsRpcError(e, "mcp 2026 tasks");
  return new ProtocolError(r.code, r.message, r.data);
}

const guarded = <T>(f: () => Promise<T>) => f().catch((e) => { throw e instanceof ProtocolError ? e : protocolError(e); });

/** The embedded elicitation request that puts a question to the client's user. */
const elicitation = (q: CallTaskInput & { kind: "question" }) => ({ method: "elicitation/create" as const, params: { mode: "form" as const, ...questionForm(q) } });

/** A task's status as the client sees it: input_required only while a question waits on this client; an approval's wait is work in progress. */
const shownStatus = (rec: CallTaskRecord, input: CallTaskInput | null) => (rec.status === "input_required" ? (input?.kind === "question" ? "input_required" : "working") : rec.status === "failed" ? "completed" : rec.status);

/** The Task fields of a record (CreateTaskResult, and the base of tasks/get's DetailedTask). */
function taskFields(rec: CallTaskRecord, input: CallTaskInput | null) {
  const waiting = rec.status === "input_required" && input?.kind === "approval" ? `Waiting for a human to answer pending call ${input.pending_id} (${input.tool}) in the app; the task resumes then.` : rec.status_message;
  return { taskId: rec.id, status: shownStatus(rec, input), ...(waiting ? { statusMessage: waiting } : {}), createdAt: rec.created_at, lastUpdatedAt: rec.updated_at, ttlMs: rec.ttl_ms, pollIntervalMs: TASK_POLL_MS };
}

/** tasks/get's DetailedTask: the status's own payload (result, inputRequests) and our partial output in _meta. */
function detailedTask(rec: CallTaskRecord, input: CallTaskInput | null): Record<string, unknown> {
  const meta = { ...(rec.output !== undefined ? { "toolshed/output": rec.output } : {}), ...(rec.progress !== undefined ? { "toolshed/progress": rec.progress } : {}), ...(rec.pending_id ? { "toolshed/pending_id": rec.pending_id } : {}) };
  const payload = rec.outcome && rec.status !== "cancelled" ? { result: asResult(rec.outcome) } : input?.kind === "question" ? { inputRequests: { [input.pending_id]: elicitation(input) } } : {};
  return { ...taskFields(rec, input), ...payload, ...(Object.keys(meta).length ? { _meta: meta } : {}) };
}

/** A call's outcome as this door's CallToolResult (the same shape as the 2025 door's). */
const asResult = (o: Parameters<typeof callToolResult>[0]) => callToolResult(o) as unknown as Record<string, unknown>;

const TaskIdParams = z.object({ taskId: z.string() });
/** tasks/update's inputResponses: the SDK lifts them out of every request's params into ctx.mcpReq.inputResponses (its multi round-trip channel). */
const UpdateParams = z.object({ taskId: z.string(), inputResponses: z.record(z.string(), z.unknown()).optional() });

/** tasks/get, tasks/update and tasks/cancel for this request's caller. */
export function registerTasks2026(server: Server, call: McpCall): void {
  const s = taskScopeOf(call);
  const needsExtension = (ctx: ServerContext) => {
    if (!declaresTasks(capsOf(ctx))) throw new MissingRequiredClientCapabilityError({ requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } }, `Missing required client capability: declare the ${TASKS_EXTENSION} extension in the request's capabilities to use tasks.`);
  };
  const now = async (id: string) => {
    const rec = await getCallTask(s, id);
    return { rec, input: await callTaskInput(s, rec) };
  };
  server.setRequestHandler("tasks/get", { params: TaskIdParams }, (p, ctx) =>
    guarded(async () => {
      needsExtension(ctx);
      const { rec, input } = await now(p.taskId);
      return detailedTask(rec, input) as never;
    }),
  );
  server.setRequestHandler("tasks/update", { params: UpdateParams }, (p, ctx) =>
    guarded(async () => {
      needsExtension(ctx);
      const { input } = await now(p.taskId);
      // Only the outstanding question's key is taken; the extension says to ignore any other.
      const responses = p.inputResponses ?? ctx.mcpReq.inputResponses ?? {};
      const raw = input?.kind === "question" ? responses[input.pending_id] : undefined;
      if (raw === undefined || input === null) return {} as never;
      const answer = elicitAnswer(raw);
      if (!answer) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `inputResponses["${input.pending_id}"] is not a valid elicitation result: {action: "accept", content: {answer: "..."}} or {action: "decline" | "cancel"}.`);
      await answerCallTask(s, p.taskId, input.pending_id, answer);
      return {} as never;
    }),
  );
  server.setRequestHandler("tasks/cancel", { params: TaskIdParams }, (p, ctx) =>
    guarded(async () => {
      needsExtension(ctx);
      await cancelCallTask(s, p.taskId).catch((e) => {
        // A task that already ended: nothing to cancel, and the extension acknowledges it all the same.
        if (toToolError(e).code !== "INVALID_ARGUMENT") throw e;
      });
      return {} as never;
    }),
  );
}

/**
 * tools/call on the 2026-07-28 door: as a task (extension declared, a detached tool or a call that
 * waits for input), as an input request (ask_user to a form-eliciting client), or as a plain call.
 */
export async function callTool2026(call: McpCall, name: string, args: unknown, ctx: ServerContext, channel: McpCallChannel): Promise<Record<string, unknown>> {
  const caps = capsOf(ctx);
  const tool = call.tools.find((t) => t.name === name);
  const responses = ctx.mcpReq.inputResponses;
  const state = ctx.mcpReq.requestState();
  if (tool?.name === "ask_user" && typeof state === "string" && responses) return answerRound(call, state, responses);
  if (!tool || !(declaresTasks(caps) || (answersForms(caps) && tool.name === "ask_user"))) return callMcpTool(call, name, args, channel);
  try {
    const ws = await openWorkspace(call);
    const scope = { ...call, ws, door: "mcp" as const, ...(channel.progress ? { progress: channel.progress } : {}) };
    if (!declaresTasks(caps)) {
      const q = await askClient(tool, args ?? {}, scope);
      return inputRequired({ inputRequests: { [q.pending_id]: elicitation(q) }, requestState: q.pending_id }) as never;
    }
    // Without a question put to it, a plain call that waits for input (held, or asked of the app) is a task too.
    const started = await callOrStartTask({ tool, args: args ?? {}, scope, ...(answersForms(caps) ? { clientAnswers: true } : {}) }, { taskAfterMs: call.deps.mcp?.taskAfterMs ?? TASK_AFTER_MS, ...(call.deps.mcp?.lateCallLostMs ? { lostAfterMs: call.deps.mcp.lateCallLostMs } : {}) });
    if ("done" in started) return asResult(started.done);
    const input = await callTaskInput(taskScopeOf(call), started.task);
    return { resultType: "task", ...taskFields(started.task, input) };
  } catch (e) {
    return asResult(errorOutcome(e));
  }
}

/** A retried ask_user carrying the answer to its question (requestState: the pending call): the answer taken once, then the tool's result. */
async function answerRound(call: McpCall, pendingId: string, responses: Record<string, unknown>): Promise<Record<string, unknown>> {
  try {
    const answer = elicitAnswer(responses[pendingId]);
    if (!answer) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `inputResponses["${pendingId.slice(0, 40)}"] is not a valid elicitation result: {action: "accept", content: {answer: "..."}} or {action: "decline" | "cancel"}.`);
    // A retry sent twice finds its answer taken already: the outcome below is the question's all the same.
    await answerAsk(call.deps, call.auth, call.wsId, pendingId, pendingAnswerOf(answer)).catch((e) => {
      if (toToolError(e).code !== "CONFLICT") throw e;
    });
    const r = await questionOutcome(taskScopeOf(call), pendingId);
    return asResult({ ok: true, ...r });
  } catch (e) {
    if (e instanceof ProtocolError) throw e;
    return asResult(errorOutcome(e));
  }
}

/** tasks is an extension of this door's server: server/discover names it. */
export const TASKS_CAPABILITY_2026 = { extensions: { [TASKS_EXTENSION]: {} } };

/**
 * MCP tasks (revision 2025-11-25) over the call-task layer (lib/run/tasks/run.ts), on the stateless
 * door (lib/doors/mcp.ts): a tools/call with params.task answers CreateTaskResult; tasks/get,
 * tasks/result, tasks/list and tasks/cancel read the task's durable record, whatever isolate or
 * request started it. docs/mcp-and-providers.md "Tasks".
 *
 *   tools/call + task  the call runs as a task: bash in the background (the answer comes at once), the
 *                      rest to its end or to the held call / question it waits on (input_required).
 *   tasks/get          the task now; _meta["toolshed/output"]: the last 8,000 characters of a run's output
 *                      so far, _meta["toolshed/progress"]: output events seen, _meta["toolshed/pending_id"]: the held call.
 *   tasks/result       waits until the task ends (up to RESULT_WAIT_MS a request) and answers the call's
 *                      CallToolResult; answered as SSE, each change of the task's status meanwhile goes
 *                      out as notifications/tasks/status. On input_required for ask_user, a client that declared form
 *                      elicitation gets the question as elicitation/create on this request's stream
 *                      (lib/doors/mcp-ask.ts takes its answer); an approval waits for the human's answer
 *                      through the pending-call API (never taken from the client: docs/mcp-pending.md).
 *   tasks/cancel       kills the run (nothing written back), stops the subagent or closes the held call; a terminal task: -32602.
 *   tasks/list         the calling key's tasks in this workspace, newest first, a page of at most 100 (store.ts
 *                      LIST_PAGE) and nextCursor while more may follow; its cost is the page's (1 LIST, 1 GET a task).
 * An unknown task id, or one of another key, workspace or tenant: -32602 "not found", the same answer; a cursor not given by tasks/list: -32602.
 * A tool the key may not use: -32602 PERMISSION_DENIED before any task exists (startCallTask: nothing stored).
 */
import { CancelTaskRequestSchema, GetTaskPayloadRequestSchema, GetTaskRequestSchema, ListTasksRequestSchema, McpError, type CallToolResult, type ServerRequest, type Task } from "@modelcontextprotocol/sdk/types.js";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { ToolError } from "../shared/errors.js";
import type { Tool } from "../contract/tool.js";
import { openWorkspace, type CallScope } from "../run/run-tool.js";
import { callTaskInput } from "../run/tasks/input.js";
import { whileKeyStands } from "../run/key-watch.js";
import { cancelCallTask, getCallTask, startCallTask, taskScopeOf, waitCallTask } from "../run/tasks/run.js";
import { listCallTasks, type CallTaskOutcome, type CallTaskRecord } from "../run/tasks/store.js";
import { elicitationRequest } from "./mcp-ask.js";
import { refusalAsRpcError } from "./json-rpc.js";

/** What the server declares: tools/call as tasks, tasks/list and tasks/cancel. */
export const TASKS_CAPABILITY = { list: {}, cancel: {}, requests: { tools: { call: {} } } };
/** How often a client is asked to poll tasks/get. */
export const TASK_POLL_MS = 1000;
/** The longest one tasks/result request waits (a Worker's request, a Lambda's invocation); the client asks again. */
export const RESULT_WAIT_MS = 5 * 60 * 1000;
const RELATED_TASK = "io.modelcontextprotocol/related-task";

/** A task record as an MCP Task. */
export function mcpTask(rec: CallTaskRecord): Task {
  return { taskId: rec.id, status: rec.status, ttl: rec.ttl_ms, createdAt: rec.created_at, lastUpdatedAt: rec.updated_at, pollInterval: TASK_POLL_MS, ...(rec.status_message ? { statusMessage: rec.status_message } : {}) };
}

/** A tool's outcome as a CallToolResult: the door's one shape for results and for errors (a tool's error is a result with isError, never a protocol error). */
export function callToolResult(o: CallTaskOutcome & { usage?: unknown }): CallToolResult {
  if (!o.ok) return { isError: true, content: [{ type: "text", text: `${o.code}: ${o.message}` }], _meta: { "toolshed/error": { code: o.code, message: o.message, details: o.details } } };
  return { content: [{ type: "text", text: o.output }], structuredContent: o.data, _meta: { ...(o.usage ? { "toolshed/usage": o.usage } : {}), "toolshed/title": o.title, ...(o.call_id ? { "toolshed/call_id": o.call_id } : {}) } };
}

/** A refusal of the task layer as the protocol error both doors answer (./json-rpc.ts refusalAsRpcError). */
function protocolError(e: unknown): McpError {
  const r = refusalAsRpcError(e, "mcp tasks");
  return new McpError(r.code, r.message, r.data);
}

const guarded = <T>(f: () => Promise<T>) => f().catch((e) => { throw e instanceof McpError ? e : protocolError(e); });

/** What a tools/call as a task needs from the door. */
export interface McpTaskCall {
  tool: Tool;
  args: unknown;
  scope: CallScope;
  /** params.task.ttl, as the client asked. */
  ttl?: number;
  /** The client declared form elicitation. */
  asks?: boolean;
}

/** tools/call with params.task: the call as a task, answered with CreateTaskResult; a refusal before the task exists is a protocol error. */
export function startMcpTask(c: McpTaskCall): Promise<{ task: Task }> {
  return guarded(async () => {
    const scope = { ...c.scope, ws: await openWorkspace(c.scope) };
    const rec = await startCallTask({ tool: c.tool, args: c.args, scope, ...(c.ttl !== undefined ? { ttlMs: c.ttl } : {}), ...(c.asks ? { clientAnswers: true } : {}) });
    return { task: mcpTask(rec) };
  });
}

/** The tasks/* handlers of one server (one request) for the caller's scope. */
export function registerMcpTasks(server: Server, scope: CallScope, asks: boolean): void {
  const s = taskScopeOf(scope);
  server.setRequestHandler(GetTaskRequestSchema, (req) =>
    guarded(async () => {
      const rec = await getCallTask(s, req.params.taskId);
      const meta = { ...(rec.output !== undefined ? { "toolshed/output": rec.output } : {}), ...(rec.progress !== undefined ? { "toolshed/progress": rec.progress } : {}), ...(rec.pending_id ? { "toolshed/pending_id": rec.pending_id } : {}) };
      return { ...mcpTask(rec), _meta: meta } as never;
    }),
  );
  server.setRequestHandler(ListTasksRequestSchema, (req) =>
    guarded(async () => {
      const cursor = req.params?.cursor;
      const page = await listCallTasks(s, cursor !== undefined ? { cursor } : {});
      return { tasks: page.tasks.map(mcpTask), ...(page.next ? { nextCursor: page.next } : {}) } as never;
    }),
  );
  server.setRequestHandler(CancelTaskRequestSchema, (req) => guarded(async () => mcpTask(await cancelCallTask(s, req.params.taskId)) as never));
  server.setRequestHandler(GetTaskPayloadRequestSchema, (req, extra) =>
    guarded(async () => {
      const id = req.params.taskId;
      // ask_user's question goes out on this request's stream, to a client that answers questions; its answer comes in another POST.
      const onInput = asks
        ? async (rec: CallTaskRecord) => {
            const input = await callTaskInput(s, rec);
            if (input?.kind !== "question") return; // an approval waits for the human, in the app
            const ask = elicitationRequest({ pending_id: input.pending_id, question: input.question, ...(input.options ? { options: input.options } : {}) });
            const params = { ...ask.params, _meta: { ...(ask.params?._meta as object), [RELATED_TASK]: { taskId: id } } };
            await server.transport!.send({ ...ask, params } as ServerRequest & { jsonrpc: "2.0"; id: string }, { relatedRequestId: extra.requestId }).catch(() => {});
          }
        : undefined;
      // Each change of status while it waits goes out as notifications/tasks/status on this request's stream.
      const onStatus = (rec: CallTaskRecord) => extra.sendNotification({ method: "notifications/tasks/status", params: { ...mcpTask(rec), _meta: { [RELATED_TASK]: { taskId: id } } } } as never).catch(() => {});
      // A wait of minutes: the key is asked again while it goes on (revoked or expired: key_gone, lib/run/key-watch.ts).
      const rec = await whileKeyStands(scope.deps, scope.auth, "this tasks/result request", extra.signal, (signal) => waitCallTask(s, id, { until: Date.now() + RESULT_WAIT_MS, ...(signal ? { signal } : {}), onStatus, ...(onInput ? { onInput } : {}) }));
      if (!rec.outcome) throw new ToolError("CONFLICT", `Task ${id} is still ${rec.status}${rec.status_message ? ` (${rec.status_message})` : ""}; call tasks/result again to keep waiting, or tasks/get to look.`, { task_id: id, status: rec.status });
      const r = callToolResult(rec.outcome);
      return { ...r, _meta: { ...r._meta, [RELATED_TASK]: { taskId: id } } } as never;
    }),
  );
}

/** Whether a JSON-RPC body (one message or a batch) waits on a task's result (answered as SSE: status notifications, and questions for a client that answers them). */
export const hasTaskWait = (body: unknown) => (Array.isArray(body) ? body : [body]).some((m) => (m as { method?: unknown } | null)?.method === "tasks/result");

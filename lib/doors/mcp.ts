/**
 * MCP 2025-era door (2025-11-25, 2025-06-18 and older revisions) over Streamable HTTP:
 * POST /v1/workspaces/{ws}/mcp, the requests that carry no 2026-07-28 `_meta` envelope
 * (lib/doors/mcp-door.ts dispatches; the 2026-07-28 door is lib/doors/mcp-2026.ts). Built on the
 * official SDK 1.x (low-level Server + WebStandardStreamableHTTPServerTransport, which runs on
 * Workers and Lambda alike); stateless: a server and a transport per request, no session id, JSON
 * responses. Protocol versions: whatever the SDK negotiates (2025-11-25, 2025-06-18, 2025-03-26,
 * 2024-11-05, 2024-10-07 with SDK 1.32).
 *
 * tools/list and tools/call are the shared ones (lib/doors/mcp-tools.ts): the key's usable tools,
 * one call through runTool, a tool's error as an `isError: true` result.
 *
 * The route's guard checks the key and binds {ws} (another tenant's workspace: 404 before any
 * JSON-RPC). A present `Origin` must be this server's own origin or one of deps.mcp.allowedOrigins
 * (DNS rebinding, as the spec asks). With _meta.progressToken, what the tool reports through ctx.progress is sent as notifications/progress.
 * A client that declares form elicitation gets ask_user's question as elicitation/create and the
 * call completes with the answer (lib/doors/mcp-ask.ts); every other held call (and ask_user for
 * other clients) answers NEEDS_* and the model reads the outcome with the pending_result tool.
 * A tools/call with params.task runs as a task (every tool declares execution.taskSupport "optional"),
 * and tasks/get|result|list|cancel follow it: lib/doors/mcp-tasks.ts. Without params.task, as above.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { AuthInfo } from "../contract/caller.js";
import { ToolError } from "../shared/errors.js";
import type { HumanQuestion, Tool } from "../contract/tool.js";
import { API_VERSION } from "../run/version.js";
import { askAnswersIn, askSessionFor, clientAnswersAsks, elicitationRequest, hasToolCall, takeAskAnswers } from "./mcp-ask.js";
import { toolsForTenant } from "../tools/custom/tool.js";
import { callMcpTool, listMcpTools, mcpProgress, unknownMcpTool, type McpCall, type McpDeps } from "./mcp-tools.js";
import { JSON_RPC, jsonRpcError, malformedToolCall, originRefused } from "./json-rpc.js";
import { hasTaskWait, registerMcpTasks, startMcpTask, TASKS_CAPABILITY } from "./mcp-tasks.js";

/** Schemas are validated by our own argument parser (lib/contract/tool-args.ts); the SDK's validator is only used by its own elicitInput, which this server does not call (lib/doors/mcp-ask.ts checks the answers). */
const noSchemaValidator = {
  getValidator() {
    throw new Error("This server does not validate JSON Schemas through the MCP SDK.");
  },
};

/** One POST to the endpoint: who calls, on which workspace and session. */
export interface McpRequest {
  deps: McpDeps;
  /** The built-in tools (the tenant's custom tools join them here). */
  tools: readonly Tool[];
  auth: AuthInfo;
  wsId: string;
  /** A session id already checked with checkSessionId (X-Session-Id, default "default"). */
  session: string;
  /** The runtime's waitUntil, looked up when a server is built (Workers): index upkeep and the usage record after the answer. */
  background: () => ((p: Promise<unknown>) => void) | undefined;
}

/** One 2025-era MCP server for one request: the key's tools (lib/doors/mcp-tools.ts), tasks (lib/doors/mcp-tasks.ts), ask_user's question to a client that answers them. */
export function buildMcpServer(call: McpCall & { asks?: boolean; noTasks?: boolean }): Server {
  // Tasks are 2025-11-25's: an initialize that asks for an older revision is not offered them (noTasks).
  const server = new Server({ name: "toolshed", version: API_VERSION }, { capabilities: { tools: {}, ...(call.noTasks ? {} : { tasks: TASKS_CAPABILITY }) }, jsonSchemaValidator: noSchemaValidator as never });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: (await listMcpTools(call)).map((t) => ({ ...t, execution: { taskSupport: "optional" } })) as never }));
  if (!call.noTasks) registerMcpTasks(server, call, call.asks === true);
  server.setRequestHandler(CallToolRequestSchema, async (req, extra): Promise<CallToolResult> => {
    const task = req.params.task;
    if (task) {
      // As a task (lib/doors/mcp-tasks.ts): a refusal before the task exists is a protocol error, the task's own outcome a result of tasks/result.
      const tool = call.tools.find((t) => t.name === req.params.name);
      if (!tool) throw new McpError(ErrorCode.InvalidParams, (await unknownMcpTool(call, req.params.name)).message);
      return (await startMcpTask({ tool, args: req.params.arguments ?? {}, scope: { ...call, door: "mcp" }, ...(task.ttl !== undefined ? { ttl: task.ttl } : {}), ...(call.asks ? { asks: true } : {}) })) as never;
    }
    const token = req.params._meta?.progressToken;
    // The question goes out on this call's own SSE stream; the client's answer comes back in another POST (lib/doors/mcp-ask.ts).
    const askHuman = call.asks ? async (q: HumanQuestion) => server.transport!.send(elicitationRequest(q), { relatedRequestId: extra.requestId }) : undefined;
    return (await callMcpTool(call, req.params.name, req.params.arguments, { ...(token !== undefined ? { progress: mcpProgress(token, extra.sendNotification) } : {}), ...(askHuman ? { askHuman } : {}) })) as CallToolResult;
  });
  return server;
}

/** The revision that brought tasks (lib/doors/mcp-tasks.ts). */
const TASKS_SINCE = "2025-11-25";

/** Whether a JSON-RPC body is an initialize asking for a revision older than tasks (revisions are dates: they sort as strings). */
function initializesBeforeTasks(body: unknown): boolean {
  const m = body as { method?: unknown; params?: { protocolVersion?: unknown } } | null;
  const v = m?.method === "initialize" ? m.params?.protocolVersion : undefined;
  return typeof v === "string" && v < TASKS_SINCE;
}

/** Whether a JSON-RPC body (one message or a batch) carries a progress token. */
function asksProgress(body: unknown): boolean {
  const msgs = Array.isArray(body) ? body : [body];
  return msgs.some((m) => (m as { params?: { _meta?: { progressToken?: unknown } } } | null)?.params?._meta?.progressToken !== undefined);
}

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/**
 * DNS rebinding: a present Origin must be one we trust; absent (a non-browser client) is fine.
 * Trusted: the operator's allow-list, the API's public URL (TOOLSHED_PUBLIC_URL), and a loopback
 * origin when the request itself came to a loopback name (local development; any port, as the
 * SDK's own localhost guard does). A rebound name (Host and Origin both evil.example) never passes,
 * though the two match each other. Refused: the JSON-RPC error to answer (lib/doors/json-rpc.ts
 * originRefused), before the body is read; else null.
 */
export function refusedOrigin(req: Request, allowed: readonly string[], publicUrl: string | undefined): Response | null {
  const origin = req.headers.get("origin");
  if (origin === null) return null;
  const publicOrigin = publicUrl ? safeOrigin(publicUrl) : null;
  if (allowed.includes(origin) || origin === publicOrigin || (isLoopback(hostnameOf(origin)) && isLoopback(hostnameOf(`http://${req.headers.get("host") ?? new URL(req.url).host}`)))) return null;
  return originRefused(new ToolError("PERMISSION_DENIED", `Origin ${origin.slice(0, 200)} may not call this MCP endpoint. Call it from a server-side client (no Origin header), or have the operator add the origin to the MCP allow-list (deps.mcp.allowedOrigins).`, { origin: origin.slice(0, 200) }));
}

const isLoopback = (hostname: string | null) => hostname !== null && LOOPBACK_HOSTS.has(hostname);

function hostnameOf(url: string): string | null {
  try {
    return new URL(url).hostname;
  } catch {
    return null;
  }
}

function safeOrigin(url: string): string | null {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

/**
 * One POST to the MCP endpoint, once its route has checked the key, bound the workspace, the origin
 * and the method (lib/api/routes/mcp.ts): the client's answers to this door's questions, or the
 * JSON-RPC request served by a server built for it. `body`: the request's JSON body, parsed by the
 * route (the transport reads nothing itself).
 */
export async function mcpResponse(req: Request, body: unknown, call: McpRequest): Promise<Response> {
  const { deps, auth, wsId } = call;
  // The client's answer to an ask_user question this door put to it: stored for the waiting call, whatever isolate holds it.
  const answers = askAnswersIn(body);
  if (answers) return takeAskAnswers(deps, auth, wsId, answers);
  const malformed = malformedToolCall(body);
  if (malformed) return jsonRpcError(200, JSON_RPC.invalidParams, malformed.message, { id: malformed.id });
  const asks = clientAnswersAsks(req);
  // Built-ins and this tenant's custom tools (lib/tools/custom/tool.ts, the one join).
  const background = call.background();
  const server = buildMcpServer({ deps, tools: await toolsForTenant(deps, call.tools, auth.tenant), auth, wsId, session: call.session, signal: req.signal, asks, ...(background ? { background } : {}), ...(initializesBeforeTasks(body) ? { noTasks: true } : {}) });
  // JSON responses, except for a call that asked for progress, a wait on a task's result (status
  // notifications), or a call that may put a question to a client that answers them: that one
  // answers as SSE so the notifications and questions can go out.
  const streamed = asksProgress(body) || hasTaskWait(body) || (asks && hasToolCall(body));
  // No session, except the id that tells later requests this client answers questions (initialize only).
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: askSessionFor(body), enableJsonResponse: !streamed });
  await server.connect(transport);
  // A streamed answer is still being written when handleRequest returns: the transport ends its
  // stream once the response is sent, and the server is closed then (closing it here would cut it).
  if (streamed) {
    const res = await transport.handleRequest(req, { parsedBody: body });
    transport.onclose = undefined;
    return res;
  }
  try {
    return await transport.handleRequest(req, { parsedBody: body });
  } finally {
    await server.close();
  }
}

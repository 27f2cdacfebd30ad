/**
 * What every MCP revision's door does with tools, whatever SDK speaks the wire: the tool list a key
 * may use on a workspace, one tools/call through the run path (runTool, lib/run/run-tool.ts) shaped
 * as an MCP CallToolResult, and ctx.progress as notifications/progress. The 2025 door
 * (lib/doors/mcp.ts, SDK 1.x) and the 2026-07-28 door (lib/doors/mcp-2026.ts, SDK 2.x) only adapt
 * these to their SDK's handlers: no tool logic lives in either.
 */
import type { AuthInfo } from "../contract/caller.js";
import type { RunDeps } from "../run/deps.js";
import { ToolError } from "../shared/errors.js";
import { toToolError } from "../contract/errors.js";
import { unknownToolError, usableTools } from "../run/toolset.js";
import { readMeta } from "../layers/open.js";
import { openWorkspace, runTool } from "../run/run-tool.js";
import type { HumanQuestion, ProgressEvent, Tool } from "../contract/tool.js";
import { mcpTool } from "../contract/formats.js";
import type { CustomToolDeps } from "../tools/custom/tool.js";

/** What the MCP door reads of the app's wiring: the run path's, the tenant's custom tools, its own allow-list. */
export interface McpDeps extends RunDeps, CustomToolDeps {
  /**
   * allowedOrigins: origins (besides the API's own) a browser may call it from (DNS rebinding guard).
   * taskAfterMs: on 2026-07-28, a call to a client that declared tasks not ended within this is answered as a task, where the runtime has waitUntil (default TASK_AFTER_MS, lib/doors/mcp-2026-tasks.ts; Infinity: never).
   * lateCallLostMs: how long after its task was made such a call must have ended, as far as the runtime keeps waitUntil work (default LATE_CALL_LOST_MS, Workers; Lambda: its function's timeout, lib/runtime/aws.ts).
   */
  mcp?: { allowedOrigins?: string[]; taskAfterMs?: number; lateCallLostMs?: number };
}

/** One request's caller, as every revision's door sees it. */
export interface McpCall {
  deps: McpDeps;
  /** The built-in tools and this tenant's custom tools (lib/tools/custom/tool.ts toolsForTenant). */
  tools: readonly Tool[];
  auth: AuthInfo;
  wsId: string;
  session: string;
  signal: AbortSignal;
  /** The runtime's waitUntil (Workers): index upkeep and the usage record after the answer, as on the tool route. */
  background?: (p: Promise<unknown>) => void;
}

/** A tools/call result, in the shape both SDKs' CallToolResult accept. */
export interface McpToolResult {
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: true;
  _meta: Record<string, unknown>;
  [key: string]: unknown;
}

/** How a door delivers what runs during one call: progress notifications, ask_user's question. */
export interface McpCallChannel {
  progress?: (e: ProgressEvent) => void;
  askHuman?: (q: HumanQuestion) => Promise<void>;
}

/** The workspace's tool list, which narrows the key's (one meta.json read). */
const workspaceTools = async (call: McpCall) => (await readMeta(call.deps.storage, call.auth.tenant, call.wsId))?.meta.tools;

/**
 * tools/list: the tools this key may use on this workspace (lib/run/toolset.ts usableTools), as MCP
 * Tool objects (lib/contract/formats.ts mcpTool). The order is the catalog's (built-ins, then the
 * tenant's custom tools), never the caller's: two keys see the same sequence, minus what their
 * scopes, preset or the workspace's list leave out. A failure is thrown as a ToolError: the SDKs
 * answer a handler's error with its message, and a storage error's names a storage key (the tenant's).
 */
export async function listMcpTools(call: McpCall) {
  try {
    return usableTools(call.tools, call.auth, await workspaceTools(call)).map(mcpTool);
  } catch (err) {
    throw loggedToolError(err, "mcp tools/list");
  }
}

/** NOT_FOUND for a tool name no tool has, in the words of the tool route (lib/run/toolset.ts unknownToolError). */
export async function unknownMcpTool(call: McpCall, name: string): Promise<ToolError> {
  return unknownToolError(name, call.tools, call.auth, await workspaceTools(call), "tools/list lists them with their arguments");
}

/** An error as the ToolError a client may see: its own when it is one, else INTERNAL (the original in the log only). */
function loggedToolError(err: unknown, where: string): ToolError {
  const e = toToolError(err);
  if (e.code === "INTERNAL") console.error(`internal error (${where})`, err instanceof Error ? err.stack ?? err.message : String(err));
  return e;
}

/**
 * tools/call through runTool, the path every door takes: scope, arguments, the tool, the output
 * cut, one usage record. A tool's error is an `isError: true` result naming its code, never a
 * protocol error. A call that changed files carries its undo id in _meta["toolshed/call_id"]
 * (POST /v1/workspaces/{ws}/undo {call_id}). _meta keys: prefix "toolshed/" (one label and a
 * slash), a valid name per the spec's _meta key format.
 */
export async function callMcpTool(call: McpCall, name: string, args: unknown, channel: McpCallChannel = {}): Promise<McpToolResult> {
  const tool = call.tools.find((t) => t.name === name);
  try {
    if (!tool) throw await unknownMcpTool(call, name);
    const ws = await openWorkspace(call);
    const r = await runTool(tool, args ?? {}, { ...call, ws, door: "mcp", ...(channel.progress ? { progress: channel.progress } : {}), ...(channel.askHuman ? { askHuman: channel.askHuman } : {}) });
    return { content: [{ type: "text", text: r.output }], structuredContent: r.data, _meta: { "toolshed/usage": r.usage, "toolshed/title": r.title, ...(r.call_id ? { "toolshed/call_id": r.call_id } : {}) } };
  } catch (err) {
    const e = loggedToolError(err, "mcp");
    return { isError: true, content: [{ type: "text", text: `${e.code}: ${e.message}` }], _meta: { "toolshed/error": { code: e.code, message: e.message, details: e.details } } };
  }
}

/** A notifications/progress message, as both SDKs send it. */
export interface ProgressNotification {
  method: "notifications/progress";
  params: { progressToken: string | number; progress: number; total?: number; message: string };
}

/**
 * ctx.progress as MCP notifications/progress (the client sent _meta.progressToken). progress must
 * increase: an output event adds 1; a status event's `done` is the progress when it advances it, and a
 * status event that advances nothing (no done: grep's listing; or the same done) adds a thousandth, so
 * later counts still land on their own number and never pass their total. total/message from a status
 * event, the text of an output event as message.
 */
export function mcpProgress(token: string | number, send: (n: ProgressNotification) => Promise<void>): (e: ProgressEvent) => void {
  let n = 0;
  return (e) => {
    if (e.kind === "output") n += 1;
    else if (e.done !== undefined && e.done > n) n = e.done;
    else n = Math.round(n * 1000 + 1) / 1000;
    const message = e.kind === "output" ? e.text : e.message;
    const total = e.kind === "status" ? e.total : undefined;
    send({ method: "notifications/progress", params: { progressToken: token, progress: n, ...(total !== undefined ? { total } : {}), message } }).catch(() => {});
  };
}

/**
 * MCP 2026-07-28 door: the requests to POST /v1/workspaces/{ws}/mcp that carry the revision's
 * per-request `_meta` envelope (lib/doors/mcp-door.ts dispatches; the 2025-era door is
 * lib/doors/mcp.ts). Built on the official SDK 2.x (`@modelcontextprotocol/server`:
 * createMcpHandler + the low-level Server), which bundles for Workers and runs on Lambda alike.
 *
 * What the revision asks of a server, and who does it here:
 *   no initialize, no session   the SDK: every request carries protocol version, client info and
 *                               capabilities in `_meta`; a server is built per request
 *   server/discover             the SDK answers it from this server's info and capabilities
 *   Mcp-Method / Mcp-Name       the SDK checks the headers against the body (-32020 on a mismatch)
 *   resultType, ttlMs/cacheScope the SDK's 2026 codec stamps them; the cache hints are ours (below)
 *   tools/list, tools/call      the shared ones (lib/doors/mcp-tools.ts), as on the 2025 door
 *
 * Cancel: the revision has no notifications/cancelled for a request on another connection; the
 * client closes the request's stream and the call's signal (the HTTP request's, and the SDK's)
 * aborts the run (runTool's `signal`: a sandbox run is killed).
 *
 * Tasks (the io.modelcontextprotocol/tasks extension: tasks/get, tasks/update, tasks/cancel) and
 * input requests (ask_user's question as an input_required result or a task's inputRequests;
 * approvals wait for the human through the pending-call API): lib/doors/mcp-2026-tasks.ts, over
 * the call-task layer the 2025 door uses too (lib/run/tasks/). A client that declares neither the
 * extension nor form elicitation gets NEEDS_* and reads the outcome with pending_result.
 */
import { createMcpHandler, Server } from "@modelcontextprotocol/server";
import type { CallToolResult, ListToolsResult } from "@modelcontextprotocol/server";
import { API_VERSION } from "../run/version.js";
import { listMcpTools, mcpProgress, type McpCall } from "./mcp-tools.js";
import { callTool2026, registerTasks2026, TASKS_CAPABILITY_2026 } from "./mcp-2026-tasks.js";

/** The revisions this door serves (the 2025 ones are the 1.x door's). */
export const MCP_2026_VERSIONS = ["2026-07-28"] as const;

/**
 * How long a client may keep a tools/list: a minute, for this caller only (`private`: the list
 * depends on the key's scopes and preset). A custom tool added or a workspace's tool list changed
 * reaches a caching client within that minute; this stateless door sends no list_changed.
 */
const TOOLS_LIST_TTL_MS = 60_000;
/** server/discover names this server's revisions and capabilities: they change with a deploy. */
const DISCOVER_TTL_MS = 3_600_000;

/** Our argument parser validates (lib/contract/tool-args.ts), and ask_user's answer is checked by us (lib/doors/mcp-ask.ts elicitAnswer); the SDK never needs a JSON Schema validator here. */
const noSchemaValidator = {
  getValidator(): never {
    throw new Error("This server does not validate JSON Schemas through the MCP SDK.");
  },
};

/** One 2026-07-28 server for one request: the key's tools through the shared tool handlers. */
export function buildMcp2026Server(call: McpCall): Server {
  const server = new Server(
    { name: "toolshed", version: API_VERSION },
    {
      capabilities: { tools: {}, ...TASKS_CAPABILITY_2026 },
      jsonSchemaValidator: noSchemaValidator,
      cacheHints: { "tools/list": { ttlMs: TOOLS_LIST_TTL_MS, cacheScope: "private" }, "server/discover": { ttlMs: DISCOVER_TTL_MS, cacheScope: "private" } },
    },
  );
  // mcpTool's JSON Schemas are objects with `type: "object"`; the SDK's type cannot see that through inputJsonSchema.
  server.setRequestHandler("tools/list", async () => ({ tools: (await listMcpTools(call)) as ListToolsResult["tools"] }));
  server.setRequestHandler("tools/call", async (req, ctx) => {
    const token = ctx.mcpReq._meta?.progressToken;
    const signal = AbortSignal.any([call.signal, ctx.mcpReq.signal]);
    const progress = token !== undefined ? mcpProgress(token, (n) => ctx.mcpReq.notify(n)) : undefined;
    return (await callTool2026({ ...call, signal }, req.params.name, req.params.arguments, ctx, progress ? { progress } : {})) as CallToolResult;
  });
  registerTasks2026(server, call);
  return server;
}

/**
 * One 2026-07-28 request, once the route has checked the key, bound the workspace and the origin:
 * the SDK's handler (strict: 2025-era requests never reach it) with a server built for it. JSON
 * answers, upgraded to SSE when a call sends progress before its result. `body`: the request's
 * JSON body, parsed by the route (the SDK reads nothing itself).
 */
export async function mcp2026Response(req: Request, body: unknown, call: McpCall): Promise<Response> {
  const handler = createMcpHandler(() => buildMcp2026Server(call), {
    legacy: "reject",
    onerror: (err) => console.error("mcp 2026-07-28 door:", err.message),
  });
  return handler.fetch(req, { parsedBody: body });
}

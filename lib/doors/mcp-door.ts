/**
 * The one MCP endpoint of a workspace, POST /v1/workspaces/{ws}/mcp (its route:
 * lib/api/routes/mcp.ts): each request goes to the door of the revision it carries. A request with
 * the 2026-07-28 `_meta` envelope (or its MCP-Protocol-Version header) goes to the 2026-07-28 door
 * (lib/doors/mcp-2026.ts, SDK 2.x); one without it (initialize and what follows it, a client's
 * answer to an elicitation) to the 2025-era door (lib/doors/mcp.ts, SDK 1.x), which negotiates
 * 2025-11-25, 2025-06-18 and older. The SDK's own classifier decides (isLegacyRequest, the step
 * its createMcpHandler routes with), so the two can never disagree. Both doors list and call tools
 * through lib/doors/mcp-tools.ts. `body` is the request's JSON body, read once by the route
 * (lib/api/routes/mcp-body.ts): the classifier, the doors and the SDKs take it, never the stream.
 */
import { isLegacyRequest } from "@modelcontextprotocol/server";
import { toolsForTenant } from "../tools/custom/tool.js";
import { mcp2026Response } from "./mcp-2026.js";
import { mcpResponse, type McpRequest } from "./mcp.js";

export async function mcpDoorResponse(req: Request, body: unknown, call: McpRequest): Promise<Response> {
  if (await isLegacyRequest(req, body)) return mcpResponse(req, body, call);
  const background = call.background();
  // Built-ins and this tenant's custom tools (lib/tools/custom/tool.ts, the one join).
  const tools = await toolsForTenant(call.deps, call.tools, call.auth.tenant);
  return mcp2026Response(req, body, { deps: call.deps, tools, auth: call.auth, wsId: call.wsId, session: call.session, signal: req.signal, ...(background ? { background } : {}) });
}

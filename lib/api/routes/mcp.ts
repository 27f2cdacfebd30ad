/**
 * POST /v1/workspaces/{ws}/mcp: the route of the MCP doors (lib/doors/mcp-door.ts picks the
 * 2026-07-28 or the 2025-era one by what the request carries). Its access (a tenant key, any
 * scope: every tool call checks its own; the workspace bound by the guard), the origin check, the
 * method (stateless: POST only), the session id, the body (read once: mcp-body.ts; the doors and
 * the SDKs take the parsed value), and one call of calls_per_minute for each request of a
 * JSON-RPC batch past its first; the doors do the rest.
 */
import type { AppDeps } from "../deps.js";
import type { Tool } from "../../contract/tool.js";
import { refusedOrigin } from "../../doors/mcp.js";
import { mcpDoorResponse } from "../../doors/mcp-door.js";
import { jsonRpcError, JSON_RPC, limitRefusalAsRpc, requestsIn } from "../../doors/json-rpc.js";
import { isToolError } from "../../shared/errors.js";
import { takeCall } from "../auth/rate-limit.js";
import { checkSessionId } from "../../layout/paths.js";
import { addRoute } from "./access.js";
import { backgroundOf, newApp } from "./common.js";
import { mcpBody } from "./mcp-body.js";

const MCP_PATH = "/v1/workspaces/:ws/mcp";

export function mcpApp(deps: AppDeps, tools: readonly Tool[]) {
  const app = newApp();
  // calls_per_minute's refusal (the guard's, before the handler, or a batch's further requests') is answered as MCP answers
  // errors: a JSON-RPC error with the request's id, HTTP 429 and Retry-After kept (the headers the guard set stay on c.res).
  // Before (2026-12-02) it was the HTTP routes' envelope, which no MCP client matches to its request.
  // Registered for POST only, the method the guarded route below serves it with (its policy covers this handler too).
  app.on("POST", MCP_PATH, async (c, next) => {
    await next();
    const e = c.error;
    if (!isToolError(e) || e.code !== "RATE_LIMITED") return;
    const body = await mcpBody(c);
    c.res = limitRefusalAsRpc(e, "value" in body ? body.value : undefined);
  });
  addRoute(
    app, deps,
    {
      method: ["post", "get", "delete"],
      path: MCP_PATH,
      access: { auth: "tenant", scope: "any", workspace: true, runsTools: true },
      undocumented: "MCP Streamable HTTP (JSON-RPC 2.0), specified by the Model Context Protocol rather than by OpenAPI; every tool call checks its own scope",
    },
    async (c) => {
      const refused = refusedOrigin(c.req.raw, deps.mcp?.allowedOrigins ?? [], deps.syncUrl);
      if (refused) return refused;
      if (c.req.method !== "POST") {
        // Stateless: no server-initiated stream (GET) and no session to end (DELETE).
        return jsonRpcError(405, JSON_RPC.serverError, "Method not allowed: this MCP endpoint is stateless; send JSON-RPC requests with POST.", { headers: { allow: "POST" } });
      }
      const session = checkSessionId(c.req.header("x-session-id") ?? "default");
      const body = await mcpBody(c);
      if ("refusal" in body) return body.refusal;
      // calls_per_minute: the guard took one call for the request; a JSON-RPC batch takes one more for each further
      // request it holds, before any runs (it was one call for any number of them: 10 tools/call in a batch all ran under 5 a
      // minute; then one for each tool call only, and 100 tasks/result, each a wait of minutes, were one call).
      if (deps.callLeases) {
        const more = requestsIn(body.value) - 1;
        for (let i = 0; i < more; i++) await takeCall(deps.callLeases, c, c.get("auth"), undefined, backgroundOf(c));
      }
      return mcpDoorResponse(c.req.raw, body.value, { deps, tools, auth: c.get("auth"), wsId: c.req.param("ws") ?? "", session, background: () => backgroundOf(c) });
    },
  );
  return app;
}

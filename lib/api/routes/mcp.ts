/**
 * POST /v1/workspaces/{ws}/mcp: the route of the MCP doors (lib/doors/mcp-door.ts picks the
 * 2026-07-28 or the 2025-era one by what the request carries). Its access (a tenant key, any
 * scope: every tool call checks its own; the workspace bound by the guard), the origin check, the
 * method (stateless: POST only; a method no route takes: mcpMethodNotAllowed), the session id, the body (read once: mcp-body.ts; the doors and
 * the SDKs take the parsed value), and one call of calls_per_minute for each request of a
 * JSON-RPC batch past its first; the doors do the rest. Every refusal of the route (the guard's or
 * its own) is answered as a JSON-RPC error, in one place (routeRefusalOf, mcpRouteRefusal).
 */
import type { AppDeps } from "../deps.js";
import type { Tool } from "../../contract/tool.js";
import { refusedOrigin } from "../../doors/mcp.js";
import { mcpDoorResponse } from "../../doors/mcp-door.js";
import type { Context } from "hono";
import { mcpRouteRefusal, requestsIn } from "../../doors/json-rpc.js";
import { ERROR_CODES, isToolError, ToolError, type ErrorCode } from "../../shared/errors.js";
import { isObject } from "../../shared/is-object.js";
import type { AppEnv } from "../http.js";
import { takeCall } from "../auth/rate-limit.js";
import { checkSessionId } from "../../layout/paths.js";
import { addRoute } from "./access.js";
import { backgroundOf, newApp } from "./common.js";
import { mcpBody } from "./mcp-body.js";

const MCP_PATH = "/v1/workspaces/:ws/mcp";
const MCP_METHODS = ["POST", "GET", "DELETE"];

/**
 * The Toolshed refusal the route answered, whoever answered it: the error thrown (c.error), or the
 * HTTP routes' envelope `{ok: false, error: {code, message, details}}` set as the answer without one
 * (the guard answers a refusal inside an Idempotency-Key's run, and replays a kept one, as c.res).
 * Null for a success and for the doors' and SDKs' own answers, already JSON-RPC.
 */
async function routeRefusalOf(c: Context<AppEnv>): Promise<ToolError | null> {
  if (isToolError(c.error)) return c.error;
  if (c.res.ok) return null;
  if (!(c.res.headers.get("content-type") ?? "").startsWith("application/json")) return null;
  const body = (await c.res.clone().json().catch(() => null)) as { ok?: unknown; error?: { code?: unknown; message?: unknown; details?: unknown } } | null;
  const e = body?.ok === false ? body.error : undefined;
  if (typeof e?.code !== "string" || !(e.code in ERROR_CODES) || typeof e.message !== "string") return null;
  return new ToolError(e.code as ErrorCode, e.message, isObject(e.details) ? (e.details as Record<string, unknown>) : {});
}

/**
 * The refusal of a method the stateless endpoint does not serve: any but POST. GET (no
 * server-initiated stream) and DELETE (no session to end) are routed, and thrown by the handler
 * after the guard; any other (PUT, PATCH, OPTIONS, ...) is no route's, and is answered by
 * mcpMethodNotAllowed. `Allow: POST` (http.ts sets it from details.allow).
 */
function methodRefused(method: string): ToolError {
  const why = method === "GET" ? "this MCP endpoint is stateless (no server-initiated stream)" : method === "DELETE" ? "this MCP endpoint is stateless (no session to end)" : `${method.slice(0, 20)} is not a method of MCP's Streamable HTTP transport`;
  return new ToolError("METHOD_NOT_ALLOWED", `Method not allowed: ${why}; send JSON-RPC requests with POST.`, { allow: ["POST"] });
}

/**
 * The answer to a method no route of the MCP path takes (PUT, PATCH, OPTIONS, ...), given by the
 * app's notFound before any key is asked for, as every path's 405 is (lib/api/app.ts): the JSON-RPC
 * error GET and DELETE get (mcpRouteRefusal: -32000, id null, METHOD_NOT_ALLOWED in data), 405,
 * `Allow: POST`. The official SDK's transport answers an unsupported method the same way
 * (handleUnsupportedRequest: 405, -32000, id null, an Allow header); its Allow names GET and DELETE
 * too, which a stateless endpoint does not serve. Before (2026-12-02) the HTTP routes' envelope.
 */
export function mcpMethodNotAllowed(c: Context<AppEnv>): Response {
  const res = mcpRouteRefusal(methodRefused(c.req.method), 405, undefined, c.req.header("mcp-session-id") !== undefined);
  res.headers.set("allow", "POST");
  return res;
}

export function mcpApp(deps: AppDeps, tools: readonly Tool[]) {
  const app = newApp();
  // Every refusal of this route (the guard's: key, workspace, Idempotency-Key, calls_per_minute; the handler's: X-Session-Id,
  // a batch's further calls; an Idempotency-Key's kept refusal replayed) is answered as MCP answers errors, in this one place:
  // a JSON-RPC error with the request's id, the status kept but for a 404 on a request with a session (json-rpc.ts
  // mcpRouteRefusal), and the headers the guard set (WWW-Authenticate, Retry-After) kept on c.res.
  // Before (2026-12-02) all but calls_per_minute's came in the HTTP routes' envelope, which no MCP client matches to its request.
  // Registered for the methods the guarded route below serves (its policy covers this handler too).
  app.on(MCP_METHODS, MCP_PATH, async (c, next) => {
    await next();
    const refusal = await routeRefusalOf(c);
    if (!refusal) return;
    // The request's id is read from its body when the key was good, or the body was read anyway: a caller without a valid
    // key (401, or the backoff's 429) never makes the server read up to 40 MiB to learn an id; its answer's id is null.
    const read = c.req.method !== "POST" ? undefined : c.get("mcpBody") ?? (c.get("auth") ? mcpBody(c) : undefined);
    const body = await read;
    c.res = mcpRouteRefusal(refusal, c.res.status, body && "value" in body ? body.value : undefined, c.req.header("mcp-session-id") !== undefined);
  });
  addRoute(
    app, deps,
    {
      method: ["post", "get", "delete"],
      // GET and DELETE are routed (guarded, then refused: methodRefused) and served by no one: the app never names them as taken here.
      refuses: ["get", "delete"],
      path: MCP_PATH,
      access: { auth: "tenant", scope: "any", workspace: true, runsTools: true },
      undocumented: "MCP Streamable HTTP (JSON-RPC 2.0), specified by the Model Context Protocol rather than by OpenAPI; every tool call checks its own scope",
    },
    async (c) => {
      const refused = refusedOrigin(c.req.raw, deps.mcp?.allowedOrigins ?? [], deps.syncUrl);
      if (refused) return refused;
      if (c.req.method !== "POST") throw methodRefused(c.req.method);
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

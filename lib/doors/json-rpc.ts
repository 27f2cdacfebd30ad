/**
 * The MCP doors' own JSON-RPC error answers, where no SDK answers (a body that is not JSON, a
 * method the stateless endpoint does not serve, an elicitation answer not taken, a tools/call with
 * malformed params, an Origin refused): the shape both SDKs answer with, `{jsonrpc: "2.0",
 * error: {code, message, data?}, id}`, as JSON; id null where the request's id is unknown (no JSON)
 * or names no one request.
 */
import type { ErrorCode, ToolError } from "../shared/errors.js";
import { toToolError } from "../contract/errors.js";
import { isObject } from "../shared/is-object.js";

/** JSON-RPC 2.0's and the SDKs' codes used here. */
export const JSON_RPC = { parseError: -32700, invalidRequest: -32600, invalidParams: -32602, internalError: -32603, serverError: -32000 } as const;

/** What the request named wrong: its params (a bad or unknown task id, a tool the key may not use). */
const BAD_PARAMS: ReadonlySet<ErrorCode> = new Set(["NOT_FOUND", "INVALID_ARGUMENT", "PERMISSION_DENIED"]);

/**
 * A refusal thrown outside a tool's result (the tasks methods of both MCP doors) as the JSON-RPC
 * error to answer: -32602 for bad params (BAD_PARAMS); -32603 for INTERNAL only, its text only in the
 * log (a storage error's names a storage key); any other refusal (QUOTA_EXCEEDED, RATE_LIMITED,
 * CONFLICT, UNAUTHORIZED, ...) -32000, the server-error code of the doors' own refusals, with its
 * actionable message: a client must not take it for a fault of the server. `data`: the ToolError's
 * code and details. Each door wraps it in its SDK's error class.
 */
export function refusalAsRpcError(e: unknown, door: string): { code: number; message: string; data: { code: ErrorCode; details: Record<string, unknown> } } {
  const t = toToolError(e);
  if (t.code === "INTERNAL") console.error(`internal error (${door})`, e instanceof Error ? e.stack ?? e.message : String(e));
  const code = BAD_PARAMS.has(t.code) ? JSON_RPC.invalidParams : t.code === "INTERNAL" ? JSON_RPC.internalError : JSON_RPC.serverError;
  return { code, message: `${t.code}: ${t.message}`, data: { code: t.code, details: t.details } };
}

/**
 * How many requests a JSON-RPC body holds (one message or a batch): messages with a method and an
 * id. Notifications (no id) and responses (no method) are not requests: the SDKs run nothing for them.
 */
export function requestsIn(body: unknown): number {
  const isRequest = (m: unknown) => {
    const r = m as { method?: unknown; id?: unknown } | null;
    return typeof r?.method === "string" && (typeof r.id === "string" || typeof r.id === "number");
  };
  return (Array.isArray(body) ? body : [body]).filter(isRequest).length;
}

/** One JSON-RPC error answer with HTTP `status`; `data` carries a ToolError's code and details when one is given; `id` the one request it answers (else null). */
export function jsonRpcError(status: number, code: number, message: string, opts: { error?: ToolError; headers?: Record<string, string>; id?: string | number } = {}): Response {
  const data = opts.error ? { data: { code: opts.error.code, details: opts.error.details } } : {};
  return new Response(JSON.stringify({ jsonrpc: "2.0", error: { code, message, ...data }, id: opts.id ?? null }), { status, headers: { "content-type": "application/json", ...opts.headers } });
}

/** The id of the one request a body holds (a single message with an id), else undefined (a batch, a notification, no JSON). */
export function requestIdOf(body: unknown): string | number | undefined {
  const id = !Array.isArray(body) && isObject(body) ? (body as { id?: unknown }).id : undefined;
  return typeof id === "string" || typeof id === "number" ? id : undefined;
}

/**
 * The HTTP status an MCP route refusal keeps. Every status keeps its meaning (401 with
 * WWW-Authenticate for OAuth discovery, 403, 409 and 429 with Retry-After, 413, 400, 5xx) but one:
 * a 404 on a request that carries Mcp-Session-Id tells a client its session is gone, and it MUST
 * re-initialize (the Streamable HTTP transport's session rules), where the refusal is a workspace
 * the key cannot see: that is answered 400, a request that cannot be served, so the client keeps
 * its session and reads why. Without a session id a 404 means no more than "no such workspace here".
 */
export function mcpRefusalStatus(status: number, hasSession: boolean): number {
  // A status under 400 (NEEDS_INPUT's and NEEDS_APPROVAL's 202, which only a tool's result carries) is no refusal to a client: a 202 has no answer to read.
  return (status === 404 && hasSession) || status < 400 ? 400 : status;
}

/**
 * A request the MCP route refused outside any JSON-RPC method (the route guard: key, workspace,
 * Idempotency-Key, calls_per_minute; the route: X-Session-Id, a batch's further calls), as the
 * JSON-RPC error response MCP clients read over Streamable HTTP (the transport lets an HTTP error
 * status carry one): the request's id (null for a batch, a notification or no body), -32603 for
 * INTERNAL, else -32000 (the refusal is the HTTP request's: its key, URL or headers, never its
 * params), the message `CODE: message` (what to do next), data `{code, details}` (the details the
 * HTTP routes' envelope gives the same caller). Its status: mcpRefusalStatus. The caller's response
 * headers stay (Retry-After, WWW-Authenticate, RateLimit).
 */
export function mcpRouteRefusal(error: ToolError, status: number, body: unknown, hasSession: boolean): Response {
  const id = requestIdOf(body);
  const code = error.code === "INTERNAL" ? JSON_RPC.internalError : JSON_RPC.serverError;
  return jsonRpcError(mcpRefusalStatus(status, hasSession), code, `${error.code}: ${error.message}`, { error, ...(id !== undefined ? { id } : {}) });
}

/**
 * A request refused for its Origin (DNS rebinding: lib/doors/mcp.ts refusedOrigin): 403, as the
 * transport spec asks, with a JSON-RPC error response "that has no id" (the spec's words: the body
 * is not read for a refused origin) and the code the SDK's own origin check answers, -32000; its
 * message `PERMISSION_DENIED: ...`, as every route refusal's (mcpRouteRefusal).
 */
export const originRefused = (error: ToolError): Response => jsonRpcError(403, JSON_RPC.serverError, `${error.code}: ${error.message}`, { error });

/**
 * A single tools/call request whose params are not `{name: string, arguments?: object, task?: object}`:
 * its id and what is wrong, in words; else null. The 2025-era SDK answers such a call with -32603
 * (internal error) and a raw zod dump; the door answers -32602 with this instead. A batch (which
 * MCP 2025-06-18 dropped) is left to the SDK.
 */
export function malformedToolCall(body: unknown): { id: string | number; message: string } | null {
  const m = body as { method?: unknown; id?: unknown; params?: Record<string, unknown> } | null;
  if (Array.isArray(body) || m?.method !== "tools/call" || (typeof m.id !== "string" && typeof m.id !== "number")) return null;
  const kind = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "an array" : typeof v === "object" ? "an object" : `a ${typeof v}`);
  const p = m.params;
  const wrong = !isObject(p)
    ? `params must be an object, not ${kind(p)}`
    : typeof p!.name !== "string"
      ? `params.name must be the tool's name (a string), not ${kind(p!.name)}`
      : p!.arguments !== undefined && !isObject(p!.arguments)
        ? `params.arguments must be an object of the tool's parameters, not ${kind(p!.arguments)}`
        : p!.task !== undefined && !isObject(p!.task)
          ? `params.task must be an object ({} or {"ttl": ms}), not ${kind(p!.task)}`
          : null;
  return wrong ? { id: m.id, message: `Invalid params: ${wrong}. tools/list shows each tool's parameters.` } : null;
}

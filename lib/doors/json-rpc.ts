/**
 * The MCP doors' own JSON-RPC error answers, where no SDK answers (a body that is not JSON, a
 * method the stateless endpoint does not serve, an elicitation answer not taken): the shape both
 * SDKs answer with, `{jsonrpc: "2.0", error: {code, message, data?}, id: null}`, as JSON. id null:
 * the request's id is unknown (no JSON) or names no one request.
 */
import type { ToolError } from "../shared/errors.js";

/** JSON-RPC 2.0's and the SDKs' codes used here. */
export const JSON_RPC = { parseError: -32700, invalidRequest: -32600, invalidParams: -32602, serverError: -32000 } as const;

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

/** One JSON-RPC error answer with HTTP `status`; `data` carries a ToolError's code and details when one is given. */
export function jsonRpcError(status: number, code: number, message: string, opts: { error?: ToolError; headers?: Record<string, string> } = {}): Response {
  const data = opts.error ? { data: { code: opts.error.code, details: opts.error.details } } : {};
  return new Response(JSON.stringify({ jsonrpc: "2.0", error: { code, message, ...data }, id: null }), { status, headers: { "content-type": "application/json", ...opts.headers } });
}

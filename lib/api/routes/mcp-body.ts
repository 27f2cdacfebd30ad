/**
 * The JSON body of a POST to the MCP route, read once per request by the one JSON reader
 * (json-body.ts: bounded at MAX_JSON_BODY_BYTES, strict UTF-8), whoever asks first: the trace
 * middleware (tracing on: a message's _meta.traceparent names its span's parent; it parses only a
 * body of at most TRACE_PEEK_MAX_BYTES, before the key is checked) or the route.
 * Every consumer after them takes the parsed value (the batch count, the SDKs' classifier and
 * transports as `parsedBody`, the door's own inspections): the request's stream is never read or
 * copied again, and the SDKs' own 4 MiB bound (they apply it only to a body they read) gives way
 * to this one, the tool routes'. A batch over the SDKs' MAX_BATCH_SIZE is refused here too, as they
 * refuse it, but before the route takes a call of calls_per_minute for each of its tool calls.
 */
import type { Context } from "hono";
import { toToolError } from "../../contract/errors.js";
import { MAX_BATCH_SIZE } from "@modelcontextprotocol/sdk/server/requestBody.js";
import { ToolError } from "../../shared/errors.js";
import { JSON_RPC, jsonRpcError } from "../../doors/json-rpc.js";
import type { AppEnv } from "../http.js";
import { MAX_JSON_BODY_BYTES, parseJsonBytes, readCapped } from "./json-body.js";

/** The path of the MCP route (mcp.ts: /v1/workspaces/:ws/mcp); no other route's body is read here (a pending id or tool named "mcp" keeps its own). */
export const isMcpPath = (path: string): boolean => /^\/v1\/workspaces\/[^/]+\/mcp$/.test(path);

/** What an MCP body must be, told to a body that is empty or not JSON (the tool routes' "the arguments as one JSON object" is not it). */
const SEND_JSON_RPC = 'Send one JSON-RPC 2.0 request as a JSON object, e.g. {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, or (2025 revisions) a batch of them as a JSON array.';

/** The parsed body, or the answer that refuses it. */
export type McpBody = { value: unknown } | { refusal: Response };

/**
 * Largest body whose `_meta.traceparent` the trace middleware (tracing on) parses before the key is
 * checked: a larger one is parsed by the route, after the guard, so a caller without a key cannot
 * make the server parse 40 MiB (its span then takes the traceparent header only).
 */
export const TRACE_PEEK_MAX_BYTES = 1024 * 1024;

/** The request's MCP body, read and parsed on the first call and kept on the context (c.var.mcpBody) for the next. */
export function mcpBody(c: Context<AppEnv>): Promise<McpBody> {
  let body = c.get("mcpBody");
  if (!body) c.set("mcpBody", (body = mcpBytes(c).then(parseMcpBody)));
  return body;
}

/** The body for the trace middleware: parsed when it is at most TRACE_PEEK_MAX_BYTES, else null (the route parses it after the key is checked). */
export async function mcpBodyToTrace(c: Context<AppEnv>): Promise<unknown> {
  const read = await mcpBytes(c);
  if ("refusal" in read || read.bytes.length > TRACE_PEEK_MAX_BYTES) return null;
  const body = await mcpBody(c);
  return "value" in body ? body.value : null;
}

/** The request's bytes, read once (bounded) and kept on the context. */
function mcpBytes(c: Context<AppEnv>): Promise<{ bytes: Uint8Array } | { refusal: Response }> {
  let read = c.get("mcpBytes");
  if (!read) c.set("mcpBytes", (read = readMcpBytes(c.req.raw)));
  return read;
}

async function readMcpBytes(req: Request): Promise<{ bytes: Uint8Array } | { refusal: Response }> {
  try {
    return { bytes: await readCapped(req, MAX_JSON_BODY_BYTES) };
  } catch (e) {
    return { refusal: unreadableError(e) };
  }
}

function parseMcpBody(read: { bytes: Uint8Array } | { refusal: Response }): McpBody {
  if ("refusal" in read) return read;
  let value: unknown;
  try {
    value = parseJsonBytes(read.bytes, SEND_JSON_RPC).value;
  } catch (e) {
    return { refusal: unreadableError(e) };
  }
  if (value === undefined) return { refusal: unreadable(new ToolError("INVALID_ARGUMENT", `The request body is empty. ${SEND_JSON_RPC}`, {})) };
  if (Array.isArray(value) && value.length > MAX_BATCH_SIZE) return { refusal: jsonRpcError(400, JSON_RPC.invalidRequest, `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`) };
  return { value };
}

/** A read or parse that failed; a stream that broke off (the client went away) is no server error: the body could not be read. */
function unreadableError(e: unknown): Response {
  const error = toToolError(e);
  return unreadable(error.code === "INTERNAL" ? new ToolError("INVALID_ARGUMENT", "The request body could not be read to its end.", {}) : error);
}

/**
 * A body that could not be read, as an MCP client understands it (what the SDKs answer for a body
 * they read themselves): over the bound 413 with -32000, otherwise 400 with -32700 Parse error;
 * the reader's message says why (the offset of a bad UTF-8 byte, the bound).
 */
function unreadable(e: ToolError): Response {
  if (e.code === "PAYLOAD_TOO_LARGE") return jsonRpcError(413, JSON_RPC.serverError, `Payload Too Large: ${e.message}`, { error: e });
  return jsonRpcError(400, JSON_RPC.parseError, `Parse error: ${e.message}`, { error: e });
}

/** The HTTP side of errors: one error handler and one validation hook for every app. */
import type { MetaRecord } from "../layers/open.js";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ZodError, ZodType } from "zod";
import { ToolError } from "../shared/errors.js";
import { formatZodError, toToolError } from "../contract/errors.js";
import type { AuthInfo } from "../contract/caller.js";
import type { CallMeter } from "../run/metering/usage.js";
import type { EarlyCall } from "../workspace/early.js";

export type AppEnv = {
  Variables: {
    auth: AuthInfo;
    /** The tool of a tool route (named in its error envelope). */
    tool?: string;
    /** The cost of a tool call (its error envelope carries `usage`). */
    call?: CallMeter;
    /** The request's JSON body, read once by lib/api/routes/json-body.ts. */
    json?: unknown;
    /** The route's JSON body schema (the guard's, from the route's definition): an unknown field's "did you mean" (validationHook). */
    bodySchema?: ZodType;
    /** A POST to the MCP route: its JSON body, read once (lib/api/routes/mcp-body.ts), or the JSON-RPC answer that refuses it. */
    mcpBody?: Promise<{ value: unknown } | { refusal: Response }>;
    /** Its bytes, read before they are parsed (the trace middleware parses only a small body before the key is checked). */
    mcpBytes?: Promise<{ bytes: Uint8Array } | { refusal: Response }>;
    /**
     * The workspace record (meta.json) the guard read for a `workspace: true` route: handlers reuse it (one read per call).
     * `known`: not read, but known to this isolate (a route that allows it: lib/api/routes/known-workspace.ts).
     */
    workspace?: { tenant: string; id: string; record: MetaRecord; known?: boolean };
    /** What a tool route started beside that read (lib/workspace/early.ts): the call's Workspace takes it. */
    early?: EarlyCall;
    /** Set when the Idempotency-Key layer answered the request without running it (lib/api/idempotency.ts answeredByKey): no usage record. */
    keyAnswer?: "replayed" | "refused";
    /** The rate limit's headers the guard set (auth/rate-limit.ts), set again on the response the handler built. */
    rate?: Record<string, string>;
    /** The runtime's waitUntil, once looked up (null: none): lib/api/routes/common.ts backgroundOf. */
    background?: ((p: Promise<unknown>) => void) | null;
  };
};

/** The one error envelope: `{ ok: false, tool?, error, usage? }`; RATE_LIMITED with retry_after sets Retry-After. */
export function errorResponse(c: Context<AppEnv>, e: ToolError) {
  const tool = c.get("tool");
  const call = c.get("call");
  if (call) call.code = e.code;
  if (typeof e.details.retry_after === "number") c.header("retry-after", String(e.details.retry_after));
  if (Array.isArray(e.details.allow)) c.header("allow", e.details.allow.join(", "));
  return c.json(
    { ok: false as const, ...(tool ? { tool } : {}), error: { code: e.code, message: e.message, details: e.details }, ...(call ? { usage: call.usage() } : {}) },
    e.status as 400,
  );
}

/**
 * Any thrown value → the error envelope: hono's HTTP exceptions (body too large, not JSON, no key)
 * in the registry's codes, everything else as every door reads it (lib/contract/errors.ts).
 */
function requestError(err: unknown): ToolError {
  if (err instanceof HTTPException) {
    if (err.status === 401) return new ToolError("UNAUTHORIZED", "Missing or invalid API key. Send 'Authorization: Bearer <api key>'.");
    if (err.status === 413) return new ToolError("PAYLOAD_TOO_LARGE", err.message || "Request body too large.");
    if (err.status === 415) return new ToolError("INVALID_ARGUMENT", "Send the arguments as a JSON body with 'Content-Type: application/json'.", { status: 415 });
    return new ToolError("INVALID_ARGUMENT", err.message || "Bad request.", { status: err.status });
  }
  return toToolError(err);
}

export function onError(err: unknown, c: Context<AppEnv>) {
  const e = requestError(err);
  if (e.code === "INTERNAL") console.error("internal error", err instanceof Error ? err.stack ?? err.message : String(err));
  return errorResponse(c, e);
}

/** A JSON body a handler validates itself (one the validator skips without a JSON content type): the hook's words. */
export function parseJsonBody<S extends ZodType>(schema: S, body: unknown): S["_output"] {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  const { message, issues } = formatZodError(r.error, { target: "json", input: body, schema });
  throw new ToolError("INVALID_ARGUMENT", message, { issues });
}

/**
 * defaultHook of every OpenAPIHono: validation failures become INVALID_ARGUMENT, in plain words naming the parameter.
 * Thrown, not answered, so it reaches onError as every other refusal does: the request's error is then
 * the ToolError, and its usage record and audit entry carry its code (not only the answer's status).
 */
export function validationHook(result: { success: boolean; error?: unknown; target?: string; data?: unknown }, c: Context<AppEnv>): undefined {
  if (result.success) return undefined;
  const target = result.target ?? "json";
  const schema = target === "json" ? c.get("bodySchema") : undefined;
  const { message, issues } = formatZodError(result.error as ZodError, { target, input: result.data, ...(schema ? { schema } : {}) });
  throw new ToolError("INVALID_ARGUMENT", message, { issues });
}

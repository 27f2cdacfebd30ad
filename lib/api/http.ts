/** The HTTP side of errors: one error handler and one validation hook for every app. */
import type { MetaRecord } from "../layers/open.js";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { ZodError, type ZodType } from "zod";
import { ToolError, isToolError } from "../shared/errors.js";
import type { AuthInfo } from "./auth/keys.js";
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
    /**
     * The workspace record (meta.json) the guard read for a `workspace: true` route: handlers reuse it (one read per call).
     * `known`: not read, but known to this isolate (a route that allows it: lib/api/routes/known-workspace.ts).
     */
    workspace?: { tenant: string; id: string; record: MetaRecord; known?: boolean };
    /** What a tool route started beside that read (lib/workspace/early.ts): the call's Workspace takes it. */
    early?: EarlyCall;
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
  return c.json(
    { ok: false as const, ...(tool ? { tool } : {}), error: { code: e.code, message: e.message, details: e.details }, ...(call ? { usage: call.usage() } : {}) },
    e.status as 400,
  );
}

/** Any thrown value → the error envelope. Unknown errors are INTERNAL and never leak their message. */
export function toToolError(err: unknown): ToolError {
  if (isToolError(err)) return err;
  if (err instanceof ZodError) {
    const { message, issues } = formatZodError(err);
    return new ToolError("INVALID_ARGUMENT", message, { issues });
  }
  if (err instanceof HTTPException) {
    if (err.status === 401) return new ToolError("UNAUTHORIZED", "Missing or invalid API key. Send 'Authorization: Bearer <api key>'.");
    if (err.status === 413) return new ToolError("PAYLOAD_TOO_LARGE", err.message || "Request body too large.");
    if (err.status === 415) return new ToolError("INVALID_ARGUMENT", "Send the arguments as a JSON body with 'Content-Type: application/json'.", { status: 415 });
    return new ToolError("INVALID_ARGUMENT", err.message || "Bad request.", { status: err.status });
  }
  return new ToolError("INTERNAL", "Internal error. Retry; if it persists, report it with the request id.", {});
}

export function onError(err: unknown, c: Context<AppEnv>) {
  const e = toToolError(err);
  if (e.code === "INTERNAL") console.error("internal error", err instanceof Error ? err.stack ?? err.message : String(err));
  return errorResponse(c, e);
}

/** Where a route's validated value came from (hono's validation targets), in the words a message uses. */
const PLACES: Record<string, string> = { query: "query parameter", param: "path parameter", header: "header", json: "field", form: "form field", cookie: "cookie" };
const KINDS: Record<string, string> = { string: "a string", number: "a number", int: "an integer", boolean: "true or false", object: "an object", array: "an array" };

const valueAt = (input: unknown, path: readonly PropertyKey[]) => path.reduce<unknown>((v, k) => (v !== null && typeof v === "object" ? (v as Record<PropertyKey, unknown>)[k] : undefined), input);

function shown(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}…` : v);
  if (v === null || typeof v === "number" || typeof v === "boolean") return String(v);
  return Array.isArray(v) ? "an array" : `a${typeof v === "object" ? "n" : ""} ${typeof v}`;
}

/** One issue in plain words, naming the parameter and where it goes: "Missing required query parameter 'from'". */
function plainIssue(i: ZodError["issues"][number], place: string, input: unknown): string {
  const path = i.path.map(String).join(".");
  const name = path ? `${place} '${path}'` : place === "field" ? "the JSON body" : `the ${place}s`;
  const Name = name[0]!.toUpperCase() + name.slice(1);
  const value = valueAt(input, i.path);
  if (i.code === "invalid_type") {
    if (value === undefined) return path ? `Missing required ${name}` : `Missing ${name}`;
    return `${Name} must be ${KINDS[i.expected] ?? i.expected}, got ${shown(value)}`;
  }
  if (i.code === "invalid_value") return `${Name} must be one of ${i.values.map((v) => JSON.stringify(v)).join(", ")}, got ${shown(value)}`;
  if (i.code === "unrecognized_keys") return `Unknown ${place}${i.keys.length > 1 ? "s" : ""} ${i.keys.map((k) => `'${path ? `${path}.` : ""}${k}'`).join(", ")}`;
  return `${Name}: ${i.message}`;
}

/**
 * zod's issues as a message. `where` (a route's validation target and the raw value it checked)
 * gives plain words for every route: "Missing required query parameter 'from'", "Field 'limit'
 * must be a number, got "ten"". Without it: "path: zod's message".
 */
export function formatZodError(error: ZodError, where?: { target: string; input: unknown }): { message: string; issues: { path: string; message: string }[] } {
  if (!where) {
    const issues = error.issues.map((i) => ({ path: i.path.join(".") || "(body)", message: i.message }));
    return { message: `Invalid arguments: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}.`, issues };
  }
  const place = PLACES[where.target] ?? where.target;
  const issues = error.issues.map((i) => ({ path: i.path.join(".") || "(body)", message: plainIssue(i, place, where.input) }));
  return { message: `${issues.map((i) => i.message).join("; ")}. Fix the request and retry; GET /openapi.json describes every route's parameters.`, issues };
}

/** A JSON body a handler validates itself (one the validator skips without a JSON content type): the hook's words. */
export function parseJsonBody<S extends ZodType>(schema: S, body: unknown): S["_output"] {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  const { message, issues } = formatZodError(r.error, { target: "json", input: body });
  throw new ToolError("INVALID_ARGUMENT", message, { issues });
}

/** defaultHook of every OpenAPIHono: validation failures become INVALID_ARGUMENT, in plain words naming the parameter. */
export function validationHook(result: { success: boolean; error?: unknown; target?: string; data?: unknown }, c: Context<AppEnv>) {
  if (result.success) return undefined;
  const { message, issues } = formatZodError(result.error as ZodError, { target: result.target ?? "json", input: result.data });
  return errorResponse(c, new ToolError("INVALID_ARGUMENT", message, { issues }));
}

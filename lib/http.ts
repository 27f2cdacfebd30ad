/** The HTTP side of errors: one error handler and one validation hook for every app. */
import type { MetaRecord } from "./layers/open.js";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { ZodError } from "zod";
import { ToolError, isToolError } from "./errors.js";
import type { AuthInfo } from "./auth/keys.js";
import type { CallMeter } from "./metering/usage.js";

export type AppEnv = {
  Variables: {
    auth: AuthInfo;
    /** The tool of a tool route (named in its error envelope). */
    tool?: string;
    /** The cost of a tool call (its error envelope carries `usage`). */
    call?: CallMeter;
    /** The request's JSON body, read once by lib/routes/json-body.ts. */
    json?: unknown;
    /** The workspace record (meta.json) the guard read for a `workspace: true` route: handlers reuse it (one read per call). */
    workspace?: { tenant: string; id: string; record: MetaRecord };
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

export function formatZodError(error: ZodError): { message: string; issues: { path: string; message: string }[] } {
  const issues = error.issues.map((i) => ({ path: i.path.join(".") || "(body)", message: i.message }));
  return { message: `Invalid arguments: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}.`, issues };
}

/** defaultHook of every OpenAPIHono: validation failures become INVALID_ARGUMENT. */
export function validationHook(result: { success: boolean; error?: unknown }, c: Context<AppEnv>) {
  if (result.success) return undefined;
  const { message, issues } = formatZodError(result.error as ZodError);
  return errorResponse(c, new ToolError("INVALID_ARGUMENT", message, { issues }));
}


/** The HTTP side of errors: one error handler and one validation hook for every app. */
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ZodError } from "zod";
import { ToolError, isToolError } from "./errors.js";
import type { AuthInfo } from "./auth/keys.js";

export type AppEnv = { Variables: { auth: AuthInfo; tool?: string } };

export function errorResponse(c: Context, e: ToolError, extra: Record<string, unknown> = {}) {
  return c.json({ ok: false as const, ...extra, error: { code: e.code, message: e.message, details: e.details } }, e.status as 400);
}

/** Any thrown value → the error envelope. Unknown errors are INTERNAL and never leak their message. */
export function toToolError(err: unknown): ToolError {
  if (isToolError(err)) return err;
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
  const tool = c.get("tool");
  return errorResponse(c, e, tool ? { tool } : {});
}

export function formatZodError(error: ZodError): { message: string; issues: { path: string; message: string }[] } {
  const issues = error.issues.map((i) => ({ path: i.path.join(".") || "(body)", message: i.message }));
  return { message: `Invalid arguments: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}.`, issues };
}

/** defaultHook of every OpenAPIHono: validation failures become INVALID_ARGUMENT. */
export function validationHook(result: { success: boolean; error?: unknown }, c: Context<AppEnv>) {
  if (result.success) return undefined;
  const { message, issues } = formatZodError(result.error as ZodError);
  const tool = c.get("tool");
  return errorResponse(c, new ToolError("INVALID_ARGUMENT", message, { issues }), tool ? { tool } : {});
}


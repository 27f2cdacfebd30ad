/**
 * Errors as every door and the run path read them: any thrown value as a ToolError, and zod's
 * issues in plain words. The HTTP API adds hono's own exceptions (lib/api/http.ts).
 */
import { ZodError } from "zod";
import { ToolError, isToolError } from "../shared/errors.js";

/** Any thrown value as a ToolError: a ToolError as it is, zod's as INVALID_ARGUMENT naming the issues; anything else is INTERNAL and never leaks its message. */
export function toToolError(err: unknown): ToolError {
  if (isToolError(err)) return err;
  if (err instanceof ZodError) {
    const { message, issues } = formatZodError(err);
    return new ToolError("INVALID_ARGUMENT", message, { issues });
  }
  return new ToolError("INTERNAL", "Internal error. Retry; if it persists, report it with the request id.", {});
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

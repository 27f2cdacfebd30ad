/**
 * Errors as every door and the run path read them: any thrown value as a ToolError, and zod's
 * issues in plain words. The HTTP API adds hono's own exceptions (lib/api/http.ts).
 */
import { ZodError, type ZodType } from "zod";
import { ToolError, isToolError } from "../shared/errors.js";
import { suggestArgument } from "../shared/suggest.js";

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

type Def = { type: string; shape?: Record<string, ZodType>; innerType?: ZodType; in?: ZodType; element?: ZodType; options?: ZodType[]; getter?: () => ZodType };
const defOf = (s: ZodType | undefined): Def | undefined => (s as unknown as { _zod?: { def?: Def } } | undefined)?._zod?.def;

/**
 * The field names the object of `schema` at `path` takes, or null where that is no plain object.
 * Through optional, default, pipe, lazy and arrays; a union takes the object branch sharing the most
 * fields with the value given there (`input`: the whole body), none on a tie.
 */
export function fieldsAt(schema: ZodType | undefined, path: readonly PropertyKey[], input: unknown): string[] | null {
  let at = schema;
  let i = 0;
  for (let guard = 0; at && guard < 64; guard++) {
    const def = defOf(at);
    if (!def) return null;
    if (def.innerType) at = def.innerType;
    else if (def.type === "pipe") at = def.in;
    else if (def.type === "lazy" && def.getter) at = def.getter();
    else if (def.type === "union" && def.options) at = closestBranch(def.options, valueAt(input, path.slice(0, i)));
    else if (i === path.length) return def.type === "object" && def.shape ? Object.keys(def.shape) : null;
    else if (def.type === "object" && def.shape) at = def.shape[String(path[i++])];
    else if (def.type === "array" && typeof path[i] === "number") (at = def.element), i++;
    else return null;
  }
  return null;
}

function closestBranch(options: ZodType[], value: unknown): ZodType | undefined {
  const given = value !== null && typeof value === "object" ? Object.keys(value) : [];
  const scored = options.map((o) => ({ o, n: given.filter((k) => fieldsAt(o, [], undefined)?.includes(k)).length })).sort((a, b) => b.n - a.n);
  return scored.length === 1 || (scored[0] && scored[0].n > scored[1]!.n) ? scored[0]!.o : undefined;
}

/** An unknown field's "Did you mean" and the fields that object takes, when the schema is known. */
function unknownFields(i: Extract<ZodError["issues"][number], { code: "unrecognized_keys" }>, schema: ZodType | undefined, input: unknown): string {
  const known = fieldsAt(schema, i.path, input);
  if (!known) return "";
  const guess = i.keys.length === 1 ? suggestArgument(i.keys[0]!, known) : null;
  return ` (${guess ? `did you mean '${guess}'? ` : ""}known: ${known.join(", ") || "none"})`;
}

/** One issue in plain words, naming the parameter and where it goes: "Missing required query parameter 'from'". */
function plainIssue(i: ZodError["issues"][number], place: string, input: unknown, schema?: ZodType): string {
  const path = i.path.map(String).join(".");
  const name = path ? `${place} '${path}'` : place === "field" ? "the JSON body" : `the ${place}s`;
  const Name = name[0]!.toUpperCase() + name.slice(1);
  const value = valueAt(input, i.path);
  if (i.code === "invalid_type") {
    if (value === undefined) return path ? `Missing required ${name}` : `Missing ${name}`;
    return `${Name} must be ${KINDS[i.expected] ?? i.expected}, got ${shown(value)}`;
  }
  if (i.code === "invalid_value") return `${Name} must be one of ${i.values.map((v) => JSON.stringify(v)).join(", ")}, got ${shown(value)}`;
  if (i.code === "unrecognized_keys") return `Unknown ${place}${i.keys.length > 1 ? "s" : ""} ${i.keys.map((k) => `'${path ? `${path}.` : ""}${k}'`).join(", ")}${unknownFields(i, schema, input)}`;
  return `${Name}: ${i.message}`;
}

/**
 * zod's issues as a message. `where` (a route's validation target and the raw value it checked)
 * gives plain words for every route: "Missing required query parameter 'from'", "Field 'limit'
 * must be a number, got "ten"". Without it: "path: zod's message".
 */
export function formatZodError(error: ZodError, where?: { target: string; input: unknown; schema?: ZodType }): { message: string; issues: { path: string; message: string }[] } {
  if (!where) {
    const issues = error.issues.map((i) => ({ path: i.path.join(".") || "(body)", message: i.message }));
    return { message: `Invalid arguments: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}.`, issues };
  }
  const place = PLACES[where.target] ?? where.target;
  const issues = error.issues.map((i) => ({ path: i.path.join(".") || "(body)", message: plainIssue(i, place, where.input, where.schema) }));
  return { message: `${issues.map((i) => i.message).join("; ")}. Fix the request and retry; GET /openapi.json describes every route's parameters.`, issues };
}

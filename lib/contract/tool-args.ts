/**
 * Tool arguments as models send them, handled once for every tool (lib/api/routes/tools.ts):
 * - `null` for an optional argument means "absent" (OpenAI's strict mode sends every
 *   property, null for the unused ones), at any depth (multi_edit's edits[i].replace_all).
 *   The schema the model sees stays the tool's own: no argument becomes nullable.
 * - An argument the tool does not know is refused, naming the one the tool has for it: another tool
 *   system's spelling of it (lib/contract/foreign-args.ts, by tool), else the closest known one, else
 *   the one a well-known synonym stands for (lib/shared/suggest.ts).
 * - A missing required argument is named as such, not as "expected string, received undefined".
 * Then the tool's zod schema validates what is left. The walk follows the tool's JSON Schema
 * (z.toJSONSchema), the same document the model and the OpenAPI description show.
 */
import { z } from "@hono/zod-openapi";
import type { ZodError } from "zod";
import { ToolError } from "../shared/errors.js";
import { suggestArgument } from "../shared/suggest.js";
import { foreignArg } from "./foreign-args.js";

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  $ref?: string;
  $defs?: Record<string, Schema>;
}

export interface ArgIssue {
  path: string;
  message: string;
}

const typeOf = (v: unknown): string => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v === "number" ? (Number.isInteger(v) ? "integer" : "number") : typeof v);

function types(s: Schema): string[] {
  return s.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type];
}

function accepts(s: Schema, value: unknown, root: Schema): boolean {
  const r = resolve(s, root);
  const branches = r.anyOf ?? r.oneOf;
  if (branches) return branches.some((b) => accepts(b, value, root));
  const t = types(r);
  if (t.length === 0) return true;
  const v = typeOf(value);
  return t.includes(v) || (v === "integer" && t.includes("number"));
}

function resolve(s: Schema, root: Schema): Schema {
  const m = s.$ref?.match(/^#\/(?:\$defs|definitions)\/(.+)$/);
  return m ? (root.$defs?.[m[1]!] ?? s) : s;
}

const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

/** "Unknown argument 'x'. Did you mean 'y'? Known: ..." (or the tool's own hint for another system's spelling of `key`). */
function unknownMessage(tool: string | undefined, path: string, key: string, known: string[]): string {
  const at = join(path, key);
  const foreign = path === "" ? foreignArg(tool, key) : null;
  const meant = foreign?.arg ?? suggestArgument(key, known);
  const guess = foreign?.hint ?? (meant ? `Did you mean '${meant}'?` : "");
  return `Unknown argument '${at}'.${guess ? ` ${guess}` : ""} Known: ${known.join(", ") || "(none)"}`;
}

function walk(s: Schema, value: unknown, path: string, root: Schema, issues: ArgIssue[], tool?: string): unknown {
  const node = resolve(s, root);
  const branches = node.anyOf ?? node.oneOf;
  if (branches) {
    const fit = branches.filter((b) => accepts(b, value, root));
    return fit.length === 1 ? walk(fit[0]!, value, path, root, issues, tool) : value;
  }
  if (Array.isArray(value)) return node.items ? value.map((v, i) => walk(node.items!, v, `${path}[${i}]`, root, issues)) : value;
  if (value === null || typeof value !== "object" || !types(node).includes("object")) return value;

  const props = node.properties ?? {};
  const known = Object.keys(props);
  const required = new Set(node.required ?? []);
  const extra = typeof node.additionalProperties === "object" ? node.additionalProperties : null;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    const prop = Object.hasOwn(props, key) ? props[key]! : null;
    if (!prop) {
      if (extra) out[key] = walk(extra, v, join(path, key), root, issues);
      else if (node.additionalProperties === true) out[key] = v;
      else issues.push({ path: join(path, key), message: unknownMessage(tool, path, key, known) });
      continue;
    }
    if (v === null && !required.has(key) && !accepts(prop, null, root)) continue; // null = absent
    out[key] = walk(prop, v, join(path, key), root, issues);
  }
  for (const key of required) {
    if (!Object.hasOwn(out, key)) issues.push({ path: join(path, key), message: `Missing required argument ${join(path, key)}` });
  }
  return out;
}

/** zod's issues, with paths written as the walk writes them (edits[0].old_string). */
function zodIssues(error: ZodError): ArgIssue[] {
  return error.issues.map((i) => {
    const path = i.path.reduce<string>((p, k) => (typeof k === "number" ? `${p}[${k}]` : join(p, String(k))), "");
    return { path: path || "(body)", message: `${path || "(body)"}: ${i.message}` };
  });
}

/** What validates the cleaned arguments: a zod schema's safeParse (built-ins), or one imported from JSON Schema (custom tools). */
type Validate = (cleaned: unknown) => { success: true; data: unknown } | { success: false; error: ZodError };

/**
 * The rule for every tool, built-in or custom: nulls dropped, unknown and missing arguments named
 * (walking `schema`, the JSON Schema the model sees), then `validate` on what is left.
 * `label` names the tool in the message (custom tools), `hint` ends it; `tool`: the built-in tool whose
 * table of other systems' spellings (foreign-args.ts) names its arguments.
 */
export function jsonSchemaArgumentParser(schema: Record<string, unknown>, validate: Validate, opts: { label?: string; hint?: string; tool?: string } = {}) {
  const root = schema as Schema;
  const head = `Invalid arguments${opts.label ? ` for ${opts.label}` : ""}`;
  const tail = opts.hint ? ` ${opts.hint}` : "";
  return (raw: unknown): unknown => {
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
      throw new ToolError("INVALID_ARGUMENT", `${head}: send them as one JSON object (got ${typeOf(raw)}). Known arguments: ${Object.keys(root.properties ?? {}).join(", ")}.${tail}`, {
        issues: [{ path: "(body)", message: `expected an object, got ${typeOf(raw)}` }],
      });
    }
    const issues: ArgIssue[] = [];
    const cleaned = walk(root, raw, "", root, issues, opts.tool);
    const parsed = validate(cleaned);
    if (parsed.success && issues.length === 0) return parsed.data;
    // A missing argument is reported once, in our words (zod would add "expected string, received undefined").
    const named = new Set(issues.map((i) => i.path));
    const all = [...issues, ...(parsed.success ? [] : zodIssues(parsed.error).filter((i) => !named.has(i.path)))];
    throw new ToolError("INVALID_ARGUMENT", `${head}: ${all.map((i) => i.message).join("; ")}.${tail}`, { issues: all });
  };
}

/** Validates a built-in tool's arguments once its JSON Schema is known: nulls dropped, unknown and missing arguments named. */
export function argumentParser<S extends z.ZodObject>(input: S, tool?: string) {
  const schema = z.toJSONSchema(input, { target: "draft-2020-12", io: "input" }) as Record<string, unknown>;
  return jsonSchemaArgumentParser(schema, (cleaned) => input.safeParse(cleaned), tool === undefined ? {} : { tool }) as (raw: unknown) => z.infer<S>;
}

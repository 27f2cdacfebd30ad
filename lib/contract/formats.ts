/**
 * GET /v1/tools?format=openai|anthropic|mcp: the tool catalog in each provider's own shape, made
 * from the tool's metadata (lib/contract/tool.ts) so no client needs a converter. Part of the
 * contract: every door lists tools this way, and the task tool's subagent shows its model the openai shape.
 *
 *   openai     function tools in strict mode: every property required (optional ones nullable,
 *              which lib/contract/tool-args.ts reads as absent), additionalProperties: false at every
 *              object level, only the keywords strict mode supports (the rest is said in the
 *              property's description), description = the tool's summary (<= 1,024 characters).
 *              An optional argument whose value is an open map (run_code env, web_fetch
 *              headers) cannot be expressed in strict mode and is left out of that tool's export.
 *   anthropic  { name, description, input_schema } (the long description).
 *   mcp        { name, title, description, inputSchema, outputSchema, annotations }.
 */
import { inputJsonSchema, outputJsonSchema, type Tool } from "./tool.js";

export const TOOL_FORMATS = ["toolshed", "openai", "anthropic", "mcp"] as const;
export type ToolFormat = (typeof TOOL_FORMATS)[number];

type Json = Record<string, unknown>;

/** Keywords OpenAI's strict mode accepts (structured outputs, "supported schemas"); others are stripped. */
const STRICT_KEYWORDS = new Set([
  "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "description", "$defs", "$ref",
  "pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "minItems", "maxItems",
]);
/** String formats strict mode supports. */
export const STRICT_FORMATS = new Set(["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"]);

/** Constraints strict mode lacks, kept for the model as words in the description. */
const SAID_IN_WORDS: Record<string, (v: unknown) => string> = {
  minLength: (v) => `at least ${v} characters`,
  maxLength: (v) => `at most ${v} characters`,
  default: (v) => `default: ${JSON.stringify(v)}`,
};

/** Why a schema cannot be made strict (an open map); null when it can. */
function openMap(s: Json): boolean {
  const ap = s.additionalProperties;
  return s.type === "object" && ap !== undefined && ap !== false;
}

/** One schema node in strict form. `optional`: the property may be absent, so it becomes nullable. */
function strictNode(s: Json, optional: boolean): Json {
  const out: Json = {};
  const words: string[] = [];
  for (const [k, v] of Object.entries(s)) {
    if (STRICT_KEYWORDS.has(k)) out[k] = v;
    else if (SAID_IN_WORDS[k]) words.push(SAID_IN_WORDS[k]!(v));
  }
  if (typeof out.format === "string" && !STRICT_FORMATS.has(out.format)) delete out.format;
  if (out.type === "object" || out.properties) {
    const props = (s.properties ?? {}) as Record<string, Json>;
    const required = new Set((s.required ?? []) as string[]);
    const next: Record<string, Json> = {};
    for (const [name, p] of Object.entries(props)) {
      if (openMap(p) && !required.has(name)) continue; // not expressible in strict mode: left out
      next[name] = strictNode(p, !required.has(name));
    }
    out.type = "object";
    out.properties = next;
    out.required = Object.keys(next);
    out.additionalProperties = false;
  }
  if (out.items && typeof out.items === "object") out.items = strictNode(out.items as Json, false);
  if (Array.isArray(out.anyOf)) out.anyOf = (out.anyOf as Json[]).map((a) => strictNode(a, false));
  if (words.length) out.description = [out.description, `(${words.join("; ")})`].filter(Boolean).join(" ");
  return optional ? nullable(out) : out;
}

function nullable(s: Json): Json {
  if (Array.isArray(s.enum)) return { ...s, type: typeList(s.type, s.enum), enum: [...(s.enum as unknown[]), null] };
  if (typeof s.type === "string") return { ...s, type: [s.type, "null"] };
  if (Array.isArray(s.type)) return (s.type as string[]).includes("null") ? s : { ...s, type: [...(s.type as string[]), "null"] };
  if (Array.isArray(s.anyOf)) return { ...s, anyOf: [...(s.anyOf as Json[]), { type: "null" }] };
  if ("const" in s) return { anyOf: [s, { type: "null" }] };
  return { anyOf: [s, { type: "null" }] };
}

function typeList(type: unknown, values: unknown[]): unknown {
  const base = type ?? [...new Set(values.map((v) => (typeof v === "number" ? "number" : typeof v)))];
  const list = Array.isArray(base) ? base : [base];
  return [...list, "null"];
}

/** The strict-mode JSON Schema of a tool's arguments. */
export function strictInputSchema(tool: Tool): Json {
  const { $schema: _drop, ...schema } = inputJsonSchema(tool);
  return strictNode(schema, false);
}

export function openaiTool(tool: Tool) {
  return { type: "function" as const, name: tool.name, description: tool.summary, parameters: strictInputSchema(tool), strict: true as const };
}

export function anthropicTool(tool: Tool) {
  const { $schema: _drop, ...input_schema } = inputJsonSchema(tool);
  return { name: tool.name, description: tool.description, input_schema };
}

/**
 * A tool as MCP lists it. A declared schema (a custom tool's) is listed as the tenant wrote it, its
 * `$schema` included (SEP-1613: a declared dialect is kept); the built-in tools' schemas, generated
 * by zod, are listed without the `$schema` zod adds (2020-12, MCP's default dialect).
 */
export function mcpTool(tool: Tool) {
  const generated = inputJsonSchema(tool);
  const { $schema: _i, ...bare } = generated;
  const inputSchema = tool.inputSchema ? generated : bare;
  const { $schema: _o, ...outputSchema } = outputJsonSchema(tool);
  return { name: tool.name, title: tool.annotations.title, description: tool.description, inputSchema, outputSchema, annotations: tool.annotations };
}

/** The catalog in one format. */
export function exportTools(tools: readonly Tool[], format: Exclude<ToolFormat, "toolshed">) {
  const one = format === "openai" ? openaiTool : format === "anthropic" ? anthropicTool : mcpTool;
  return tools.map((t) => one(t));
}

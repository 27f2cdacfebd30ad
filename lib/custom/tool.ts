/**
 * A stored custom tool as a real Tool, so the one run path (lib/run-tool.ts: scope, arguments,
 * approval gate, output cut, metering) applies unchanged. Arguments are validated against the
 * tenant's JSON Schema with zod's JSON-Schema import (no eval: runs in Workers).
 */
import { z } from "@hono/zod-openapi";
import type { AppDeps } from "../deps.js";
import { ToolError } from "../errors.js";
import type { Tool } from "../tool.js";
import { backendScope, type StoredCustomTool } from "./definition.js";
import { callPlugin } from "./plugin.js";
import { readCustomTools } from "./store.js";
import { callWebhook } from "./webhook.js";

const CustomOutput = z.object({
  content: z.array(z.object({ type: z.string(), text: z.string().optional() }).passthrough()).optional(),
  json: z.unknown().optional(),
  files_changed: z.array(z.string()).optional(),
});

const typeOf = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);

/** Throws INVALID_ARGUMENT (400) when the schema cannot be read; used when a tool is defined. */
export function schemaValidator(schema: Record<string, unknown>): z.ZodType {
  if (schema.type !== "object") throw new ToolError("INVALID_ARGUMENT", 'input_schema must be a JSON Schema of type "object" (tool arguments are one JSON object).');
  try {
    return z.fromJSONSchema(schema as never);
  } catch (e) {
    throw new ToolError("INVALID_ARGUMENT", `input_schema is not a JSON Schema this server can validate with: ${(e as Error).message.slice(0, 300)}`);
  }
}

export function toCustomTool(def: StoredCustomTool, secretOf: (d: StoredCustomTool) => string | undefined = (d) => (d.backend.type === "webhook" ? d.backend.secret : undefined)): Tool {
  const validator = schemaValidator(def.input_schema);
  const permission = def.permission ?? backendScope(def.backend.type);
  const { $schema: _drop, ...inputSchema } = def.input_schema;
  return {
    name: def.name,
    description: def.description,
    summary: def.summary ?? def.description.slice(0, 1024),
    category: def.backend.type === "plugin" ? "execute" : "web",
    permission,
    annotations: { title: def.annotations?.title ?? def.name, readOnlyHint: def.annotations?.readOnlyHint ?? false, destructiveHint: def.annotations?.destructiveHint ?? true, idempotentHint: def.annotations?.idempotentHint ?? false, openWorldHint: def.annotations?.openWorldHint ?? true },
    input: z.object({}).passthrough(),
    inputSchema,
    output: CustomOutput,
    parseArgs(raw) {
      if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw new ToolError("INVALID_ARGUMENT", `Invalid arguments: send one JSON object (got ${typeOf(raw)}).`);
      const r = validator.safeParse(raw);
      if (r.success) return r.data;
      const issues = r.error.issues.map((i) => ({ path: i.path.join(".") || "(body)", message: `${i.path.join(".") || "(body)"}: ${i.message}` }));
      throw new ToolError("INVALID_ARGUMENT", `Invalid arguments for ${def.name}: ${issues.map((i) => i.message).join("; ")}. GET /v1/tools shows its input_schema.`, { issues });
    },
    async execute(args, ctx) {
      if (def.backend.type === "plugin") {
        const r = await callPlugin(def, def.backend, args, ctx);
        if (r.is_error) throw new ToolError("TOOL_REPORTED_ERROR", r.text || `${def.name} reported an error.`, { content: r.content });
        return { title: def.name, output: r.text, data: { content: r.content, ...(r.files_changed.length ? { files_changed: r.files_changed } : {}) } };
      }
      const secret = secretOf(def);
      if (!secret) throw new ToolError("INTERNAL", `The ${def.name} webhook has no secret.`);
      const r = await callWebhook(def, def.backend, secret, args, ctx);
      if (r.is_error) throw new ToolError("TOOL_REPORTED_ERROR", r.text || `${def.name} reported an error.`);
      return { title: def.name, output: r.text, data: { json: r.json } };
    },
  };
}

/** The tenant's custom tools as Tools (a definition that no longer builds is left out). */
export async function loadCustomTools(deps: AppDeps, tenant: string): Promise<Tool[]> {
  const { tools } = await readCustomTools(deps.storage, tenant);
  return tools.flatMap((d) => {
    try {
      return [toCustomTool(d)];
    } catch {
      return [];
    }
  });
}

/**
 * The ONE join of built-in and custom tools for a tenant: every door (catalog, formats, MCP,
 * the tool route) asks this. A custom name equal to a built-in is dropped: built-ins always win.
 */
export async function toolsForTenant(deps: AppDeps, builtins: readonly Tool[], tenant: string): Promise<Tool[]> {
  const taken = new Set(builtins.map((t) => t.name));
  const custom = (await loadCustomTools(deps, tenant)).filter((t) => !taken.has(t.name));
  return [...builtins, ...custom];
}

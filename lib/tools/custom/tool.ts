/**
 * A stored custom tool as a real Tool, so the one run path (lib/run/run-tool.ts: scope, arguments,
 * approval gate, output cut, metering) applies unchanged. Arguments are validated against the
 * tenant's JSON Schema with zod's JSON-Schema import (no eval: runs in Workers).
 */
import { z } from "@hono/zod-openapi";
import { ToolError } from "../../shared/errors.js";
import type { Tool, ToolContext } from "../../contract/tool.js";
import type { IsolateCache } from "../../shared/isolate-cache.js";
import type { StorageDriver } from "../../storage/types.js";
import type { WebToolDeps } from "../web/deps.js";
import { jsonSchemaArgumentParser } from "../../contract/tool-args.js";
import { commandReads } from "../../exec/tool-support.js";
import { backendScope, reservedNameRefusal, type StoredCustomTool } from "./definition.js";
import { callPlugin } from "./plugin.js";
import { readCustomTools } from "./store.js";
import { PRESET_NAMES } from "../../layout/workspace-meta.js";
import { callWebhook } from "./webhook.js";

/** What loading a tenant's custom tools reads of the app's wiring. */
export interface CustomToolDeps {
  storage: StorageDriver;
  /** Each tenant's custom tools, built, per isolate for a few seconds; createApp makes one when absent. */
  customTools?: IsolateCache<readonly Tool[]>;
}

const CustomOutput = z.object({
  content: z.array(z.object({ type: z.string(), text: z.string().optional() }).passthrough()).optional(),
  json: z.unknown().optional(),
  files_changed: z.array(z.string()).optional(),
});

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
  // The tenant's schema as declared, its $schema (dialect) included: MCP lists it so (SEP-1613);
  // the OpenAI and Anthropic shapes drop $schema for every tool (lib/contract/formats.ts).
  const inputSchema = def.input_schema;
  // What a held call is bound to: the definition as it runs (the times change on a PUT that changes nothing; the secret only signs).
  const { created_at: _c, updated_at: _u, ...definition } = def;
  return {
    definition: def.backend.type === "webhook" ? { ...definition, backend: { ...def.backend, secret: undefined } } : definition,
    name: def.name,
    description: def.description,
    summary: def.summary ?? def.description.slice(0, 1024),
    category: def.backend.type === "plugin" ? "execute" : "web",
    permission,
    annotations: { title: def.annotations?.title ?? def.name, readOnlyHint: def.annotations?.readOnlyHint ?? false, destructiveHint: def.annotations?.destructiveHint ?? true, idempotentHint: def.annotations?.idempotentHint ?? false, openWorldHint: def.annotations?.openWorldHint ?? true },
    input: z.object({}).passthrough(),
    inputSchema,
    output: CustomOutput,
    // Arguments as models send them, the same rule as built-ins (lib/contract/tool-args.ts), then the tenant's JSON Schema.
    parseArgs: jsonSchemaArgumentParser(inputSchema, (cleaned) => validator.safeParse(cleaned), { label: def.name, hint: "GET /v1/tools shows its input_schema." }),
    ...(def.backend.type === "plugin" ? { startReads: commandReads(false) } : {}),
    async execute(args, ctx: ToolContext<WebToolDeps>) {
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

/**
 * The tenant's custom tools as Tools (a definition that no longer builds is left out), from the
 * isolate's cache (deps.customTools, made by createApp) for a few seconds: a tenant without custom
 * tools costs one GET per isolate and TTL, not one per catalog, MCP or unknown-name request. A
 * change through this isolate is seen at once (the routes forget the tenant); one through another
 * isolate after at most the cache's TTL (5 s).
 */
export async function loadCustomTools(deps: CustomToolDeps, tenant: string): Promise<readonly Tool[]> {
  const load = async () => {
    const { tools } = await readCustomTools(deps.storage, tenant);
    return tools.flatMap((d) => {
      try {
        return [toCustomTool(d)];
      } catch {
        return [];
      }
    });
  };
  return deps.customTools ? deps.customTools.get(tenant, load) : load();
}

/**
 * The ONE join of built-in and custom tools for a tenant: every door (catalog, formats, MCP,
 * the tool route) asks this. A custom tool with a reserved name (reservedNameRefusal: a built-in's,
 * a compat route's, a preset's) is dropped: built-ins and presets always win.
 */
export async function toolsForTenant(deps: CustomToolDeps, builtins: readonly Tool[], tenant: string): Promise<Tool[]> {
  const taken = builtins.map((t) => t.name);
  const custom = (await loadCustomTools(deps, tenant)).filter((t) => !reservedNameRefusal(t.name, taken));
  return [...builtins, ...custom];
}

/** The names a tool list (as stored, or as a request gave it) holds beyond the built-ins and the presets. */
function customNamesIn(list: unknown, builtins: readonly Tool[]): boolean {
  const items = typeof list === "string" ? [list] : Array.isArray(list) ? list : [];
  return items.some((n) => typeof n === "string" && !(PRESET_NAMES as readonly string[]).includes(n) && !builtins.some((t) => t.name === n));
}

/**
 * The catalog a tool list is read against (lib/run/toolset.ts: parseToolList, scopesOfList): a key's
 * or a workspace's list may name the tenant's custom tools, whose scopes then count as its tools'.
 * The built-ins alone when no list names anything else, so the lists of built-ins every key and
 * workspace hold cost no read; else joined with the tenant's custom tools (toolsForTenant, the
 * isolate's cache). A name no tool has (a custom tool deleted since) adds nothing.
 */
export async function catalogForLists(deps: CustomToolDeps, builtins: readonly Tool[], tenant: string, lists: readonly unknown[]): Promise<readonly Tool[]> {
  return lists.some((l) => customNamesIn(l, builtins)) ? toolsForTenant(deps, builtins, tenant) : builtins;
}

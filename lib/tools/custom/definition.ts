/**
 * A tenant's custom tool as stored: name, description, input JSON Schema and a backend
 * (plugin: a command in the bash sandbox speaking the seed SDK's line protocol; webhook: an
 * HTTPS URL called with an HMAC signature). Schema and rules only (no I/O).
 */
import { z } from "@hono/zod-openapi";
import { ToolError } from "../../shared/errors.js";
import { PRESET_NAMES } from "../../layout/workspace-meta.js";

/** Same charset as the built-in tools. */
export const CUSTOM_NAME = /^[a-z][a-z0-9_]{0,63}$/;
/** Names the compat routes (every name of lib/doors/compat's ANTHROPIC_TOOLS and OPENAI_TOOLS: a test checks it) and the tool routes own, besides the built-ins passed in. */
export const RESERVED_NAMES = ["str_replace_based_edit_tool", "str_replace_editor", "shell", "custom", "mcp"];
export const MAX_CUSTOM_TOOLS = 50;

/**
 * Why no custom tool may be named `name`, or null: the ONE rule of reserved names, checked when a
 * tool is saved (lib/api/routes/custom-tools.ts) and at the join of built-in and custom tools
 * (toolsForTenant), so a definition stored before a name was reserved is left out too. A built-in's
 * or a compat route's name would shadow it; a preset's name (`all`, `readonly`, …) means the preset
 * in every tool list (a key's, a workspace's), so the tool could never be named alone there, and a
 * list meant to add it (`["readonly", "all"]`) would give every tool.
 */
export function reservedNameRefusal(name: string, builtins: readonly string[]): ToolError | null {
  if (builtins.includes(name) || RESERVED_NAMES.includes(name)) {
    return new ToolError("ALREADY_EXISTS", `'${name}' is a built-in tool name; a custom tool can never shadow one. Pick another name (e.g. a prefix: acme_${name}).`, { name });
  }
  if ((PRESET_NAMES as readonly string[]).includes(name)) {
    return new ToolError("ALREADY_EXISTS", `'${name}' is a preset's name (${PRESET_NAMES.join(", ")}): in a key's or a workspace's tool list it means the preset, never a tool. Pick another name (e.g. a prefix: acme_${name}).`, { name, presets: PRESET_NAMES });
  }
  return null;
}
export const MAX_SCHEMA_BYTES = 32_768;

const Plugin = z.object({
  type: z.literal("plugin"),
  command: z.string().min(1).max(4096).optional().openapi({ description: "A shell command run in the workspace root, e.g. `python3 tools/weather.py`" }),
  path: z.string().min(1).max(1024).optional().openapi({ description: "An executable file of the workspace (chmod +x), run as ./path" }),
  args: z.array(z.string().max(1024)).max(32).optional(),
  timeout: z.number().int().min(1).max(600).optional().openapi({ description: "Seconds (default 30)" }),
}).strict();
const Webhook = z.object({
  type: z.literal("webhook"),
  url: z.string().min(1).max(2048).openapi({ description: "https URL of the tenant's service" }),
  secret: z.string().min(16).max(256).optional().openapi({ description: "HMAC-SHA256 key (default: generated, returned once)" }),
  timeout: z.number().int().min(1).max(120).optional().openapi({ description: "Seconds (default 30)" }),
}).strict();

export const CustomToolInput = z
  .object({
    name: z.string().regex(CUSTOM_NAME, "use 1-64 lower-case letters, digits or '_', starting with a letter"),
    description: z.string().min(1).max(8192),
    summary: z.string().min(1).max(1024).optional(),
    input_schema: z.record(z.string(), z.unknown()),
    backend: z.discriminatedUnion("type", [Plugin, Webhook]),
    permission: z.enum(["read", "write", "execute", "network"]).optional(),
    annotations: z.object({ title: z.string().max(200).optional(), readOnlyHint: z.boolean().optional(), destructiveHint: z.boolean().optional(), idempotentHint: z.boolean().optional(), openWorldHint: z.boolean().optional() }).strict().optional(),
    // GET's answer may be sent back as it is (read, change a field, PUT): its times are the server's, ignored here.
    created_at: z.string().max(64).optional().openapi({ description: "Read-only: set by the server; ignored when sent" }),
    updated_at: z.string().max(64).optional().openapi({ description: "Read-only: set by the server; ignored when sent" }),
  })
  .strict()
  .openapi("CustomToolInput");
export type CustomToolInput = z.infer<typeof CustomToolInput>;

export interface StoredCustomTool extends CustomToolInput {
  created_at: string;
  updated_at: string;
}

/** The least scope a backend needs: plugins run commands, webhooks reach the network. */
export const backendScope = (t: CustomToolInput["backend"]["type"]) => (t === "plugin" ? "execute" : "network");

/**
 * The tools' catalog: GET /v1/tools lists every tool's definition as the model sees it, or the
 * provider's own shape. Tool calls are tools.ts.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { toolsForTenant } from "../../tools/custom/tool.js";
import type { AppDeps } from "../deps.js";
import { authenticateTenant } from "../auth/middleware.js";
import { exportTools, TOOL_FORMATS } from "../../contract/formats.js";
import { usableTools } from "../../run/toolset.js";
import { toolDefinition, type Tool } from "../../contract/tool.js";
import { secureRoute } from "./access.js";
import { newApp } from "./common.js";

/**
 * GET /v1/tools: every tool's definition, as the model sees it; ?format=openai|anthropic|mcp gives
 * the provider's own shape (lib/doors/formats.ts). Public: without a key it lists every tool; with a
 * valid API key (Authorization: Bearer) only the tools that key may use. Being public, it refuses no
 * credential: one that is not a valid key (the admin token, a typo) lists every tool.
 */
export function catalogApp(tools: readonly Tool[], deps: AppDeps) {
  const app = newApp();
  const listedFor = async (headers: Headers, url: URL): Promise<readonly Tool[]> => {
    if (!headers.get("authorization")) return tools;
    const auth = await authenticateTenant(deps, headers, url).then((a) => a, () => null);
    return auth ? usableTools(await toolsForTenant(deps, tools, auth.tenant), auth) : tools;
  };
  const ToolDef = z.object({
    name: z.string(),
    description: z.string(),
    summary: z.string(),
    category: z.string(),
    permission: z.string(),
    annotations: z.object({ title: z.string(), readOnlyHint: z.boolean(), destructiveHint: z.boolean(), idempotentHint: z.boolean(), openWorldHint: z.boolean() }),
    input_schema: z.record(z.string(), z.unknown()),
    output_schema: z.record(z.string(), z.unknown()),
  });
  app.openapi(
    createRoute(secureRoute(deps, { auth: "public" }, {
      method: "get",
      path: "/v1/tools",
      tags: ["tools"],
      summary: "List the tools, with the description and JSON Schemas the model sees",
      description: "format: toolshed (default), openai (Responses API function tools, strict mode), anthropic (Messages API tools) or mcp (MCP Tool objects). With an API key, only the tools that key may use (its scopes and its tools preset or list).",
      request: { query: z.object({ format: z.enum(TOOL_FORMATS).optional().openapi({ description: "The shape of each tool (default: toolshed)" }) }) },
      responses: {
        200: { description: "Tool definitions (their shape follows format)", content: { "application/json": { schema: z.object({ tools: z.array(z.union([ToolDef, z.record(z.string(), z.unknown())])) }) } } },
      },
    })),
    async (c) => {
      const format = c.req.valid("query").format ?? "toolshed";
      const listed = await listedFor(c.req.raw.headers, new URL(c.req.url));
      return c.json({ tools: format === "toolshed" ? listed.map(toolDefinition) : exportTools(listed, format) }, 200);
    },
  );
  return app;
}

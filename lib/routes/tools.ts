/** POST /v1/workspaces/{ws}/tools/{tool}: one stateless Hono app per tool, and the tool catalog. */
import { createRoute, z } from "@hono/zod-openapi";
import { requireTenant } from "../auth/middleware.js";
import type { AppDeps } from "../deps.js";
import { ToolError } from "../errors.js";
import { toToolError } from "../http.js";
import { checkSessionId, RecordStore } from "../records/store.js";
import { MAX_OUTPUT_CHARS, toolDefinition, truncateMiddle, type Tool } from "../tool.js";
import { Workspace } from "../workspace/workspace.js";
import { errorResponses, layerDeps, newApp, openWorkspace, WsParam } from "./common.js";

const SuccessSchema = z.object({
  ok: z.literal(true),
  tool: z.string(),
  title: z.string(),
  output: z.string().openapi({ description: "The text for the model." }),
  data: z.record(z.string(), z.unknown()).openapi({ description: "The same result, structured." }),
  usage: z.object({ ms: z.number(), bytes_read: z.number(), bytes_written: z.number() }),
});

/** A tool as a stateless Hono app: auth, validation, workspace, envelope, usage. Mountable or deployable alone. */
export function toolApp(tool: Tool, deps: AppDeps) {
  const app = newApp();
  const route = createRoute({
    method: "post",
    path: `/v1/workspaces/{ws}/tools/${tool.name}`,
    operationId: `tool_${tool.name}`,
    tags: ["tools"],
    summary: tool.description.split("\n")[0],
    description: tool.description,
    security: [{ Bearer: [] }],
    middleware: [
      async (c, next) => {
        c.set("tool", tool.name);
        await next();
      },
      requireTenant(deps),
    ],
    request: {
      params: WsParam,
      headers: z.object({ "x-session-id": z.string().optional().openapi({ description: "The agent's conversation; scopes file records (default: default)." }) }),
      body: { required: true, content: { "application/json": { schema: tool.input } } },
    },
    responses: {
      200: { description: "Tool result", content: { "application/json": { schema: SuccessSchema } } },
      ...errorResponses(400, 401, 403, 404, 408, 409, 413, 415, 422, 429, 500, 502, 503),
    },
  });
  app.openapi(route, async (c) => {
    const started = Date.now();
    const auth = c.get("auth");
    const { ws: wsId } = c.req.valid("param");
    if (!auth.scopes.includes(tool.permission)) {
      throw new ToolError("PERMISSION_DENIED", `The ${tool.name} tool needs the '${tool.permission}' scope, which this API key does not have.`, { needed: tool.permission });
    }
    const session = checkSessionId(c.req.header("x-session-id") ?? "default");
    const opened = await openWorkspace(layerDeps(deps), auth.tenant, wsId);
    const ws = new Workspace({
      driver: opened.driver,
      records: new RecordStore(deps.kv, `${auth.tenant}/${wsId}`, session),
      tenant: auth.tenant,
      id: wsId,
      listeners: deps.listeners ?? [],
    });
    const usage = () => ({ ms: Date.now() - started, bytes_read: ws.bytesRead, bytes_written: ws.bytesWritten });
    const meter = (ok: boolean, code?: string) => deps.onUsage?.({ tenant: auth.tenant, workspace: wsId, tool: tool.name, ok, ...(code ? { code } : {}), ...usage() });
    try {
      const result = await tool.execute(c.req.valid("json") as never, { ws, session, auth, deps, signal: c.req.raw.signal });
      const output = truncateMiddle(result.output, MAX_OUTPUT_CHARS).text;
      meter(true);
      return c.json({ ok: true as const, tool: tool.name, title: result.title, output, data: result.data, usage: usage() }, 200);
    } catch (err) {
      meter(false, toToolError(err).code);
      throw err;
    }
  });
  return app;
}

/** GET /v1/tools: every tool's definition, as the model sees it. */
export function catalogApp(tools: readonly Tool[]) {
  const app = newApp();
  const ToolDef = z.object({ name: z.string(), description: z.string(), category: z.string(), permission: z.string(), input_schema: z.record(z.string(), z.unknown()) });
  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/tools",
      tags: ["tools"],
      summary: "List the tools, with the description and JSON Schema the model sees",
      responses: { 200: { description: "Tool definitions", content: { "application/json": { schema: z.object({ tools: z.array(ToolDef) }) } } } },
    }),
    (c) => c.json({ tools: tools.map(toolDefinition) }, 200),
  );
  return app;
}

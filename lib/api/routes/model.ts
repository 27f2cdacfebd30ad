/** Admin API: a tenant's model endpoint for `task` subagents (lib/tools/task/model-config.ts). The api_key is never returned. */
import { createRoute, z } from "@hono/zod-openapi";
import { getTenant } from "../auth/keys.js";
import type { AppDeps } from "../deps.js";
import { ToolError } from "../../shared/errors.js";
import { deleteModelConfig, loadModelConfig, ModelConfigSchema, ModelConfigView, modelView, saveModelConfig } from "../../tools/task/model-config.js";
import { secureRoute } from "./access.js";
import { errorResponses, newApp } from "./common.js";

const TenantParam = z.object({ tenant: z.string().openapi({ param: { name: "tenant", in: "path" } }) });
const adminOnly = { auth: "admin" } as const;
const path = "/v1/admin/tenants/{tenant}/model";
const view = { content: { "application/json": { schema: ModelConfigView } } };

export function modelApp(deps: AppDeps) {
  const app = newApp();
  app.openapi(
    createRoute(secureRoute(deps, adminOnly, {
      method: "get", path, tags: ["admin"], summary: "Get a tenant's model endpoint for task subagents (never the api_key)",
      request: { params: TenantParam },
      responses: { 200: { description: "The endpoint: api_key_set and its last 4 characters, never the key", ...view }, ...errorResponses(401, 403, 404) },
    })),
    async (c) => {
      const { tenant } = c.req.valid("param");
      await getTenant(deps.storage, tenant);
      const cfg = await loadModelConfig(deps.kv, tenant);
      if (!cfg) throw new ToolError("NOT_FOUND", `Tenant ${tenant} has no model endpoint; set one with PUT ${path.replace("{tenant}", tenant)}.`, { tenant });
      return c.json(modelView(cfg), 200);
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, adminOnly, {
      method: "put", path, tags: ["admin"], summary: "Set a tenant's model endpoint for task subagents",
      description: "`base_url`: an OpenAI-compatible API base (POST {base_url}/chat/completions); it must pass the SSRF guard of web_fetch (public http/https only). `api_key` is stored as a secret and never returned. `max_steps` (default 20, max 100) and `max_seconds` (default 300, max 900) bound every task.",
      request: { params: TenantParam, body: { required: true, content: { "application/json": { schema: ModelConfigSchema } } } },
      responses: { 200: { description: "The stored endpoint (without the key)", ...view }, ...errorResponses(400, 401, 403, 404) },
    })),
    async (c) => {
      const { tenant } = c.req.valid("param");
      await getTenant(deps.storage, tenant);
      const cfg = c.req.valid("json");
      await saveModelConfig(deps.kv, tenant, cfg, deps.webFetch);
      return c.json(modelView(cfg), 200);
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, adminOnly, {
      method: "delete", path, tags: ["admin"], summary: "Remove a tenant's model endpoint (task then answers LLM_ASSIST_REQUIRED)",
      request: { params: TenantParam },
      responses: { 200: { description: "Removed", content: { "application/json": { schema: z.object({ deleted: z.literal(true) }) } } }, ...errorResponses(401, 403, 404) },
    })),
    async (c) => {
      const { tenant } = c.req.valid("param");
      await getTenant(deps.storage, tenant);
      await deleteModelConfig(deps.kv, tenant);
      return c.json({ deleted: true as const }, 200);
    },
  );
  return app;
}

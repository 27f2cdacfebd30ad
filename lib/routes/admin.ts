/** Admin API (bearer TOOLSHED_ADMIN_TOKEN): tenants and their API keys. */
import { createRoute, z } from "@hono/zod-openapi";
import { createApiKey, createTenant, getTenant, revokeApiKey, SCOPES } from "../auth/keys.js";
import { requireAdmin } from "../auth/middleware.js";
import type { AppDeps } from "../deps.js";
import { errorResponses, newApp } from "./common.js";

const TenantSchema = z.object({ id: z.string(), name: z.string(), created_at: z.string() }).openapi("Tenant");
const TenantParam = z.object({ tenant: z.string().openapi({ param: { name: "tenant", in: "path" } }) });
const security = [{ AdminBearer: [] }];

export function adminApp(deps: AppDeps) {
  const app = newApp();
  const admin = requireAdmin(deps);
  app.openapi(
    createRoute({
      method: "post", path: "/v1/admin/tenants", tags: ["admin"], security, middleware: admin,
      summary: "Create a tenant",
      request: { body: { required: true, content: { "application/json": { schema: z.object({ id: z.string().optional().openapi({ example: "acme" }), name: z.string().max(200).optional() }) } } } },
      responses: { 201: { description: "Created", content: { "application/json": { schema: TenantSchema } } }, ...errorResponses(400, 401, 403, 409) },
    }),
    async (c) => c.json(await createTenant(deps.storage, c.req.valid("json")), 201),
  );
  app.openapi(
    createRoute({
      method: "get", path: "/v1/admin/tenants/{tenant}", tags: ["admin"], security, middleware: admin,
      summary: "Get a tenant",
      request: { params: TenantParam },
      responses: { 200: { description: "Tenant", content: { "application/json": { schema: TenantSchema } } }, ...errorResponses(401, 403, 404) },
    }),
    async (c) => c.json(await getTenant(deps.storage, c.req.valid("param").tenant), 200),
  );
  app.openapi(
    createRoute({
      method: "post", path: "/v1/admin/tenants/{tenant}/keys", tags: ["admin"], security, middleware: admin,
      summary: "Create an API key (shown once)",
      request: {
        params: TenantParam,
        body: { required: false, content: { "application/json": { schema: z.object({ name: z.string().max(200).optional(), scopes: z.array(z.enum(SCOPES)).min(1).optional().openapi({ description: "Default: read, write, execute." }) }) } } },
      },
      responses: {
        201: { description: "The key; it is not shown again", content: { "application/json": { schema: z.object({ key: z.string(), key_id: z.string(), tenant: z.string(), name: z.string(), scopes: z.array(z.string()), created_at: z.string() }) } } },
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const body = (await c.req.json().catch(() => ({}))) as { name?: string; scopes?: (typeof SCOPES)[number][] };
      const parsed = z.object({ name: z.string().max(200).optional(), scopes: z.array(z.enum(SCOPES)).min(1).optional() }).parse(body);
      const { key, record } = await createApiKey(deps.kv, deps.storage, c.req.valid("param").tenant, parsed);
      return c.json({ key, ...record }, 201);
    },
  );
  app.openapi(
    createRoute({
      method: "delete", path: "/v1/admin/tenants/{tenant}/keys/{key_id}", tags: ["admin"], security, middleware: admin,
      summary: "Revoke an API key",
      request: { params: TenantParam.extend({ key_id: z.string().openapi({ param: { name: "key_id", in: "path" } }) }) },
      responses: { 200: { description: "Revoked", content: { "application/json": { schema: z.object({ revoked: z.literal(true), key_id: z.string() }) } } }, ...errorResponses(401, 403, 404) },
    }),
    async (c) => {
      const { tenant, key_id } = c.req.valid("param");
      await revokeApiKey(deps.kv, tenant, key_id);
      return c.json({ revoked: true as const, key_id }, 200);
    },
  );
  return app;
}

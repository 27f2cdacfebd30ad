/** Admin API (bearer TOOLSHED_ADMIN_TOKEN): tenants and their API keys. */
import { createRoute, z } from "@hono/zod-openapi";
import { createApiKey, createTenant, getTenant, keyInfoOf, listTenants, MAX_LIST_PAGE, revokeApiKey } from "../auth/keys.js";
import { keyListCursors, listApiKeys } from "../auth/key-listing.js";
import { KeyBody, KeyInfoSchema, newKeyOf, toolsAsked } from "./keys.js";
import { catalogForLists } from "../../tools/custom/tool.js";
import type { AppDeps } from "../deps.js";
import type { Tool } from "../../contract/tool.js";
import { secureRoute } from "./access.js";
import { errorResponses, newApp } from "./common.js";
import { LimitsSchema } from "./limits.js";

const TenantSchema = z.object({ id: z.string(), name: z.string(), created_at: z.string() }).openapi("Tenant");
const TenantParam = z.object({ tenant: z.string().openapi({ param: { name: "tenant", in: "path" } }) });
const Page = z.object({
  cursor: z.string().max(4096).optional().openapi({ description: "The cursor of the previous page" }),
  limit: z.coerce.number().int().min(1).max(MAX_LIST_PAGE).optional().openapi({ description: `Entries per page (default and max ${MAX_LIST_PAGE})` }),
});

export function adminApp(deps: AppDeps, tools: readonly Tool[]) {
  const app = newApp();
  const admin = { auth: "admin" } as const;
  const cursors = keyListCursors(deps); // the same as GET /v1/keys' (a cursor of one pages the other)
  app.openapi(
    createRoute(secureRoute(deps, admin, {
      method: "post", path: "/v1/admin/tenants", tags: ["admin"],
      summary: "Create a tenant",
      request: { body: { required: true, content: { "application/json": { schema: z.object({ id: z.string().optional().openapi({ example: "acme" }), name: z.string().max(200).optional() }).strict() } } } },
      responses: { 201: { description: "Created", content: { "application/json": { schema: TenantSchema } } }, ...errorResponses(400, 401, 403, 409, 429) },
    })),
    async (c) => c.json(await createTenant(deps.storage, c.req.valid("json")), 201),
  );
  app.openapi(
    createRoute(secureRoute(deps, admin, {
      method: "get", path: "/v1/admin/tenants", tags: ["admin"],
      summary: "List tenants (paged, in id order)",
      request: { query: Page },
      responses: { 200: { description: "Tenants", content: { "application/json": { schema: z.object({ tenants: z.array(TenantSchema), cursor: z.string().optional() }) } } }, ...errorResponses(400, 401, 403, 429) },
    })),
    async (c) => c.json(await listTenants(deps.storage, c.req.valid("query")), 200),
  );
  app.openapi(
    createRoute(secureRoute(deps, admin, {
      method: "get", path: "/v1/admin/tenants/{tenant}", tags: ["admin"],
      summary: "Get a tenant",
      request: { params: TenantParam },
      responses: { 200: { description: "Tenant", content: { "application/json": { schema: TenantSchema } } }, ...errorResponses(401, 403, 404, 429) },
    })),
    async (c) => c.json(await getTenant(deps.storage, c.req.valid("param").tenant), 200),
  );
  app.openapi(
    createRoute(secureRoute(deps, admin, {
      method: "get", path: "/v1/admin/tenants/{tenant}/keys", tags: ["admin"],
      summary: "List a tenant's API keys (paged; never the key itself)",
      description: "Key id, name, scopes and creation time of each key. Keys are kept in KV, whose listings are eventually consistent: a key created or revoked in the last minute may not show yet.",
      request: { params: TenantParam, query: Page },
      responses: { 200: { description: "API keys", content: { "application/json": { schema: z.object({ keys: z.array(KeyInfoSchema), cursor: z.string().optional() }) } } }, ...errorResponses(400, 401, 403, 404, 429) },
    })),
    async (c) => c.json(await listApiKeys(deps.kv, deps.storage, c.req.valid("param").tenant, c.req.valid("query"), cursors), 200),
  );
  app.openapi(
    createRoute(secureRoute(deps, admin, {
      method: "post", path: "/v1/admin/tenants/{tenant}/keys", tags: ["admin"],
      summary: "Create an API key (shown once)",
      request: { params: TenantParam, body: { required: false, content: { "application/json": { schema: KeyBody } } } },
      responses: {
        201: { description: "The key; it is not shown again", content: { "application/json": { schema: KeyInfoSchema.extend({ key: z.string() }) } } },
        ...errorResponses(400, 401, 403, 404, 429),
      },
    })),
    async (c) => {
      // The body is optional; without a JSON content type the validator skips it, so newKeyOf parses it.
      const { key, record } = await createApiKey(deps.kv, deps.storage, c.req.valid("param").tenant, newKeyOf(c.get("json"), await catalogForLists(deps, tools, c.req.valid("param").tenant, [toolsAsked(c.get("json"))])));
      return c.json({ key, ...keyInfoOf(record) }, 201);
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, admin, {
      method: "delete", path: "/v1/admin/tenants/{tenant}/keys/{key_id}", tags: ["admin"],
      summary: "Revoke an API key",
      request: { params: TenantParam.extend({ key_id: z.string().openapi({ param: { name: "key_id", in: "path" } }) }) },
      responses: { 200: { description: "Revoked", content: { "application/json": { schema: z.object({ revoked: z.literal(true), key_id: z.string() }) } } }, ...errorResponses(401, 403, 404, 429) },
    })),
    async (c) => {
      const { tenant, key_id } = c.req.valid("param");
      await revokeApiKey(deps.kv, tenant, key_id, deps.apiKeys);
      return c.json({ revoked: true as const, key_id }, 200);
    },
  );
  return app;
}

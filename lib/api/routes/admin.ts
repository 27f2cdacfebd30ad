/** Admin API (bearer TOOLSHED_ADMIN_TOKEN): tenants and their API keys. */
import { createRoute, z } from "@hono/zod-openapi";
import { parseJsonBody } from "../http.js";
import { createApiKey, createTenant, getTenant, listApiKeys, listTenants, MAX_LIST_PAGE, revokeApiKey, SCOPES } from "../auth/keys.js";
import type { AppDeps } from "../deps.js";
import type { Tool } from "../../contract/tool.js";
import { keyScopesFor, parseToolList, PRESET_NAMES } from "../../run/toolset.js";
import { secureRoute } from "./access.js";
import { errorResponses, newApp } from "./common.js";
import { LimitsSchema } from "./limits.js";

const TenantSchema = z.object({ id: z.string(), name: z.string(), created_at: z.string() }).openapi("Tenant");
const KeyInfoSchema = z.object({ key_id: z.string(), tenant: z.string(), name: z.string(), scopes: z.array(z.enum(SCOPES)), tools: z.union([z.string(), z.array(z.string())]).optional().openapi({ description: "A preset or tool names (listings show \"all\" for an unlimited key)" }), limits: LimitsSchema.optional(), created_at: z.string() }).openapi("ApiKeyInfo");
/** A preset or a list of tool (and preset) names; checked against the tools by parseToolList. */
export const ToolsField = z.union([z.string(), z.array(z.string()).max(200)]).openapi({ description: `The tools allowed: a preset (${PRESET_NAMES.join(", ")}) or a list of tool names (preset names in a list add their tools). Default: all. They also bound every route: only the scopes these tools need are usable (readonly: read).`, example: "readonly" });
const TenantParam = z.object({ tenant: z.string().openapi({ param: { name: "tenant", in: "path" } }) });
const Page = z.object({
  cursor: z.string().max(4096).optional().openapi({ description: "The cursor of the previous page" }),
  limit: z.coerce.number().int().min(1).max(MAX_LIST_PAGE).optional().openapi({ description: `Entries per page (default and max ${MAX_LIST_PAGE})` }),
});
const KeyBody = z.object({ name: z.string().max(200).optional(), scopes: z.array(z.enum(SCOPES)).min(1).optional().openapi({ description: "Default: read, write, execute, narrowed to what `tools` need. Scopes beyond what the tools need are refused (a key acts by every route only with the scopes its tools need); approve and manage need tools \"all\"." }), tools: ToolsField.optional(), limits: LimitsSchema.optional().openapi({ description: "The key's own limits (docs/limits-and-quotas.md); each applies as the smaller of the key's and the tenant's" }) });

export function adminApp(deps: AppDeps, tools: readonly Tool[]) {
  const app = newApp();
  const admin = { auth: "admin" } as const;
  app.openapi(
    createRoute(secureRoute(deps, admin, {
      method: "post", path: "/v1/admin/tenants", tags: ["admin"],
      summary: "Create a tenant",
      request: { body: { required: true, content: { "application/json": { schema: z.object({ id: z.string().optional().openapi({ example: "acme" }), name: z.string().max(200).optional() }) } } } },
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
    async (c) => c.json(await listApiKeys(deps.kv, deps.storage, c.req.valid("param").tenant, c.req.valid("query")), 200),
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
      // The body is optional; without a JSON content type the validator skips it, so parse it here too.
      const parsed = parseJsonBody(KeyBody, c.get("json") ?? {});
      const { tools: given, scopes: asked, ...rest } = parsed;
      const list = given !== undefined ? parseToolList(given, tools) : undefined;
      // Scopes never exceed what the key's tools need (lib/run/toolset.ts): refused, or narrowed from the default.
      const scopes = keyScopesFor(asked, list, tools);
      const { key, record } = await createApiKey(deps.kv, deps.storage, c.req.valid("param").tenant, { ...rest, scopes, ...(list !== undefined ? { tools: list } : {}) });
      return c.json({ key, ...record, tools: record.tools ?? "all" }, 201);
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

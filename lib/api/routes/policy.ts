/** Admin API: a tenant's policy (today: the web policy of web_fetch and web_search). */
import { createRoute, z } from "@hono/zod-openapi";
import { getTenant } from "../auth/keys.js";
import type { AppDeps } from "../deps.js";
import { loadTenantPolicy, saveTenantPolicy, TenantPolicySchema } from "../../tools/web/policy.js";
import { secureRoute } from "./access.js";
import { errorResponses, newApp } from "./common.js";

const TenantParam = z.object({ tenant: z.string().openapi({ param: { name: "tenant", in: "path" } }) });
const adminOnly = { auth: "admin" } as const;
const ok = { content: { "application/json": { schema: TenantPolicySchema } } };

export function policyApp(deps: AppDeps) {
  const app = newApp();
  app.openapi(
    createRoute(secureRoute(deps, adminOnly, {
      method: "get", path: "/v1/admin/tenants/{tenant}/policy", tags: ["admin"],
      summary: "Get a tenant's policy",
      request: { params: TenantParam },
      responses: { 200: { description: "The policy ({} when none is set)", ...ok }, ...errorResponses(401, 403, 404) },
    })),
    async (c) => {
      const { tenant } = c.req.valid("param");
      await getTenant(deps.storage, tenant);
      return c.json(await loadTenantPolicy(deps.kv, tenant), 200);
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, adminOnly, {
      method: "put", path: "/v1/admin/tenants/{tenant}/policy", tags: ["admin"],
      summary: "Replace a tenant's policy",
      description: "`web.allowed_domains`: when set, web_fetch reaches only these domains (and subdomains); others wait for approval (NEEDS_APPROVAL, see `gate`). `web.blocked_domains`: never fetched, removed from search results.",
      request: { params: TenantParam, body: { required: true, content: { "application/json": { schema: TenantPolicySchema } } } },
      responses: { 200: { description: "The stored policy", ...ok }, ...errorResponses(400, 401, 403, 404) },
    })),
    async (c) => {
      const { tenant } = c.req.valid("param");
      await getTenant(deps.storage, tenant);
      const policy = c.req.valid("json");
      await saveTenantPolicy(deps.kv, tenant, policy, deps.policies);
      return c.json(policy, 200);
    },
  );
  return app;
}

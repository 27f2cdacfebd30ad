/** Admin API: a tenant's limits (lib/limits/; docs/limits-and-quotas.md). */
import { createRoute, z } from "@hono/zod-openapi";
import type { AppDeps } from "../deps.js";
import { getTenant } from "../auth/keys.js";
import { DEFAULT_LIMITS, effectiveLimits, LIMIT_FIELDS, MAX_LIMIT, type LimitField } from "../../limits/fields.js";
import { ToolError } from "../../shared/errors.js";
import { secureRoute } from "./access.js";
import { errorResponses, newApp } from "./common.js";

const WHAT: Record<LimitField, string> = {
  calls_per_minute: "Calls per minute through every tenant route (a token bucket refilled continuously)",
  concurrent_runs: "bash/run_code commands running at once",
  storage_bytes: "Bytes stored across the tenant's workspaces",
  files_per_workspace: "Files in one workspace",
  workspaces: "Workspaces (checked at create and fork)",
  background_tasks: "Background tasks running at once",
  checkpoints_per_workspace: "Checkpoints kept in one workspace (checked when one is made: POST checkpoints, and a fork without a given checkpoint)",
};
const field = (f: LimitField) => z.number().int().min(0).max(MAX_LIMIT).optional().openapi({ description: `${WHAT[f]} (default ${DEFAULT_LIMITS[f]})` });
/** The limit fields, all optional: a tenant's body, and a key's `limits`. */
export const LimitsSchema = z.object(Object.fromEntries(LIMIT_FIELDS.map((f) => [f, field(f)])) as Record<LimitField, ReturnType<typeof field>>).strict().openapi("Limits");
const Effective = z.object(Object.fromEntries(LIMIT_FIELDS.map((f) => [f, z.number()]))).openapi("EffectiveLimits");
const Answer = z.object({ tenant: z.string(), limits: LimitsSchema.openapi({ description: "As set (fields left out take the defaults)" }), effective: Effective });
const TenantParam = z.object({ tenant: z.string().openapi({ param: { name: "tenant", in: "path" } }) });

export function limitsApp(deps: AppDeps) {
  const app = newApp();
  const admin = { auth: "admin" } as const;
  const store = () => {
    if (!deps.limits) throw new ToolError("UNAVAILABLE", "Limits are not enabled on this deployment (no limits store: the LIMITS Durable Object binding on Workers, or its operator turned limits off: TOOLSHED_BUSINESS_OFF).");
    return deps.limits;
  };
  app.openapi(
    createRoute(secureRoute(deps, admin, {
      method: "get", path: "/v1/admin/tenants/{tenant}/limits", tags: ["admin"],
      summary: "Get a tenant's limits",
      request: { params: TenantParam },
      responses: { 200: { description: "The limits as set, and as they apply", content: { "application/json": { schema: Answer } } }, ...errorResponses(401, 403, 404, 429, 503) },
    })),
    async (c) => {
      const { tenant } = c.req.valid("param");
      await getTenant(deps.storage, tenant);
      const limits = await store().get(tenant);
      return c.json({ tenant, limits, effective: effectiveLimits(limits) }, 200);
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, admin, {
      method: "put", path: "/v1/admin/tenants/{tenant}/limits", tags: ["admin"],
      summary: "Set a tenant's limits (replaces them; fields left out take the defaults)",
      description: "Takes effect on the next call on every isolate (the limits live in the tenant's limits object). A key's own limits apply as the smaller of the key's and these.",
      request: { params: TenantParam, body: { required: true, content: { "application/json": { schema: LimitsSchema } } } },
      responses: { 200: { description: "The limits as set, and as they apply", content: { "application/json": { schema: Answer } } }, ...errorResponses(400, 401, 403, 404, 429, 503) },
    })),
    async (c) => {
      const { tenant } = c.req.valid("param");
      await getTenant(deps.storage, tenant);
      const body = c.req.valid("json");
      const limits = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
      await store().set(tenant, limits);
      return c.json({ tenant, limits, effective: effectiveLimits(limits) }, 200);
    },
  );
  return app;
}

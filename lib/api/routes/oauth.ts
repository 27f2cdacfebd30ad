/**
 * OAuth as a resource server (docs/oauth.md): the admin routes of a tenant's trusted issuers
 * (lib/api/auth/oauth-config.ts), and the public Protected Resource Metadata (RFC 9728) of the
 * whole API and of each MCP URL. We never issue tokens: the metadata points at the tenant's own
 * authorization servers.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../http.js";
import { getTenant } from "../auth/keys.js";
import type { AppDeps } from "../deps.js";
import { ToolError } from "../../shared/errors.js";
import { ID_PATTERN } from "../../layout/paths.js";
import { SCOPES } from "../../contract/caller.js";
import { webAccess } from "../../tools/web/transport.js";
import { deleteOAuthConfig, loadOAuthConfig, OAuthConfigInput, OAuthConfigView, saveOAuthConfig, type OAuthConfig } from "../auth/oauth-config.js";
import { PRM_PATH, resourceBase, resourceUrl, tenantNamed } from "../auth/resource.js";
import { addRoute, secureRoute } from "./access.js";
import { errorResponses, newApp } from "./common.js";

const TenantParam = z.object({ tenant: z.string().openapi({ param: { name: "tenant", in: "path" } }) });
const adminOnly = { auth: "admin" } as const;
const path = "/v1/admin/tenants/{tenant}/oauth";
const view = { content: { "application/json": { schema: OAuthConfigView } } };

/** The scope names a client should ask the tenant's authorization server for: the issuers' mapped names where they have a scope_map, else ours. */
function scopesToRequest(config: OAuthConfig | null): string[] {
  if (!config) return [...SCOPES];
  const names = config.issuers.flatMap((i) => (i.scope_map ? Object.keys(i.scope_map) : [...SCOPES]));
  return [...new Set(names)];
}

export function oauthApp(deps: AppDeps) {
  const app = newApp();
  app.openapi(
    createRoute(secureRoute(deps, adminOnly, {
      method: "get", path, tags: ["admin"], summary: "Get the OAuth issuers a tenant trusts",
      request: { params: TenantParam },
      responses: { 200: { description: "The tenant's OAuth configuration", ...view }, ...errorResponses(401, 403, 404) },
    })),
    async (c) => {
      const { tenant } = c.req.valid("param");
      await getTenant(deps.storage, tenant);
      const config = await loadOAuthConfig(deps.storage, tenant);
      if (!config) throw new ToolError("NOT_FOUND", `Tenant ${tenant} trusts no OAuth issuer; add one with PUT ${path.replace("{tenant}", tenant)}.`, { tenant });
      return c.json(config, 200);
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, adminOnly, {
      method: "put", path, tags: ["admin"], summary: "Set the OAuth issuers a tenant trusts (access tokens then act as that tenant)",
      description:
        "Replaces the list. Each issuer's metadata and keys are read through the SSRF guard (public https only). A token acts as this tenant when its `iss` is a listed issuer and its `aud` holds that issuer's `audience` (default: this deployment's resource URL) or the resource URL of the request (RFC 8707). One (issuer, audience) pair belongs to one tenant: ALREADY_EXISTS when another tenant holds it. See docs/oauth.md.",
      request: { params: TenantParam, body: { required: true, content: { "application/json": { schema: OAuthConfigInput } } } },
      responses: { 200: { description: "The stored configuration", ...view }, ...errorResponses(400, 401, 403, 404, 409, 503) },
    })),
    async (c) => {
      const { tenant } = c.req.valid("param");
      await getTenant(deps.storage, tenant);
      const old = await loadOAuthConfig(deps.storage, tenant);
      const config = await saveOAuthConfig(deps.storage, tenant, c.req.valid("json"), resourceBase(deps.syncUrl, new URL(c.req.url)), webAccess(deps.webFetch, "oauth_issuer"));
      for (const i of [...(old?.issuers ?? []), ...config.issuers]) deps.oauthTrusts?.forget(i.issuer);
      return c.json(config, 200);
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, adminOnly, {
      method: "delete", path, tags: ["admin"], summary: "Trust no OAuth issuer any more (tokens stop working at once in this isolate, within seconds elsewhere)",
      request: { params: TenantParam },
      responses: { 200: { description: "Removed", content: { "application/json": { schema: z.object({ deleted: z.boolean() }) } } }, ...errorResponses(401, 403, 404) },
    })),
    async (c) => {
      const { tenant } = c.req.valid("param");
      await getTenant(deps.storage, tenant);
      const old = await loadOAuthConfig(deps.storage, tenant);
      const deleted = await deleteOAuthConfig(deps.storage, tenant);
      for (const i of old?.issuers ?? []) deps.oauthTrusts?.forget(i.issuer);
      return c.json({ deleted }, 200);
    },
  );

  const metadataDoc = {
    tags: ["meta"],
    summary: "OAuth Protected Resource Metadata (RFC 9728) of the API, or of the MCP URL after the well-known path",
    description: "`?tenant=<id>` names the tenant whose authorization servers are listed (and is part of the resource URL); without it, `authorization_servers` is absent. See docs/oauth.md.",
    request: { query: z.object({ tenant: z.string().optional().openapi({ description: "The tenant whose authorization servers are listed" }) }) },
    responses: { 200: { description: "The metadata" }, 404: { description: "Not a resource of this API" } },
  };
  const metadata = async (c: Context<AppEnv>) => {
    const url = new URL(c.req.url);
    const rest = url.pathname.slice(PRM_PATH.length);
    // The resource whose metadata this is: the well-known path removed (RFC 9728 §3.1).
    const target = new URL(`${rest || "/"}${url.search}`, url.origin);
    if (rest && resourceUrl("", target).split("?")[0] !== rest) throw new ToolError("NOT_FOUND", `${rest} is not a protected resource of this API: its resources are the API itself (${PRM_PATH}) and each MCP URL (${PRM_PATH}/v1/workspaces/{ws}/mcp).`);
    const base = resourceBase(deps.syncUrl, url);
    const tenant = tenantNamed(url);
    const config = tenant !== null && ID_PATTERN.test(tenant) ? await loadOAuthConfig(deps.storage, tenant) : null;
    const servers = [...new Set(config?.issuers.map((i) => i.issuer) ?? [])];
    return c.json(
      {
        resource: resourceUrl(base, target),
        ...(servers.length ? { authorization_servers: servers } : {}),
        scopes_supported: scopesToRequest(config),
        bearer_methods_supported: ["header"],
        resource_name: "Toolshed",
        resource_documentation: `${base}/docs`,
      },
      200,
      // Public metadata: browser-based MCP clients read it from their own origin.
      { "cache-control": "public, max-age=300", "access-control-allow-origin": "*" },
    );
  };
  addRoute(app, deps, { method: "get", path: PRM_PATH, access: { auth: "public" }, doc: metadataDoc }, metadata);
  addRoute(app, deps, { method: "get", path: `${PRM_PATH}/*`, access: { auth: "public" }, wildcard: "resource_path", doc: metadataDoc }, metadata);
  return app;
}

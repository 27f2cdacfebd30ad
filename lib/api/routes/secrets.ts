/**
 * A tenant's secrets (docs/secrets.md): /v1/secrets[/{name}] with a key holding `manage`, and the
 * same under /v1/admin/tenants/{tenant}/secrets for the admin token. A value goes in, encrypted
 * (lib/tools/secrets/crypto.ts), and never comes out: answers show the name, the destinations and
 * the times. Without TOOLSHED_SECRETS_KEY on the deployment every route answers UNAVAILABLE.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { getTenant } from "../auth/keys.js";
import type { AppDeps } from "../deps.js";
import { ToolError } from "../../shared/errors.js";
import type { AppEnv } from "../http.js";
import { requireSecretsKey } from "../../tools/secrets/crypto.js";
import { checkSecretName, deleteSecret, putSecret, readSecrets, SecretInput, SecretView, viewOf } from "../../tools/secrets/store.js";
import { secureRoute } from "./access.js";
import type { Access } from "./route-policy.js";
import { errorResponses, newApp } from "./common.js";

const json = (schema: z.ZodType) => ({ content: { "application/json": { schema } } });
const NameParam = z.object({ name: z.string().openapi({ param: { name: "name", in: "path" }, example: "NPM_TOKEN" }) });
const TenantParam = z.object({ tenant: z.string().openapi({ param: { name: "tenant", in: "path" } }) });

const PUT_DESCRIPTION =
  "Creates or replaces a secret. `value` is stored encrypted and never returned. `destinations` say where it goes: web_fetch and webhooks add the header `header: format` ({value} replaced) to https:// requests whose host matches `host` (plain http:// to such a host is refused, nothing sent); commands with network get it through the egress proxy on requests they send as http://host/..., which the proxy sends on over https. The model and the sandbox never see the value: outputs show {{secret:NAME}} in its place. See docs/secrets.md.";

export function secretsApp(deps: AppDeps) {
  const app = newApp();
  const variants: { access: Access; base: string; params: z.ZodObject; tenantOf: (c: Context<AppEnv>) => Promise<string>; tag: string }[] = [
    { access: { auth: "tenant", scope: "manage" }, base: "/v1/secrets", params: z.object({}), tenantOf: async (c) => c.get("auth").tenant, tag: "secrets" },
    { access: { auth: "admin" }, base: "/v1/admin/tenants/{tenant}/secrets", params: TenantParam, tag: "admin", tenantOf: async (c) => (await getTenant(deps.storage, c.req.param("tenant") ?? "")).id },
  ];
  for (const v of variants) {
    const one = v.params.extend(NameParam.shape);
    app.openapi(
      createRoute(secureRoute(deps, v.access, { method: "get", path: v.base, tags: [v.tag], summary: "List the tenant's secrets (names, destinations, times; never a value)", request: { params: v.params }, responses: { 200: { description: "The secrets", ...json(z.object({ secrets: z.array(SecretView) })) }, ...errorResponses(401, 403, 404, 503) } })),
      async (c) => {
        requireSecretsKey(deps.secretsKey);
        return c.json({ secrets: (await readSecrets(deps.storage, await v.tenantOf(c))).secrets.map(viewOf) }, 200);
      },
    );
    app.openapi(
      createRoute(secureRoute(deps, v.access, { method: "get", path: `${v.base}/{name}`, tags: [v.tag], summary: "One secret (never its value)", request: { params: one }, responses: { 200: { description: "The secret", ...json(SecretView) }, ...errorResponses(401, 403, 404, 503) } })),
      async (c) => {
        requireSecretsKey(deps.secretsKey);
        const name = checkSecretName(c.req.param("name") ?? "");
        const found = (await readSecrets(deps.storage, await v.tenantOf(c))).secrets.find((s) => s.name === name);
        if (!found) throw new ToolError("NOT_FOUND", `No secret named ${name}. List them with GET ${v.base}.`);
        return c.json(viewOf(found), 200);
      },
    );
    app.openapi(
      createRoute(secureRoute(deps, v.access, { method: "put", path: `${v.base}/{name}`, tags: [v.tag], summary: "Set a secret and where it is sent", description: PUT_DESCRIPTION, request: { params: one, body: { required: true, ...json(SecretInput) } }, responses: { 200: { description: "Replaced (never the value)", ...json(SecretView) }, 201: { description: "Created (never the value)", ...json(SecretView) }, ...errorResponses(400, 401, 403, 404, 409, 413, 503) } })),
      async (c) => {
        const key = requireSecretsKey(deps.secretsKey);
        const { view, created } = await putSecret(deps.storage, key, await v.tenantOf(c), c.req.param("name") ?? "", c.req.valid("json") as z.infer<typeof SecretInput>);
        return c.json(view, created ? 201 : 200);
      },
    );
    app.openapi(
      createRoute(secureRoute(deps, v.access, { method: "delete", path: `${v.base}/{name}`, tags: [v.tag], summary: "Delete a secret (calls stop sending it at once)", request: { params: one }, responses: { 200: { description: "Deleted", ...json(z.object({ deleted: z.string() })) }, ...errorResponses(401, 403, 404, 409, 503) } })),
      async (c) => {
        requireSecretsKey(deps.secretsKey);
        const name = checkSecretName(c.req.param("name") ?? "");
        await deleteSecret(deps.storage, await v.tenantOf(c), name);
        return c.json({ deleted: name }, 200);
      },
    );
  }
  return app;
}

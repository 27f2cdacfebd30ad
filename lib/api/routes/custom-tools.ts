/**
 * Custom tools of a tenant: /v1/tools/custom[/{name}] with a key holding `manage`, and the same
 * under /v1/admin/tenants/{tenant}/tools/custom for the admin token. A webhook's secret is
 * returned once, at creation (or when a PUT gives a new one), never listed again.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { getTenant } from "../auth/keys.js";
import type { AppDeps } from "../deps.js";
import { ToolError } from "../../shared/errors.js";
import { randomId } from "../../shared/hash.js";
import type { AppEnv } from "../http.js";
import type { Tool } from "../../contract/tool.js";
import { CustomToolInput, MAX_CUSTOM_TOOLS, MAX_SCHEMA_BYTES, reservedNameRefusal, type StoredCustomTool } from "../../tools/custom/definition.js";
import { readCustomTools, updateCustomTools } from "../../tools/custom/store.js";
import { schemaValidator, toCustomTool } from "../../tools/custom/tool.js";
import { schemaShapeError } from "../../tools/custom/schema-shape.js";
import { checkReachable, webAccess } from "../../tools/web/transport.js";
import { secureRoute } from "./access.js";
import type { Access } from "./route-policy.js";
import { errorResponses, newApp } from "./common.js";

const Any = z.record(z.string(), z.unknown());
const json = (schema: z.ZodType) => ({ content: { "application/json": { schema } } });
const NameParam = z.object({ name: z.string().openapi({ param: { name: "name", in: "path" } }) });
const TenantParam = z.object({ tenant: z.string().openapi({ param: { name: "tenant", in: "path" } }) });

/** What listings show: everything but the webhook secret. */
function shown(t: StoredCustomTool) {
  if (t.backend.type !== "webhook") return t;
  const { secret: _s, ...backend } = t.backend;
  return { ...t, backend };
}

/** Checks a definition before it is stored: names, sizes, the schema, the backend (a webhook URL as it will be called). */
async function checked(deps: AppDeps, builtins: readonly Tool[], input: CustomToolInput): Promise<CustomToolInput> {
  const reserved = reservedNameRefusal(input.name, builtins.map((t) => t.name));
  if (reserved) throw reserved;
  if (JSON.stringify(input.input_schema).length > MAX_SCHEMA_BYTES) throw new ToolError("PAYLOAD_TOO_LARGE", `input_schema is larger than ${MAX_SCHEMA_BYTES} bytes.`);
  // The shape first (its message names the place), checked when saved only: a definition stored before this rule still loads.
  const shape = schemaShapeError(input.input_schema);
  if (shape) throw new ToolError("INVALID_ARGUMENT", `${shape}: a model provider refuses a whole tool list with such a schema in it. Fix input_schema and send the tool again.`, { field: "input_schema" });
  schemaValidator(input.input_schema);
  const b = input.backend;
  if (b.type === "plugin" && !b.command === !b.path) throw new ToolError("INVALID_ARGUMENT", "A plugin backend takes exactly one of command (a shell command) or path (an executable of the workspace).");
  if (b.type === "plugin" && b.path && (b.path.includes("..") || b.path.startsWith("/"))) throw new ToolError("INVALID_ARGUMENT", "backend.path is a workspace path (no '..', no leading '/'), e.g. tools/weather.py.");
  if (b.type === "webhook") {
    const access = webAccess(deps.webFetch, "webhook");
    const url = await checkReachable(b.url, access);
    if (url.protocol !== "https:" && !access.guard.allowLoopback) throw new ToolError("INVALID_ARGUMENT", "A webhook URL must be https://.");
  }
  const least = b.type === "plugin" ? "execute" : "network";
  if (input.permission && input.permission !== least) {
    throw new ToolError("INVALID_ARGUMENT", `A ${b.type} tool needs the '${least}' scope; permission can only be '${least}' (or left out).`);
  }
  return input;
}

export function customToolsApp(deps: AppDeps, builtins: readonly Tool[]) {
  const app = newApp();
  const variants: { access: Access; base: string; params: z.ZodObject; tenantOf: (c: Context<AppEnv>) => Promise<string>; tag: string }[] = [
    { access: { auth: "tenant", scope: "manage" }, base: "/v1/tools/custom", params: z.object({}), tenantOf: async (c) => c.get("auth").tenant, tag: "custom tools" },
    {
      access: { auth: "admin" }, base: "/v1/admin/tenants/{tenant}/tools/custom", params: TenantParam, tag: "admin",
      tenantOf: async (c) => (await getTenant(deps.storage, c.req.param("tenant") ?? "")).id,
    },
  ];
  for (const v of variants) {
    const one = v.params.extend(NameParam.shape);
    app.openapi(
      createRoute(secureRoute(deps, v.access, { method: "get", path: v.base, tags: [v.tag], summary: "List the tenant's custom tools (webhook secrets are never shown)", request: { params: v.params }, responses: { 200: { description: "The tools", ...json(z.object({ tools: z.array(Any) })) }, ...errorResponses(401, 403, 404) } })),
      async (c) => c.json({ tools: (await readCustomTools(deps.storage, await v.tenantOf(c))).tools.map(shown) }, 200) as never,
    );
    app.openapi(
      createRoute(secureRoute(deps, v.access, { method: "post", path: v.base, tags: [v.tag], summary: "Add a custom tool (plugin or webhook backend)", description: "A webhook's secret (given, or generated) is in this answer only.", request: { params: v.params, body: { required: true, ...json(CustomToolInput) } }, responses: { 201: { description: "The tool (with its webhook secret, once)", ...json(Any) }, ...errorResponses(400, 401, 403, 404, 409, 413) } })),
      async (c) => {
        const tenant = await v.tenantOf(c);
        const input = await checked(deps, builtins, c.req.valid("json") as CustomToolInput);
        const now = new Date().toISOString();
        const stored: StoredCustomTool = { ...input, ...(input.backend.type === "webhook" ? { backend: { ...input.backend, secret: input.backend.secret ?? `whsec_${randomId(32)}` } } : {}), created_at: now, updated_at: now };
        toCustomTool(stored);
        await updateCustomTools(deps.storage, tenant, (tools) => {
          if (tools.some((t) => t.name === stored.name)) throw new ToolError("ALREADY_EXISTS", `A custom tool named '${stored.name}' exists; change it with PUT ${v.base}/${stored.name}.`, { name: stored.name });
          if (tools.length >= MAX_CUSTOM_TOOLS) throw new ToolError("QUOTA_EXCEEDED", `A tenant has at most ${MAX_CUSTOM_TOOLS} custom tools; delete one first.`);
          return { tools: [...tools, stored], result: null };
        }, deps.customTools);
        return c.json(stored as unknown as Record<string, unknown>, 201) as never;
      },
    );
    app.openapi(
      createRoute(secureRoute(deps, v.access, { method: "get", path: `${v.base}/{name}`, tags: [v.tag], summary: "One custom tool", request: { params: one }, responses: { 200: { description: "The tool", ...json(Any) }, ...errorResponses(401, 403, 404) } })),
      async (c) => {
        const name = c.req.param("name") ?? "";
        const t = (await readCustomTools(deps.storage, await v.tenantOf(c))).tools.find((x) => x.name === name);
        if (!t) throw new ToolError("NOT_FOUND", `No custom tool named '${name.slice(0, 64)}'. List them with GET ${v.base}.`);
        return c.json(shown(t) as Record<string, unknown>, 200) as never;
      },
    );
    app.openapi(
      createRoute(secureRoute(deps, v.access, { method: "put", path: `${v.base}/{name}`, tags: [v.tag], summary: "Replace a custom tool (same name; a webhook keeps its secret unless one is given)", request: { params: one, body: { required: true, ...json(CustomToolInput) } }, responses: { 200: { description: "The tool", ...json(Any) }, ...errorResponses(400, 401, 403, 404, 409, 413) } })),
      async (c) => {
        const name = c.req.param("name") ?? "";
        const input = await checked(deps, builtins, c.req.valid("json") as CustomToolInput);
        if (input.name !== name) throw new ToolError("INVALID_ARGUMENT", `The body names '${input.name}', the path '${name}': a tool is renamed by adding the new one and deleting the old.`);
        const out = await updateCustomTools(deps.storage, await v.tenantOf(c), (tools) => {
          const i = tools.findIndex((t) => t.name === name);
          if (i < 0) throw new ToolError("NOT_FOUND", `No custom tool named '${name}'; add it with POST ${v.base}.`);
          const old = tools[i]!;
          const oldSecret = old.backend.type === "webhook" ? old.backend.secret : undefined;
          const backend = input.backend.type === "webhook" ? { ...input.backend, secret: input.backend.secret ?? oldSecret ?? `whsec_${randomId(32)}` } : input.backend;
          const next: StoredCustomTool = { ...input, backend, created_at: old.created_at, updated_at: new Date().toISOString() };
          toCustomTool(next);
          tools[i] = next;
          const fresh = backend.type === "webhook" && backend.secret !== oldSecret;
          return { tools, result: fresh ? next : shown(next) };
        }, deps.customTools);
        return c.json(out as Record<string, unknown>, 200) as never;
      },
    );
    app.openapi(
      createRoute(secureRoute(deps, v.access, { method: "delete", path: `${v.base}/{name}`, tags: [v.tag], summary: "Delete a custom tool", request: { params: one }, responses: { 200: { description: "Deleted", ...json(z.object({ deleted: z.string() })) }, ...errorResponses(401, 403, 404, 409) } })),
      async (c) => {
        const name = c.req.param("name") ?? "";
        await updateCustomTools(deps.storage, await v.tenantOf(c), (tools) => {
          if (!tools.some((t) => t.name === name)) throw new ToolError("NOT_FOUND", `No custom tool named '${name.slice(0, 64)}'. List them with GET ${v.base}.`);
          return { tools: tools.filter((t) => t.name !== name), result: null };
        }, deps.customTools);
        return c.json({ deleted: name }, 200) as never;
      },
    );
  }
  return app;
}

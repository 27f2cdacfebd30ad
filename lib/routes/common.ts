/** Schemas and helpers shared by the route files. */
import { z } from "@hono/zod-openapi";
import { OpenAPIHono } from "@hono/zod-openapi";
import { ToolError } from "../errors.js";
import { onError, validationHook, type AppEnv } from "../http.js";
import { workspacePrefix } from "../paths.js";
import type { StorageDriver } from "../storage/types.js";
import type { AppDeps } from "../deps.js";
import { ManifestCache } from "../layers/manifest.js";
import type { LayerDeps } from "../layers/open.js";
export { openWorkspace } from "../layers/open.js";

/** What opening a workspace needs (createApp always sets `manifests`; a bare deps gets a private cache). */
export const layerDeps = (deps: AppDeps): LayerDeps => ({ storage: deps.storage, manifests: deps.manifests ?? new ManifestCache() });

export const newApp = () => {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.onError(onError);
  return app;
};

export const ErrorSchema = z
  .object({
    ok: z.literal(false),
    tool: z.string().optional(),
    error: z.object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()) }),
  })
  .openapi("Error");

export const errorResponses = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((s) => [s, { description: "Error", content: { "application/json": { schema: ErrorSchema } } }]));

export const WsParam = z.object({ ws: z.string().openapi({ param: { name: "ws", in: "path" }, example: "my-project" }) });

/** The workspace exists and belongs to the caller's tenant, else NOT_FOUND (no difference between the two). */
export async function requireWorkspace(storage: StorageDriver, tenant: string, ws: string): Promise<void> {
  let prefix: string;
  try {
    prefix = workspacePrefix(tenant, ws);
  } catch {
    prefix = "";
  }
  if (!prefix || !(await storage.head(`${prefix}meta.json`))) {
    throw new ToolError("NOT_FOUND", `Workspace not found: ${ws}. List your workspaces with GET /v1/workspaces.`, { workspace: ws });
  }
}

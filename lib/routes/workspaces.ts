/** Tenant API: create, list, get and delete workspaces. */
import { createRoute, z } from "@hono/zod-openapi";
import { requireTenant } from "../auth/middleware.js";
import type { AppDeps } from "../deps.js";
import { createWorkspace, deleteWorkspace, getWorkspace, listWorkspaces } from "../workspace/registry.js";
import { ARCHIVE_CONTENT, createWithArchive, ImportReportSchema, isArchiveContentType } from "./archive.js";
import { errorResponses, layerDeps, newApp, WsParam } from "./common.js";
import { ToolError } from "../errors.js";
import { forkWorkspace } from "../layers/checkpoints.js";

const WorkspaceSchema = z.object({ id: z.string(), name: z.string(), created_at: z.string(), base: z.string().nullable().optional(), seq: z.number().optional(), checkpoint: z.string().optional() }).openapi("Workspace");
const security = [{ Bearer: [] }];

export function workspacesApp(deps: AppDeps) {
  const app = newApp();
  const auth = requireTenant(deps);
  app.openapi(
    createRoute({
      method: "post", path: "/v1/workspaces", tags: ["workspaces"], security, middleware: auth,
      summary: "Create a workspace (with an archive body: create it loaded, in one call)",
      description: "A JSON body {id?, name?} creates an empty workspace. An archive body (tar, tar.gz or zip; the query gives id, name, prefix) creates it and imports the archive as POST /v1/workspaces/{ws}/import does; if the import fails, the workspace is deleted again.",
      request: {
        query: z.object({ id: z.string().optional(), name: z.string().optional(), prefix: z.string().optional() }).openapi({ description: "With an archive body only" }),
        body: { required: false, content: { "application/json": { schema: z.object({ id: z.string().optional().openapi({ example: "my-project", description: "1-63 of a-z 0-9 - _ (default: a random ws_ id)" }), name: z.string().max(200).optional(), from_workspace: z.string().optional().openapi({ description: "Fork this workspace of yours (needs write): the new one starts as its checkpoint (made now, or `checkpoint`) and evolves independently" }), checkpoint: z.string().optional() }) }, ...ARCHIVE_CONTENT } },
      },
      responses: { 201: { description: "Created", content: { "application/json": { schema: WorkspaceSchema.extend({ import: ImportReportSchema.optional() }) } } }, ...errorResponses(400, 401, 403, 404, 409, 413) },
    }),
    async (c) => {
      if (isArchiveContentType(c.req.header("content-type"))) return createWithArchive(c, deps) as never;
      const body = (await c.req.json().catch(() => ({}))) as { id?: string; name?: string; from_workspace?: string; checkpoint?: string };
      if (body.from_workspace !== undefined) {
        if (!c.get("auth").scopes.includes("write")) throw new ToolError("PERMISSION_DENIED", "A fork needs the 'write' scope (it checkpoints the origin).", { needed: "write" });
        const fork = await forkWorkspace(layerDeps(deps), c.get("auth").tenant, { from: String(body.from_workspace), ...(body.id !== undefined ? { id: String(body.id) } : {}), ...(body.name !== undefined ? { name: String(body.name) } : {}), ...(body.checkpoint !== undefined ? { checkpoint: String(body.checkpoint) } : {}) });
        return c.json(fork, 201);
      }
      return c.json(await createWorkspace(deps.storage, c.get("auth").tenant, { ...(body.id !== undefined ? { id: String(body.id) } : {}), ...(body.name !== undefined ? { name: String(body.name) } : {}) }), 201);
    },
  );
  app.openapi(
    createRoute({
      method: "get", path: "/v1/workspaces", tags: ["workspaces"], security, middleware: auth,
      summary: "List workspaces",
      request: { query: z.object({ cursor: z.string().optional(), limit: z.coerce.number().int().min(1).max(1000).optional() }) },
      responses: { 200: { description: "Workspaces", content: { "application/json": { schema: z.object({ workspaces: z.array(WorkspaceSchema), cursor: z.string().optional() }) } } }, ...errorResponses(400, 401) },
    }),
    async (c) => c.json(await listWorkspaces(deps.storage, c.get("auth").tenant, c.req.valid("query")), 200),
  );
  app.openapi(
    createRoute({
      method: "get", path: "/v1/workspaces/{ws}", tags: ["workspaces"], security, middleware: auth,
      summary: "Get a workspace",
      request: { params: WsParam },
      responses: { 200: { description: "Workspace", content: { "application/json": { schema: WorkspaceSchema } } }, ...errorResponses(401, 404) },
    }),
    async (c) => c.json(await getWorkspace(deps.storage, c.get("auth").tenant, c.req.valid("param").ws), 200),
  );
  app.openapi(
    createRoute({
      method: "delete", path: "/v1/workspaces/{ws}", tags: ["workspaces"], security, middleware: auth,
      summary: "Delete a workspace and all its files",
      request: { params: WsParam },
      responses: { 200: { description: "Deleted", content: { "application/json": { schema: z.object({ deleted: z.literal(true), id: z.string(), deleted_objects: z.number() }) } } }, ...errorResponses(401, 404) },
    }),
    async (c) => {
      const { ws } = c.req.valid("param");
      const r = await deleteWorkspace(deps.storage, c.get("auth").tenant, ws);
      return c.json({ deleted: true as const, id: ws, ...r }, 200);
    },
  );
  return app;
}

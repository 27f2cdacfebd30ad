/**
 * Tenant API: create, list, get and delete workspaces. Creating and deleting need the 'write'
 * scope (deleting destroys every file), listing and getting 'read'.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../http.js";
import { parseJsonBody } from "../http.js";
import type { AppDeps } from "../deps.js";
import { endsWithWorkspace } from "../../exec/workspace-gone.js";
import { createWorkspaceRecord, deleteWorkspace, getWorkspace, listWorkspaces, publicMeta } from "../../workspace/registry.js";
import { knownWorkspaceKey } from "./known-workspace.js";
import { secureRoute } from "./access.js";
import { ARCHIVE_CONTENT, createWithArchive, ImportReportSchema, isArchiveContentType } from "./archive.js";
import { backgroundOf, errorResponses, newApp, WsParam } from "./common.js";
import { layerDeps } from "../../run/run-tool.js";
import { isToolError, ToolError } from "../../shared/errors.js";
import { workspaceNotFound } from "../../layout/workspace-meta.js";
import { forkWorkspace } from "../../workspace/fork.js";
import type { Tool } from "../../contract/tool.js";
import { parseToolList, workspaceScopeRefusal } from "../../run/toolset.js";
import { catalogForLists, toolsForTenant } from "../../tools/custom/tool.js";
import { ToolsField } from "./keys.js";
import { newWorkspaceId, workspaceAllowed } from "../auth/key-bounds.js";
import { reserveCheckpointSlot, chargeFork, dropWorkspaceUsage, reserveWorkspaceSlot } from "./quotas.js";
import { randomId } from "../../shared/hash.js";

const CreateBody = z.object({
  id: z.string().optional().openapi({ example: "my-project", description: "1-63 of a-z 0-9 - _ (default: a random ws_ id)" }),
  name: z.string().max(200).optional(),
  from_workspace: z.string().optional().openapi({ description: "Fork this workspace of yours: the new one starts as its checkpoint (made now, or `checkpoint`) and evolves independently. A read-only origin (tools that never write) gets no checkpoint: its files are copied as they are and nothing of it is written" }),
  checkpoint: z.string().optional().openapi({ description: "With from_workspace (required with it): fork this checkpoint of it instead of its current state" }),
  tools: ToolsField.optional().openapi({ description: "Limit tool calls on this workspace to a preset or a list of tool names (default: all), and every route bound to it to the scopes those tools need (readonly: no file route writes, no checkpoint, restore, undo or import). Set at creation only; the key's own tools still apply (the effective set is the intersection)." }),
}).strict();
const WorkspaceSchema = z.object({ id: z.string(), name: z.string(), created_at: z.string(), base: z.string().nullable().optional(), seq: z.number().optional(), checkpoint: z.string().optional(), tools: z.union([z.string(), z.array(z.string())]).optional() }).openapi("Workspace");

export function workspacesApp(deps: AppDeps, tools: readonly Tool[]) {
  const app = newApp();
  app.openapi(
    createRoute(secureRoute(deps, { auth: "tenant", scope: "write", keyBounded: true }, {
      method: "post", path: "/v1/workspaces", tags: ["workspaces"],
      summary: "Create a workspace (with an archive body: create it loaded, in one call)",
      description: "A JSON body {id?, name?, tools?} creates an empty workspace. An archive body (tar, tar.gz or zip; the query gives id, name, prefix, tools) creates it and imports the archive as POST /v1/workspaces/{ws}/import does; if the import fails, the workspace is deleted again.",
      request: {
        query: z.object({ id: z.string().optional(), name: z.string().optional(), prefix: z.string().optional(), tools: z.string().optional().openapi({ description: "A preset, or tool names joined by commas: as the JSON body's tools. A workspace whose tools need no 'write' is loaded this way (no route writes to it later)." }) }).openapi({ description: "With an archive body only" }),
        body: { required: false, content: { "application/json": { schema: CreateBody }, ...ARCHIVE_CONTENT } },
      },
      responses: { 201: { description: "Created", content: { "application/json": { schema: WorkspaceSchema.extend({ import: ImportReportSchema.optional() }) } } }, ...errorResponses(400, 401, 403, 404, 409, 413) },
    })),
    async (c) => {
      const release = await reserveWorkspaceSlot(deps, c.get("auth")); // the workspaces quota, before anything is written
      const outcome = { plain: false };
      try {
        const res = (await create(c, outcome)) as never;
        await release(outcome.plain ? true : undefined);
        return res;
      } catch (e) {
        await release(outcome.plain ? undefined : isToolError(e) && e.code === "ALREADY_EXISTS" ? false : undefined);
        throw e;
      }
    },
  );
  /** `outcome.plain`: set once a plain create (a JSON body, no fork) made its record; the slot's release tells the limits object. */
  async function create(c: Context<AppEnv>, outcome: { plain: boolean }): Promise<Response> {
      // An archive body is streamed into the new workspace (the guard leaves non-JSON bodies it declares unread).
      if (isArchiveContentType(c.req.header("content-type"))) return createWithArchive(c, deps);
      // The body is optional, and without a JSON content type the validator skips it: check it here too.
      const body = parseJsonBody(CreateBody, c.get("json") ?? {});
      const auth = c.get("auth");
      const tenant = auth.tenant;
      const id = newWorkspaceId(auth, body.id);
      const list = body.tools !== undefined ? parseToolList(body.tools, await catalogForLists(deps, tools, tenant, [body.tools])) : undefined;
      if (body.checkpoint !== undefined && body.from_workspace === undefined)
        throw new ToolError("INVALID_ARGUMENT", `checkpoint is read only with from_workspace (the workspace it belongs to): add from_workspace to fork that checkpoint into a new workspace, or restore it in place with POST /v1/workspaces/{ws}/checkpoints/${body.checkpoint}/restore.`, { field: "checkpoint" });
      if (body.from_workspace !== undefined) {
        if (list !== undefined) throw new ToolError("INVALID_ARGUMENT", "tools cannot be given with from_workspace: a fork keeps its origin's tools. Create a new workspace with tools instead.", { field: "tools" });
        // A fork checkpoints its origin (the route already needs write), unless the origin's tools never write: then it is not written to.
        if (!workspaceAllowed(auth.workspaces, body.from_workspace)) throw workspaceNotFound(body.from_workspace);
        const forkId = id ?? `ws_${randomId(16)}`;
        // The origin's list may name the tenant's custom tools: read against them too (a fork is rare; the catalog is the isolate's cache).
        const catalog = await toolsForTenant(deps, tools, tenant);
        const writable = (list: Parameters<typeof workspaceScopeRefusal>[1]) => workspaceScopeRefusal("write", list, catalog, "") === null;
        const room = (id: string) => reserveCheckpointSlot(deps, auth, body.from_workspace!, id); // checkpoints_per_workspace of the origin
        const charge = () => chargeFork(deps, auth, body.from_workspace!, forkId, body.checkpoint); // the storage quotas, before anything is written
        const fork = await forkWorkspace(layerDeps(deps), tenant, { from: body.from_workspace, id: forkId, writable, room, charge, ...(body.name !== undefined ? { name: body.name } : {}), ...(body.checkpoint !== undefined ? { checkpoint: body.checkpoint } : {}) });
        return c.json(fork, 201);
      }
      const made = await createWorkspaceRecord(deps.storage, tenant, { ...(id !== undefined ? { id } : {}), ...(body.name !== undefined ? { name: body.name } : {}), ...(list !== undefined ? { tools: list } : {}) });
      outcome.plain = true;
      // This isolate wrote the record: it knows it as stored (a first bash here needs no GET of it: known-workspace.ts).
      deps.knownWorkspaces?.set(knownWorkspaceKey(tenant, made.meta.id), made);
      return c.json(publicMeta(made.meta), 201);
  }
  app.openapi(
    createRoute(secureRoute(deps, { auth: "tenant", scope: "read", keyBounded: true }, {
      method: "get", path: "/v1/workspaces", tags: ["workspaces"],
      summary: "List workspaces",
      request: { query: z.object({ cursor: z.string().optional(), limit: z.coerce.number().int().min(1).max(1000).optional() }) },
      responses: { 200: { description: "Workspaces", content: { "application/json": { schema: z.object({ workspaces: z.array(WorkspaceSchema), cursor: z.string().optional() }) } } }, ...errorResponses(400, 401, 403) },
    })),
    async (c) => {
      const auth = c.get("auth");
      return c.json(await listWorkspaces(deps.storage, auth.tenant, { ...c.req.valid("query"), covered: auth.workspaces }), 200);
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, { auth: "tenant", scope: "read" }, {
      method: "get", path: "/v1/workspaces/{ws}", tags: ["workspaces"],
      summary: "Get a workspace",
      request: { params: WsParam },
      responses: { 200: { description: "Workspace", content: { "application/json": { schema: WorkspaceSchema } } }, ...errorResponses(401, 403, 404) },
    })),
    async (c) => c.json(await getWorkspace(deps.storage, c.get("auth").tenant, c.req.valid("param").ws), 200),
  );
  app.openapi(
    createRoute(secureRoute(deps, { auth: "tenant", scope: "write" }, {
      method: "delete", path: "/v1/workspaces/{ws}", tags: ["workspaces"],
      summary: "Delete a workspace and all its files",
      request: { params: WsParam },
      responses: { 200: { description: "Deleted", content: { "application/json": { schema: z.object({ deleted: z.literal(true), id: z.string(), deleted_objects: z.number() }) } } }, ...errorResponses(401, 403, 404) },
    })),
    async (c) => {
      const { ws } = c.req.valid("param");
      // What runs there ends with it: its live sandboxes at once, its background tasks' places freed (lib/exec/workspace-gone.ts).
      const ending = endsWithWorkspace(deps, c.get("auth").tenant, ws, backgroundOf(c));
      const r = await deleteWorkspace(deps.storage, c.get("auth").tenant, ws, ending.hooks);
      await ending.done();
      await dropWorkspaceUsage(deps, c.get("auth").tenant, ws); // its bytes leave the tenant's storage_bytes
      return c.json({ deleted: true as const, id: ws, ...r }, 200);
    },
  );
  return app;
}

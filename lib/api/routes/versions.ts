/** Versions of a workspace: checkpoints (create, list, get, delete), restore, diff (lib/layers/). Forks: POST /v1/workspaces (workspaces.ts). */
import { createRoute, z } from "@hono/zod-openapi";
import type { AppDeps } from "../deps.js";
import { createCheckpoint, deleteCheckpoint, getCheckpoint, listCheckpoints, requireMeta, restoreCheckpoint } from "../../layers/checkpoints.js";
import { currentSide, diffVersions, manifestSide, withModes } from "../../layers/diff.js";
import { doorRecords } from "../../workspace/records.js";
import { Workspace } from "../../workspace/workspace.js";
import { readModes } from "../../layout/modes.js";
import { secureRoute } from "./access.js";
import { parseJsonBody } from "../http.js";
import { errorResponses, newApp, WsParam } from "./common.js";
import { layerDeps } from "../../run/run-tool.js";
import { reserveCheckpointSlot, chargeRestore } from "./quotas.js";
import { openWorkspace } from "../../layers/open.js";

// Each route's access is part of its definition (lib/api/routes/access.ts): the guard checks the key's
// scope and that the workspace exists and is the tenant's.
const read = { auth: "tenant", scope: "read", workspace: true } as const;
const write = { auth: "tenant", scope: "write", workspace: true } as const;

export const CheckpointSchema = z
  .object({ id: z.string(), name: z.string(), workspace: z.string(), manifest: z.string(), created_at: z.string(), files: z.number(), bytes: z.number(), exec: z.array(z.string()).optional(), links: z.record(z.string(), z.string()).optional().describe("The symlinks at the checkpoint: path → target (docs/symlinks.md)") })
  .openapi("Checkpoint");
const CpParam = WsParam.extend({ id: z.string().openapi({ param: { name: "id", in: "path" } }) });
const Change = z.object({
  path: z.string(), status: z.enum(["added", "changed", "deleted"]), from_etag: z.string().optional(), to_etag: z.string().optional(),
  size: z.number().optional(), diff: z.string().optional(), binary: z.boolean().optional(),
  executable: z.object({ from: z.boolean(), to: z.boolean() }).optional().openapi({ description: "Set when the execute bit differs (a chmod alone is a change; `diff` then starts with git's old mode / new mode lines)" }),
  directory: z.literal(true).optional().openapi({ description: "An explicit empty directory (made by mkdir, kept while empty) that was added or deleted; `path` names it, with no etag. A directory that only gained or lost files is not listed: its files are." }),
});

const CheckpointBody = z.object({ name: z.string().max(200).optional() }).strict();

export function versionsApp(deps: AppDeps) {
  const app = newApp();
  const ld = layerDeps(deps);
  app.openapi(
    createRoute(secureRoute(deps, write, {
      method: "post", path: "/v1/workspaces/{ws}/checkpoints", tags: ["versions"],
      summary: "Checkpoint the workspace (cheap: packs only the files changed since the last one)",
      request: { params: WsParam, body: { required: false, content: { "application/json": { schema: CheckpointBody } } } },
      responses: { 201: { description: "Created", content: { "application/json": { schema: CheckpointSchema.extend({ sealed: z.number(), kept: z.number() }) } } }, ...errorResponses(400, 401, 403, 404, 409, 413) },
    })),
    async (c) => {
      const name = parseJsonBody(CheckpointBody, c.get("json") ?? {}).name ?? new Date().toISOString();
      const { ws } = c.req.valid("param");
      const room = (id: string) => reserveCheckpointSlot(deps, c.get("auth"), ws, id); // checkpoints_per_workspace, before anything is sealed
      return c.json(await createCheckpoint(ld, c.get("auth").tenant, ws, name, room), 201);
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, read, {
      method: "get", path: "/v1/workspaces/{ws}/checkpoints", tags: ["versions"],
      summary: "List the workspace's checkpoints, oldest first",
      request: { params: WsParam },
      responses: { 200: { description: "Checkpoints", content: { "application/json": { schema: z.object({ checkpoints: z.array(CheckpointSchema) }) } } }, ...errorResponses(401, 403, 404) },
    })),
    async (c) => {
      const { ws } = c.req.valid("param");
      await requireMeta(ld, c.get("auth").tenant, ws);
      return c.json({ checkpoints: await listCheckpoints(ld, c.get("auth").tenant, ws) }, 200);
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, read, {
      method: "get", path: "/v1/workspaces/{ws}/checkpoints/{id}", tags: ["versions"],
      summary: "One checkpoint",
      request: { params: CpParam },
      responses: { 200: { description: "Checkpoint", content: { "application/json": { schema: CheckpointSchema } } }, ...errorResponses(401, 403, 404) },
    })),
    async (c) => {
      const { ws, id } = c.req.valid("param");
      return c.json(await getCheckpoint(ld, c.get("auth").tenant, ws, id), 200);
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, write, {
      method: "delete", path: "/v1/workspaces/{ws}/checkpoints/{id}", tags: ["versions"],
      summary: "Delete a checkpoint (its storage is reclaimed by the next GC once nothing else references its manifest; forks made from it keep working)",
      request: { params: CpParam },
      responses: { 200: { description: "Deleted", content: { "application/json": { schema: z.object({ deleted: z.literal(true), checkpoint: CheckpointSchema, hint: z.string() }) } } }, ...errorResponses(401, 403, 404) },
    })),
    async (c) => {
      const tenant = c.get("auth").tenant;
      const { ws, id } = c.req.valid("param");
      const cp = await deleteCheckpoint(ld, tenant, ws, id);
      const current = c.get("workspace")?.record.meta.base === cp.manifest; // as the guard read it: a hint
      const hint = current
        ? `Checkpoint ${id} is deleted. Its manifest ${cp.manifest} is still this workspace's current base, so nothing is freed yet: once a checkpoint, restore or import replaces that base, the next GC (POST /v1/admin/tenants/{tenant}/gc) reclaims it, unless another checkpoint or a fork still uses it.`
        : `Checkpoint ${id} is deleted. The next GC (POST /v1/admin/tenants/{tenant}/gc, past its grace period) reclaims its manifest ${cp.manifest} and the packs only it uses, unless another checkpoint or a workspace (a fork made from it) still uses that manifest. Forks made from it keep working.`;
      return c.json({ deleted: true as const, checkpoint: cp, hint }, 200);
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, write, {
      method: "post", path: "/v1/workspaces/{ws}/checkpoints/{id}/restore", tags: ["versions"],
      summary: "Make the workspace that checkpoint again (concurrent writers are reported in conflicts, never overwritten)",
      request: { params: CpParam },
      responses: { 200: { description: "Restored", content: { "application/json": { schema: z.object({ checkpoint: CheckpointSchema, removed: z.number(), conflicts: z.array(z.string()) }) } } }, ...errorResponses(401, 403, 404, 409, 413) },
    })),
    async (c) => {
      const { ws, id } = c.req.valid("param");
      await requireMeta(ld, c.get("auth").tenant, ws);
      const settle = await chargeRestore(deps, c.get("auth"), ws, id); // the storage quotas, before anything is written
      let report;
      try {
        report = await restoreCheckpoint(ld, c.get("auth").tenant, ws, id);
      } catch (e) {
        await settle(false);
        throw e;
      }
      await settle(true);
      return c.json(report, 200);
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, read, {
      method: "get", path: "/v1/workspaces/{ws}/diff", tags: ["versions"],
      summary: "Files added, changed and deleted between a checkpoint and another one (or the current state), with a unified diff per text file; paged",
      request: {
        params: WsParam,
        query: z.object({ from: z.string(), to: z.string().optional().openapi({ description: "A checkpoint id, or current (default)" }), cursor: z.string().optional(), limit: z.coerce.number().int().min(1).max(500).optional() }),
      },
      responses: { 200: { description: "Changes", content: { "application/json": { schema: z.object({ from: z.string(), to: z.string(), changes: z.array(Change), cursor: z.string().optional() }) } } }, ...errorResponses(400, 401, 403, 404) },
    })),
    async (c) => {
      const tenant = c.get("auth").tenant;
      const { ws } = c.req.valid("param");
      const q = c.req.valid("query");
      const opened = await openWorkspace(ld, tenant, ws);
      const side = async (id: string) => {
        const cp = await getCheckpoint(ld, tenant, ws, id);
        return withModes(manifestSide(deps.storage, tenant, await ld.manifests.load(deps.storage, tenant, cp.manifest)), cp);
      };
      const to = q.to ?? "current";
      const workspace = new Workspace({ driver: opened.driver, records: doorRecords(deps.kv, tenant, ws, "raw"), tenant, id: ws });
      const r = await diffVersions(await side(q.from), to === "current" ? withModes(await currentSide(workspace), await readModes(opened.driver, tenant, ws)) : await side(to), { limit: q.limit ?? 100, ...(q.cursor ? { cursor: q.cursor } : {}) });
      return c.json({ from: q.from, to, ...r }, 200);
    },
  );
  return app;
}

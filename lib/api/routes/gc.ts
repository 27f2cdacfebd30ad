/** Admin API: garbage collection of a tenant's unreachable packs, manifests and search-index segments (lib/layers/gc.ts). */
import { createRoute, z } from "@hono/zod-openapi";
import { getTenant } from "../auth/keys.js";
import type { AppDeps } from "../deps.js";
import { collectGarbage, GC_DEFAULT_GRACE_SECONDS, GC_DEFAULT_MAX_DELETIONS, GC_MIN_GRACE_SECONDS } from "../../layers/gc.js";
import { secureRoute } from "./access.js";
import { errorResponses, newApp } from "./common.js";

const TenantParam = z.object({ tenant: z.string().openapi({ param: { name: "tenant", in: "path" } }) });
const GcBody = z.object({
  grace_seconds: z.number().int().min(GC_MIN_GRACE_SECONDS).max(30 * 86400).optional().openapi({ description: `Unreferenced objects younger than this stay (an import or checkpoint in flight). Default ${GC_DEFAULT_GRACE_SECONDS}, at least ${GC_MIN_GRACE_SECONDS}.` }),
  dry_run: z.boolean().optional().openapi({ description: "Count what would be deleted; delete nothing." }),
  max_deletions: z.number().int().min(1).max(10_000).optional().openapi({ description: `Objects deleted per call at most (default ${GC_DEFAULT_MAX_DELETIONS}); \`more: true\` says call again.` }),
}).strict();
const GcReportSchema = z.object({
  manifests_deleted: z.number(), packs_deleted: z.number(), segments_deleted: z.number(), leftovers_deleted: z.number(), bytes_freed: z.number(), kept_young: z.number(),
  roots: z.object({ workspaces: z.number(), manifests: z.number(), undo_packs: z.number() }),
  live: z.object({ manifests: z.number(), packs: z.number() }),
  missing_manifests: z.array(z.string()), more: z.boolean(), dry_run: z.boolean(),
}).openapi("GcReport");

export function gcApp(deps: AppDeps) {
  const app = newApp();
  app.openapi(
    createRoute(secureRoute(deps, { auth: "admin" }, {
      method: "post", path: "/v1/admin/tenants/{tenant}/gc", tags: ["admin"],
      summary: "Delete a tenant's packs, manifests and index segments nothing references",
      description: "Roots: every workspace's base, every checkpoint's manifest, the packs undo records name, and manifests younger than `grace_seconds`. Unreferenced manifests and packs older than `grace_seconds` are deleted (each If-Match the etag listed), at most `max_deletions` per call (`more: true`: call again). Cost: lists of the tenant's workspaces, checkpoints, undo records, manifests and packs, one GET per workspace, checkpoint, undo record and live manifest, one DELETE per 1000 objects. `missing_manifests` non-empty: a root manifest could not be read and no pack was deleted. Then, per workspace, search-index segments none of whose entries is a current file, older than `grace_seconds` (a failed import's, a file long rewritten): the workspace's file listing and one ranged GET per such segment; they share `max_deletions`.",
      request: { params: TenantParam, body: { required: false, content: { "application/json": { schema: GcBody } } } },
      responses: { 200: { description: "What was (or, with dry_run, would be) deleted", content: { "application/json": { schema: GcReportSchema } } }, ...errorResponses(400, 401, 403, 404) },
    })),
    async (c) => {
      const { tenant } = c.req.valid("param");
      await getTenant(deps.storage, tenant);
      const body = c.req.valid("json") ?? {};
      const report = await collectGarbage(deps.storage, tenant, {
        ...(body.grace_seconds !== undefined ? { graceSeconds: body.grace_seconds } : {}),
        ...(body.dry_run !== undefined ? { dryRun: body.dry_run } : {}),
        ...(body.max_deletions !== undefined ? { maxDeletions: body.max_deletions } : {}),
      });
      return c.json(report, 200);
    },
  );
  return app;
}

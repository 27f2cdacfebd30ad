/**
 * The audit log (docs/audit.md): GET /v1/workspaces/{ws}/audit and GET /v1/audit (the tenant's own
 * entries: keys, policies, workspaces made and deleted). Both need the `manage` scope: the log names
 * every key that acted and what it did, which an agent's key (read, write, execute) should not
 * learn about the others; the operator's or the security team's key reads it.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { AppDeps } from "../deps.js";
import { DEFAULT_AUDIT_PAGE, listAudit, MAX_AUDIT_PAGE } from "../../run/audit/store.js";
import { secureRoute } from "./access.js";
import { errorResponses, newApp, WsParam } from "./common.js";
import { ToolError } from "../../shared/errors.js";

const AuditEntrySchema = z
  .object({
    id: z.string(),
    at: z.string(),
    tenant: z.string(),
    workspace: z.string().optional(),
    key_id: z.string().openapi({ description: "The API key's id, or \"admin\"" }),
    session: z.string().optional(),
    door: z.string().openapi({ description: "http, sse, mcp, compat-anthropic, compat-openai, pending-approval, task, admin or runner (a live sandbox's start and end)" }),
    tool: z.string().optional(),
    route: z.string().optional().openapi({ description: "A call that is not a tool call: its method and route, e.g. \"PUT /v1/workspaces/{ws}/files/{path}\"" }),
    args: z.record(z.string(), z.unknown()).openapi({ description: "Paths, ids, numbers and flags as given; any other argument as its size (content_bytes, command_bytes)" }),
    outcome: z.object({ ok: z.boolean(), status: z.number(), code: z.string().optional(), replayed: z.literal(true).optional().openapi({ description: "The answer kept for an Idempotency-Key sent again: nothing ran." }) }),
    files: z.array(z.string()).optional(),
    call_id: z.string().optional(),
  })
  .openapi("AuditEntry");

const PageSchema = z.object({ entries: z.array(AuditEntrySchema), next_cursor: z.string().optional().openapi({ description: "Pass as cursor for the next page; absent at the end of the log so far (poll again later with the last id)" }) });

const PageQuery = z.object({
  since: z.string().optional().openapi({ description: "ISO 8601 time: entries from then on (ignored with cursor)", example: "2026-11-28T07:00:00Z" }),
  cursor: z.string().optional().openapi({ description: "The next_cursor of the previous page (an entry id)" }),
  limit: z.coerce.number().int().min(1).max(MAX_AUDIT_PAGE).optional().openapi({ description: `Entries per page (default ${DEFAULT_AUDIT_PAGE}, at most ${MAX_AUDIT_PAGE})` }),
});

const manage = { auth: "tenant", scope: "manage" } as const;
const json = (schema: z.ZodType) => ({ content: { "application/json": { schema } } });

/** Where the operator turned audit off (AppDeps.audit false: TOOLSHED_BUSINESS_OFF), no log is kept, so none is served: an empty page would read as "nothing happened". */
function assertAuditOn(deps: AppDeps): void {
  if (deps.audit === false) throw new ToolError("UNAVAILABLE", "This deployment keeps no audit log (its operator turned audit off: TOOLSHED_BUSINESS_OFF); ask its operator.", {});
}

export function auditApp(deps: AppDeps) {
  const app = newApp();
  app.openapi(
    createRoute(secureRoute(deps, { ...manage, workspace: true }, {
      method: "get", path: "/v1/workspaces/{ws}/audit", tags: ["audit"],
      summary: "The workspace's audit log, oldest first: every call that changed or could change it, bash runs, approval answers",
      request: { params: WsParam, query: PageQuery },
      responses: { 200: { description: "One page of entries", ...json(PageSchema) }, ...errorResponses(400, 401, 403, 404, 503) },
    })),
    async (c) => {
      assertAuditOn(deps);
      const { ws } = c.req.valid("param");
      const q = c.req.valid("query");
      return c.json(await listAudit(deps.storage, { tenant: c.get("auth").tenant, workspace: ws }, q), 200) as never;
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, manage, {
      method: "get", path: "/v1/audit", tags: ["audit"],
      summary: "The tenant's audit log, oldest first: keys, policies, workspaces created and deleted, custom tools",
      request: { query: PageQuery },
      responses: { 200: { description: "One page of entries", ...json(PageSchema) }, ...errorResponses(400, 401, 403, 503) },
    })),
    async (c) => {
      assertAuditOn(deps);
      return c.json(await listAudit(deps.storage, { tenant: c.get("auth").tenant }, c.req.valid("query")), 200) as never;
    },
  );
  return app;
}

/** Per-call undo (lib/run/undo/): POST /v1/workspaces/{ws}/undo and GET /v1/workspaces/{ws}/undo. */
import { createRoute, z } from "@hono/zod-openapi";
import type { AppDeps } from "../deps.js";
import { sessionRecords } from "../../workspace/records.js";
import { checkSessionId } from "../../layout/paths.js";
import { undoCall, listUndoable } from "../../run/undo/apply.js";
import { callerOf, quotaOf, quotaOpt } from "../../workspace/quota.js";
import { Workspace } from "../../workspace/workspace.js";
import { secureRoute } from "./access.js";
import { parseJsonBody } from "../http.js";
import { backgroundOf, errorResponses, newApp, WsParam } from "./common.js";
import { layerDeps } from "../../run/run-tool.js";
import { openWorkspace } from "../../layers/open.js";

const read = { auth: "tenant", scope: "read", workspace: true } as const;
const write = { auth: "tenant", scope: "write", workspace: true } as const;

const UndoBody = z.object({ call_id: z.string().max(400).optional(), session: z.string().max(128).optional() }).strict();
const UndoCallSchema = z.object({ call_id: z.string(), tool: z.string(), session: z.string(), at: z.string(), paths: z.array(z.string()), undone: z.boolean() }).openapi("UndoCall");

export function undoApp(deps: AppDeps) {
  const app = newApp();
  const ld = layerDeps(deps);
  app.openapi(
    createRoute(secureRoute(deps, write, {
      method: "post", path: "/v1/workspaces/{ws}/undo", tags: ["versions"],
      summary: "Undo one call (call_id), or the newest not yet undone call of a session (default: X-Session-Id); refused as a whole when a file changed since",
      request: {
        params: WsParam,
        headers: z.object({ "x-session-id": z.string().optional() }),
        body: { required: false, content: { "application/json": { schema: UndoBody } } },
      },
      responses: {
        200: { description: "Undone", content: { "application/json": { schema: z.object({ call_id: z.string(), tool: z.string(), restored: z.array(z.object({ path: z.string(), action: z.enum(["restored", "deleted", "recreated", "exec_bit_set", "exec_bit_cleared"]) })) }) } } },
        ...errorResponses(400, 401, 403, 404, 409),
      },
    })),
    async (c) => {
      const tenant = c.get("auth").tenant;
      const { ws } = c.req.valid("param");
      const body = parseJsonBody(UndoBody, c.get("json") ?? {});
      const session = checkSessionId(body.session ?? c.req.header("x-session-id") ?? "default");
      const opened = await openWorkspace(ld, tenant, ws);
      const workspace = new Workspace({ driver: opened.driver, records: sessionRecords(deps.kv, tenant, ws, session), tenant, id: ws, listeners: deps.listeners ?? [], ...(deps.versions ? { versions: deps.versions } : {}), ...quotaOpt(quotaOf(deps, tenant, ws, callerOf(c.get("auth")), opened.driver, backgroundOf(c))) });
      return c.json(await undoCall(deps.storage, workspace, { session, ...(body.call_id !== undefined ? { callId: body.call_id } : {}) }), 200);
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, read, {
      method: "get", path: "/v1/workspaces/{ws}/undo", tags: ["versions"],
      summary: "The session's recent undoable calls, newest first (call_id, tool, paths, time, undone)",
      request: { params: WsParam, query: z.object({ session: z.string().optional(), limit: z.coerce.number().int().min(1).max(100).optional() }) },
      responses: { 200: { description: "Calls", content: { "application/json": { schema: z.object({ session: z.string(), calls: z.array(UndoCallSchema) }) } } }, ...errorResponses(400, 401, 403, 404) },
    })),
    async (c) => {
      const tenant = c.get("auth").tenant;
      const { ws } = c.req.valid("param");
      const q = c.req.valid("query");
      const session = checkSessionId(q.session ?? c.req.header("x-session-id") ?? "default");
      return c.json({ session, calls: await listUndoable(deps.storage, tenant, ws, session, q.limit ?? 20) }, 200);
    },
  );
  return app;
}

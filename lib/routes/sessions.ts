/** What an agent session keeps, for the app: GET /v1/workspaces/{ws}/sessions/{session}/todos. */
import { createRoute, z } from "@hono/zod-openapi";
import { requireTenant } from "../auth/middleware.js";
import type { AppDeps } from "../deps.js";
import { ToolError } from "../errors.js";
import { checkSessionId } from "../records/store.js";
import { TodoItemSchema } from "../todos/schema.js";
import { readTodos } from "../todos/store.js";
import { errorResponses, newApp, requireWorkspace, WsParam } from "./common.js";

const TodosSchema = z
  .object({
    session: z.string(),
    todos: z.array(TodoItemSchema),
    updated_at: z.string().nullable().openapi({ description: "When todo_write last saved the list; null when the session has none." }),
  })
  .openapi("SessionTodos");

export function sessionsApp(deps: AppDeps) {
  const app = newApp();
  app.openapi(
    createRoute({
      method: "get", path: "/v1/workspaces/{ws}/sessions/{session}/todos", tags: ["sessions"], security: [{ Bearer: [] }], middleware: requireTenant(deps),
      summary: "The todo list of an agent session (what todo_write saved)",
      description: "The list as the agent last wrote it with todo_write in this workspace and session (X-Session-Id); an empty list when it has none. Needs the 'read' scope.",
      request: { params: WsParam.extend({ session: z.string().openapi({ param: { name: "session", in: "path" }, example: "default" }) }) },
      responses: { 200: { description: "The todo list", content: { "application/json": { schema: TodosSchema } } }, ...errorResponses(400, 401, 403, 404) },
    }),
    async (c) => {
      const auth = c.get("auth");
      if (!auth.scopes.includes("read")) throw new ToolError("PERMISSION_DENIED", "This call needs the 'read' scope.", { needed: "read" });
      const { ws, session } = c.req.valid("param");
      await requireWorkspace(deps.storage, auth.tenant, ws);
      const stored = await readTodos({ driver: deps.storage, tenant: auth.tenant, workspace: ws, session: checkSessionId(session) });
      return c.json({ session, todos: stored?.todos ?? [], updated_at: stored?.updated_at ?? null }, 200);
    },
  );
  return app;
}

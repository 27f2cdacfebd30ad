/** What an agent session keeps, for the app: GET /v1/workspaces/{ws}/sessions/{session}/todos. */
import { createRoute, z } from "@hono/zod-openapi";
import type { AppDeps } from "../deps.js";
import { checkSessionId } from "../../layout/paths.js";
import { TodoItemSchema } from "../../tools/todos/schema.js";
import { quoteEtag, unquoteEtag } from "../../storage/types.js";
import { readTodos } from "../../tools/todos/store.js";
import { secureRoute } from "./access.js";
import { errorResponses, newApp, WsParam } from "./common.js";

const TodosSchema = z
  .object({
    session: z.string(),
    todos: z.array(TodoItemSchema),
    updated_at: z.string().nullable().openapi({ description: "When todo_write last saved the list; null when the session has none." }),
  })
  .openapi("SessionTodos");

/** The ETag of "this session has no list" (none saved, or unreadable): stable, so polling can use If-None-Match from the start. Never a storage etag (those are hex). */
export const NO_LIST_ETAG = "no-list";

export function sessionsApp(deps: AppDeps) {
  const app = newApp();
  app.openapi(
    createRoute(secureRoute(deps, { auth: "tenant", scope: "read", workspace: true }, {
      method: "get", path: "/v1/workspaces/{ws}/sessions/{session}/todos", tags: ["sessions"],
      summary: "The todo list of an agent session (what todo_write saved)",
      description: "The list as the agent last wrote it with todo_write in this workspace and session (X-Session-Id); an empty list when it has none. Needs the 'read' scope. Every answer has an ETag (a fixed one, \"no-list\", while the session has no list); send it back in If-None-Match to poll cheaply (304 while unchanged).",
      request: {
        params: WsParam.extend({ session: z.string().openapi({ param: { name: "session", in: "path" }, example: "default" }) }),
        headers: z.object({ "if-none-match": z.string().optional().openapi({ description: "The ETag of the list you have: 304 while it is unchanged." }) }),
      },
      responses: {
        200: { description: "The todo list", content: { "application/json": { schema: TodosSchema } } },
        304: { description: "Unchanged since the ETag in If-None-Match" },
        ...errorResponses(400, 401, 403, 404),
      },
    })),
    async (c) => {
      const auth = c.get("auth");
      const { ws, session } = c.req.valid("param");
      const stored = await readTodos({ driver: deps.storage, tenant: auth.tenant, workspace: ws, session: checkSessionId(session) });
      const etag = stored?.etag ?? NO_LIST_ETAG;
      const known = (c.req.header("if-none-match") ?? "").split(",").map((s) => unquoteEtag(s.trim()));
      if (known.includes(etag)) return c.body(null, 304, { etag: quoteEtag(etag) });
      return c.json({ session, todos: stored?.todos ?? [], updated_at: stored?.updated_at ?? null }, 200, { etag: quoteEtag(etag) });
    },
  );
  return app;
}

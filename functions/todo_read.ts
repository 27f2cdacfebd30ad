import { z } from "@hono/zod-openapi";
import { defineTool } from "../lib/contract/tool.js";
import { todoScope } from "../lib/tools/todos/context.js";
import { countTodos, renderTodos } from "../lib/tools/todos/schema.js";
import { readTodos } from "../lib/tools/todos/store.js";
import { TodoItemOut, TodoCountsOut } from "../lib/contract/tool-output.js";

const description = `Read the todo list of this session (the one todo_write keeps), to check progress or before updating it. Takes no arguments.
- An empty list means todo_write was not called yet in this session (X-Session-Id), or the list was cleared.
Returns: {todos: [{content, activeForm, status}], count, counts: {pending, in_progress, completed}, session, updated_at (null when there is no list)}`;

export default defineTool({
  name: "todo_read",
  description,
  category: "planning",
  permission: "read",
  summary: "Read this session's todo list and its counts by status. Takes no arguments.",
  annotations: { title: "Read todo list", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  output: z.object({ todos: z.array(TodoItemOut), count: z.number().int(), counts: TodoCountsOut, session: z.string(), updated_at: z.string().nullable() }),
  input: z.object({}),
  async execute(_args, ctx) {
    const stored = await readTodos(todoScope(ctx));
    const todos = stored?.todos ?? [];
    const counts = countTodos(todos);
    return {
      title: `${todos.length} todos (${counts.completed} completed)`,
      output: todos.length === 0 ? "The todo list is empty. Use todo_write to plan work of several steps." : renderTodos(todos),
      data: { todos, count: todos.length, counts, session: ctx.session, updated_at: stored?.updated_at ?? null },
    };
  },
});

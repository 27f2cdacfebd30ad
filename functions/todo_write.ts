import { z } from "@hono/zod-openapi";
import { defineTool } from "../lib/contract/tool.js";
import { todoScope } from "../lib/tools/todos/context.js";
import { countTodos, renderTodos, TODO_LIMITS, TodoListSchema } from "../lib/tools/todos/schema.js";
import { writeTodos } from "../lib/tools/todos/store.js";
import { TodoCountsOut } from "../lib/contract/tool-output.js";

const description = `Create and update the todo list of this session: plan multi-step work, track progress, and show the user what is being done. Each call replaces the whole list.
- Use it for work of 3 or more steps, or when the user asks for several things; skip it for one trivial step.
- Each todo: content (imperative: "Run tests"), activeForm (present continuous, shown while it runs: "Running tests"), status "pending", "in_progress" or "completed".
- Keep exactly one todo in_progress while you work (more than one gives INVALID_ARGUMENT). Mark a todo completed as soon as it is fully done (tests pass, nothing left), then the next one in_progress.
- Send the full list every time, in order: todos left out are removed; an empty list clears it.
- Limits: ${TODO_LIMITS.items} todos, ${TODO_LIMITS.chars.toLocaleString("en-US")} characters per content or activeForm, ${TODO_LIMITS.bytes / 1024} KB in all.
- The list belongs to this workspace and session (X-Session-Id); todo_read returns it, and the app can show it.
Returns: {success, count, counts: {pending, in_progress, completed}, session, updated_at}`;

export default defineTool({
  name: "todo_write",
  description,
  category: "planning",
  // Planning changes no file: a read-only key may keep a todo list (README, "The tools").
  permission: "read",
  summary: "Replace this session's todo list (content, activeForm, status pending|in_progress|completed; at most one in_progress) to plan and track multi-step work.",
  annotations: { title: "Write todo list", readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  output: z.object({ success: z.literal(true), count: z.number().int(), counts: TodoCountsOut, session: z.string(), updated_at: z.string() }),
  input: z.object({ todos: TodoListSchema.describe("The whole updated todo list, in order.") }),
  async execute(args, ctx) {
    const saved = await writeTodos(todoScope(ctx), args.todos);
    const counts = countTodos(saved.todos);
    const next =
      saved.todos.length === 0
        ? "Todo list cleared."
        : counts.in_progress === 0 && counts.pending > 0
          ? "Todo list saved. No todo is in_progress: mark the one you work on next as in_progress."
          : counts.completed === saved.todos.length
            ? "Todo list saved. All todos are completed."
            : "Todo list saved. Keep it current: mark each todo completed as soon as it is done, and the next one in_progress.";
    return {
      title: `${saved.todos.length} todos (${counts.completed} completed)`,
      output: saved.todos.length === 0 ? next : `${next}\n\n${renderTodos(saved.todos)}`,
      data: { success: true, count: saved.todos.length, counts, session: saved.session, updated_at: saved.updated_at },
    };
  },
});

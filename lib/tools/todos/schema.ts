/**
 * The todo list of one agent session: its schema (the one place its rules live: size bounds,
 * at most one in_progress, well-formed text), its counts and its rendering for the model.
 * Pure: no I/O.
 */
import { z } from "@hono/zod-openapi";

/** Bounds of one list. Checked before anything is written. */
export const TODO_LIMITS = {
  /** Todos in one list. */
  items: 100,
  /** Characters (code points) of one content or activeForm. */
  chars: 1_000,
  /** UTF-8 bytes of the whole list as stored (JSON). */
  bytes: 64 * 1024,
  /** Sessions with a stored list per workspace; creating one more drops the least recently written. */
  sessions: 1_000,
} as const;

export const TODO_STATUSES = ["pending", "in_progress", "completed"] as const;
export type TodoStatus = (typeof TODO_STATUSES)[number];

function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

const text = (what: string, example: string) =>
  z
    .string()
    // Characters are code points, as JSON Schema's maxLength counts them (an emoji is one).
    .refine((s) => codePoints(s) <= TODO_LIMITS.chars, `${what} is longer than ${TODO_LIMITS.chars} characters; keep a todo to one short line`)
    .meta({ maxLength: TODO_LIMITS.chars })
    .refine((s) => s.trim().length > 0, `${what} is empty; say what the step is, e.g. ${JSON.stringify(example)}`)
    .refine((s) => s.isWellFormed(), `${what} is not well-formed Unicode (a lone surrogate); send valid UTF-16 text`);

export const TodoItemSchema = z.object({
  content: text("content", "Run tests").describe('What to do, in the imperative: "Run tests".'),
  activeForm: text("activeForm", "Running tests").describe('The same step in the present continuous, shown while it is in progress: "Running tests".'),
  status: z.enum(TODO_STATUSES).describe('"pending" (not started), "in_progress" (being worked on now; at most one) or "completed" (done).'),
});
export type TodoItem = z.infer<typeof TodoItemSchema>;

const utf8Bytes = (s: string) => new TextEncoder().encode(s).length;

/** The whole list, with the rules that span items. */
export const TodoListSchema = z
  .array(TodoItemSchema)
  .max(TODO_LIMITS.items, `more than ${TODO_LIMITS.items} todos; merge small steps or drop completed ones, then send the list again`)
  .superRefine((todos, ctx) => {
    const active = todos.flatMap((t, i) => (t.status === "in_progress" ? [i] : []));
    if (active.length > 1) {
      const named = active.map((i) => `todos[${i}] ${JSON.stringify(shorten(todos[i]!.content, 60))}`).join(", ");
      ctx.addIssue({
        code: "custom",
        message: `only one todo may be in_progress at a time, but ${active.length} are: ${named}. Keep the one you are working on in_progress and mark the others pending or completed`,
        params: { in_progress: active },
      });
    }
    const bytes = utf8Bytes(JSON.stringify(todos));
    if (bytes > TODO_LIMITS.bytes) {
      ctx.addIssue({ code: "custom", message: `the list is ${bytes} bytes, more than ${TODO_LIMITS.bytes}; shorten the todos or drop completed ones` });
    }
  });

export type TodoCounts = Record<TodoStatus, number>;

export function countTodos(todos: readonly TodoItem[]): TodoCounts {
  const counts: TodoCounts = { pending: 0, in_progress: 0, completed: 0 };
  for (const t of todos) counts[t.status]++;
  return counts;
}

function shorten(s: string, max: number): string {
  const one = s.replace(/\s*[\r\n]+\s*/g, " ");
  return one.length > max ? `${one.slice(0, max - 3)}...` : one;
}

const MARK: Record<TodoStatus, string> = { completed: "[x]", in_progress: "[>]", pending: "[ ]" };

/** The list as the model reads it: a summary line, then one "[x] / [>] / [ ]" line per todo. */
export function renderTodos(todos: readonly TodoItem[]): string {
  if (todos.length === 0) return "The todo list is empty.";
  const c = countTodos(todos);
  const head = `Todos (${c.completed}/${todos.length} completed, ${c.in_progress} in progress, ${c.pending} pending):`;
  const lines = todos.map((t) => `${MARK[t.status]} ${shorten(t.content, TODO_LIMITS.chars)}${t.status === "in_progress" ? ` (${shorten(t.activeForm, TODO_LIMITS.chars)})` : ""}`);
  return [head, ...lines].join("\n");
}

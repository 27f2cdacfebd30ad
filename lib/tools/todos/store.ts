/**
 * Where a session's todo list lives: one small JSON object per (workspace, session) in the
 * workspace's internal area (x/todos/<session>.json, keyed in lib/layout/paths.ts), never listed as a
 * file. Object storage, not KV: strongly consistent (the app sees a write at once) and no
 * one-write-per-second-per-key limit.
 *
 * A write replaces the whole list with a conditional write: If-Match the version it read, or
 * create-only when there was none; when another write got in between it reads again and retries
 * once, then answers CONFLICT. Nothing is written unless the list is valid (the caller parses it
 * with TodoListSchema first).
 *
 * Storage operations: read = 1 GET; write = 1 GET + 1 PUT (+ 1 GET + 1 PUT on a retry), and when
 * the session's list is new, 1 LIST of x/todos/ after creating it (+ 1 DELETE when the workspace
 * holds more than TODO_LIMITS.sessions lists: the least recently written others are dropped).
 */
import { ToolError } from "../../shared/errors.js";
import { todosKey, todosPrefix } from "../../layout/paths.js";
import { isConditionFailed, type ObjectInfo, type StorageDriver } from "../../storage/types.js";
import { TODO_LIMITS, type TodoItem } from "./schema.js";

/** The stored object. `version` counts the writes of this session's list (1 for the first). */
export interface StoredTodos {
  session: string;
  version: number;
  updated_at: string;
  todos: TodoItem[];
}

export interface TodoScope {
  driver: StorageDriver;
  tenant: string;
  workspace: string;
  session: string;
  /** Bytes moved, for the call's usage record. */
  meter?: { read(bytes: number): void; written(bytes: number): void };
  /** Lists kept per workspace (default TODO_LIMITS.sessions). */
  maxSessions?: number;
}

interface Current {
  etag: string;
  value: StoredTodos | null;
}

async function load(scope: TodoScope, key: string): Promise<Current | null> {
  const got = await scope.driver.get(key);
  if (!got) return null;
  const text = await new Response(got.body).text();
  scope.meter?.read(got.range.length);
  try {
    const value = JSON.parse(text) as StoredTodos;
    return { etag: got.etag, value: Array.isArray(value?.todos) ? value : null };
  } catch {
    // An unreadable object is replaced by the next write (If-Match its etag), and reads as empty.
    return { etag: got.etag, value: null };
  }
}

/** The session's list and the etag of its object, or null when it has none. */
export async function readTodos(scope: TodoScope): Promise<(StoredTodos & { etag: string }) | null> {
  const current = await load(scope, todosKey(scope.tenant, scope.workspace, scope.session));
  return current?.value ? { ...current.value, etag: current.etag } : null;
}

/** Replaces the session's list with `todos` (already validated). */
export async function writeTodos(scope: TodoScope, todos: TodoItem[], now = new Date()): Promise<StoredTodos> {
  const key = todosKey(scope.tenant, scope.workspace, scope.session);
  for (let attempt = 0; attempt < 2; attempt++) {
    const current = await load(scope, key);
    const next: StoredTodos = { session: scope.session, version: (current?.value?.version ?? 0) + 1, updated_at: now.toISOString(), todos };
    const body = JSON.stringify(next);
    try {
      await scope.driver.put(key, body, { contentType: "application/json", ...(current ? { ifMatch: current.etag } : { ifNoneMatch: "*" }) });
    } catch (e) {
      if (isConditionFailed(e)) continue;
      throw e;
    }
    scope.meter?.written(new TextEncoder().encode(body).length);
    // Only once the new list exists (a failed call drops nothing), and as housekeeping: the list is saved either way.
    if (!current) await makeRoom(scope, key).catch((e) => console.error("todo lists: housekeeping failed", e instanceof Error ? e.message : String(e)));
    return next;
  }
  throw new ToolError(
    "CONFLICT",
    `Another todo_write of session ${scope.session} changed the list at the same moment, twice. Call todo_read to see the list now, then send the whole list again with todo_write.`,
    { session: scope.session },
  );
}

/** After a new session's list was created: keep at most maxSessions lists per workspace (this one included), dropping the least recently written others. */
async function makeRoom(scope: TodoScope, key: string): Promise<void> {
  const max = scope.maxSessions ?? TODO_LIMITS.sessions;
  const prefix = todosPrefix(scope.tenant, scope.workspace);
  const lists: ObjectInfo[] = [];
  let cursor: string | undefined;
  // Bounded: concurrent creates may pass the cap by a few, never by pages.
  for (let page = 0; page < 3; page++) {
    const r = await scope.driver.list({ prefix, limit: 1000, ...(cursor ? { cursor } : {}) });
    lists.push(...r.objects.filter((o) => o.key !== key));
    cursor = r.cursor;
    if (!cursor) break;
  }
  if (lists.length < max) return;
  lists.sort((a, b) => a.modified.getTime() - b.modified.getTime() || (a.key < b.key ? -1 : 1));
  await scope.driver.delete(lists.slice(0, lists.length - max + 1).map((o) => o.key));
}

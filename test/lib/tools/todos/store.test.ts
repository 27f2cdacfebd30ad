/**
 * The todo store on the real (local) R2: conditional writes with one retry, CONFLICT when a
 * competitor wins twice (and storage then holds the competitor's list), the per-workspace cap on
 * sessions, and an unreadable object.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { randomId } from "../../../../lib/shared/hash.js";
import { todosKey, todosPrefix } from "../../../../lib/layout/paths.js";
import { r2Driver } from "../../../../lib/storage/drivers/r2.js";
import type { PutBody, PutOptions, StorageDriver } from "../../../../lib/storage/types.js";
import { TodoListSchema, type TodoItem } from "../../../../lib/tools/todos/schema.js";
import { readTodos, writeTodos, type TodoScope } from "../../../../lib/tools/todos/store.js";

const item = (content: string, status: TodoItem["status"] = "pending"): TodoItem => ({ content, activeForm: `Doing ${content}`, status });

/** R2, where another writer replaces the list right before each of our first `races` puts of it. */
function racingDriver(races: number): { driver: StorageDriver; puts: PutOptions[] } {
  const base = r2Driver(env.FILES);
  const puts: PutOptions[] = [];
  let left = races;
  const driver: StorageDriver = {
    ...base,
    name: "racing",
    async put(key: string, body: PutBody, opts?: PutOptions) {
      if (key.includes("/x/todos/") && left > 0) {
        left--;
        await base.put(key, JSON.stringify({ session: "s", version: 100 + left, updated_at: new Date().toISOString(), todos: [item(`competitor ${left}`)] }));
      }
      puts.push(opts ?? {});
      return base.put(key, body, opts);
    },
  };
  return { driver, puts };
}

const scopeOf = (driver: StorageDriver, extra: Partial<TodoScope> = {}): TodoScope => ({ driver, tenant: `t-${randomId(8)}`, workspace: "main", session: "s", ...extra });

describe("todo store", () => {
  it("creates with If-None-Match: *, then overwrites with If-Match; versions count the writes", async () => {
    const { driver, puts } = racingDriver(0);
    const scope = scopeOf(driver);
    expect(await readTodos(scope)).toBeNull();
    expect((await writeTodos(scope, [item("a")])).version).toBe(1);
    expect((await writeTodos(scope, [item("b")])).version).toBe(2);
    expect(puts[0]).toMatchObject({ ifNoneMatch: "*" });
    expect(puts[1]?.ifMatch).toMatch(/^[0-9a-f]{32}$/);
    expect((await readTodos(scope))?.todos).toEqual([item("b")]);
  });

  it("retries once when another write got in between, and wins", async () => {
    for (const existing of [false, true]) {
      const { driver, puts } = racingDriver(1);
      const scope = scopeOf(driver);
      if (existing) await r2Driver(env.FILES).put(todosKey(scope.tenant, scope.workspace, "s"), JSON.stringify({ session: "s", version: 7, updated_at: "", todos: [] }));
      const saved = await writeTodos(scope, [item("mine", "in_progress")]);
      expect(saved.version, `existing: ${existing}`).toBe(101);
      expect(puts.length).toBe(2);
      expect(puts[1]?.ifMatch).toBeTruthy();
      expect((await readTodos(scope))?.todos).toEqual([item("mine", "in_progress")]);
    }
  });

  it("answers CONFLICT when the competitor wins twice, and leaves the competitor's list", async () => {
    const { driver } = racingDriver(2);
    const scope = scopeOf(driver);
    const err = await writeTodos(scope, [item("mine")]).catch((e) => e);
    expect(err.code).toBe("CONFLICT");
    expect(err.message).toContain("todo_read");
    expect((await readTodos(scope))?.todos).toEqual([item("competitor 0")]);
  });

  it("keeps at most maxSessions lists per workspace, dropping the least recently written", async () => {
    const driver = r2Driver(env.FILES);
    const base = scopeOf(driver, { maxSessions: 3 });
    for (const s of ["s1", "s2", "s3"]) {
      await writeTodos({ ...base, session: s }, [item(s)]);
      await new Promise((r) => setTimeout(r, 15));
    }
    // Rewriting s1 makes it the most recent; a rewrite creates nothing, so nothing is dropped.
    await writeTodos({ ...base, session: "s1" }, [item("s1 again")]);
    await new Promise((r) => setTimeout(r, 15));
    const keys = async () => (await driver.list({ prefix: todosPrefix(base.tenant, base.workspace) })).objects.map((o) => o.key.slice(o.key.lastIndexOf("/") + 1)).sort();
    expect(await keys()).toEqual(["s1.json", "s2.json", "s3.json"]);
    await writeTodos({ ...base, session: "s4" }, [item("s4")]);
    expect(await keys()).toEqual(["s1.json", "s3.json", "s4.json"]);
    expect(await readTodos({ ...base, session: "s2" })).toBeNull();
  });

  it("reads an unreadable object as no list, and the next write replaces it", async () => {
    const driver = r2Driver(env.FILES);
    const scope = scopeOf(driver);
    await driver.put(todosKey(scope.tenant, scope.workspace, "s"), "{not json");
    expect(await readTodos(scope)).toBeNull();
    expect((await writeTodos(scope, [item("fresh")])).version).toBe(1);
    expect((await readTodos(scope))?.todos).toEqual([item("fresh")]);
  });

  it("meters the bytes it reads and writes", async () => {
    let read = 0;
    let written = 0;
    const scope = scopeOf(r2Driver(env.FILES), { meter: { read: (n) => void (read += n), written: (n) => void (written += n) } });
    await writeTodos(scope, [item("a")]);
    expect(read).toBe(0);
    const size = (await env.FILES.head(todosKey(scope.tenant, scope.workspace, "s")))!.size;
    expect(written).toBe(size);
    await readTodos(scope);
    expect(read).toBe(size);
  });
});

describe("TodoListSchema", () => {
  it("is the one place the list's rules live", () => {
    expect(TodoListSchema.safeParse([item("a", "in_progress"), item("b", "in_progress")]).success).toBe(false);
    expect(TodoListSchema.safeParse([item("a", "in_progress"), item("b", "completed")]).success).toBe(true);
    expect(TodoListSchema.safeParse([]).success).toBe(true);
  });
});

/** todo_write and todo_read through the HTTP API, and the app's GET .../sessions/{session}/todos. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { todosKey } from "../../lib/layout/paths.js";
import { TODO_LIMITS } from "../../lib/tools/todos/schema.js";
import { newTenant, testApp, upload, type Tenant } from "../helpers.js";
import { callRaw, expectAuthErrors, expectError, expectMissingWorkspace, expectOk } from "./file-helpers.js";

const item = (content: string, status: "pending" | "in_progress" | "completed" = "pending", activeForm = `Doing: ${content}`) => ({ content, activeForm, status });
const PLAN = [
  item("Read the existing code", "completed", "Reading the existing code"),
  item("Write unit tests", "in_progress", "Writing unit tests"),
  item("Implement the feature", "pending", "Implementing the feature"),
];

async function appTodos(t: Tenant, session: string, ws = t.ws, key = t.key) {
  const res = await t.app.request(`/v1/workspaces/${ws}/sessions/${encodeURIComponent(session)}/todos`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: (await res.json()) as any };
}

/** The stored object of a session's list (etag + parsed body), straight from R2. */
async function stored(t: Tenant, session: string) {
  const o = await env.FILES.get(todosKey(t.tenant, t.ws, session));
  return o ? { etag: o.etag, value: JSON.parse(await o.text()) } : null;
}

describe("todo_write and todo_read", () => {
  it("saves a list, renders it for the model, reads it back, and the app sees it", async () => {
    const t = await newTenant();
    const w = await t.call("todo_write", { todos: PLAN });
    const data = expectOk(w);
    expect(w.body.tool).toBe("todo_write");
    expect(data).toMatchObject({ success: true, count: 3, counts: { pending: 1, in_progress: 1, completed: 1 }, session: "s1" });
    expect(Number.isNaN(Date.parse(data.updated_at))).toBe(false);
    expect(w.body.output).toContain(
      ["Todos (1/3 completed, 1 in progress, 1 pending):", "[x] Read the existing code", "[>] Write unit tests (Writing unit tests)", "[ ] Implement the feature"].join("\n"),
    );
    expect(w.body.usage.bytes_written).toBeGreaterThan(100);

    const r = await t.call("todo_read", {});
    expect(expectOk(r)).toEqual({ todos: PLAN, count: 3, counts: { pending: 1, in_progress: 1, completed: 1 }, session: "s1", updated_at: data.updated_at });
    expect(r.body.output).toContain("[>] Write unit tests");
    expect(r.body.usage.bytes_read).toBeGreaterThan(100);

    const a = await appTodos(t, "s1");
    expect(a).toEqual({ status: 200, body: { session: "s1", todos: PLAN, updated_at: data.updated_at } });
    // One object in the workspace's internal area, never a file.
    expect((await stored(t, "s1"))?.value).toMatchObject({ session: "s1", version: 1, todos: PLAN });
    await upload(t, "notes.md", "a file\n");
    const ls = expectOk(await t.call("ls", { path: "/", recursive: true, show_hidden: true }));
    expect(ls.entries.map((e: { path?: string; name?: string }) => e.path ?? e.name)).toEqual(["notes.md"]);
    expect(expectOk(await t.call("glob", { pattern: "**/*" })).matches.map((m: { path: string }) => m.path)).toEqual(["notes.md"]);
  });

  it("replaces the whole list on each write; an empty list clears it", async () => {
    const t = await newTenant();
    expectOk(await t.call("todo_write", { todos: PLAN }));
    const second = [item("Ship it", "in_progress", "Shipping it")];
    const w = await t.call("todo_write", { todos: second });
    expect(expectOk(w)).toMatchObject({ count: 1, counts: { pending: 0, in_progress: 1, completed: 0 } });
    expect(expectOk(await t.call("todo_read", {})).todos).toEqual(second);
    expect((await stored(t, "s1"))?.value.version).toBe(2);

    const cleared = await t.call("todo_write", { todos: [] });
    expect(expectOk(cleared)).toMatchObject({ success: true, count: 0 });
    expect(cleared.body.output).toBe("Todo list cleared.");
    const r = await t.call("todo_read", {});
    expect(expectOk(r).todos).toEqual([]);
    expect(r.body.output).toContain("empty");
    expect((await appTodos(t, "s1")).body.todos).toEqual([]);
  });

  it("nudges when nothing is in progress, and says when all is done", async () => {
    const t = await newTenant();
    const idle = await t.call("todo_write", { todos: [item("a"), item("b")] });
    expect(idle.body.output).toContain("No todo is in_progress");
    const done = await t.call("todo_write", { todos: [item("a", "completed"), item("b", "completed")] });
    expect(done.body.output).toContain("All todos are completed");
  });

  it("keeps sessions apart, and a session with no list reads as empty", async () => {
    const t = await newTenant();
    const one = [item("first session", "in_progress")];
    const two = [item("second session"), item("and more", "completed")];
    expectOk(await t.call("todo_write", { todos: one }, "s1"));
    expectOk(await t.call("todo_write", { todos: two }, "agent:2.b_c-d"));
    expect(expectOk(await t.call("todo_read", {}, "s1")).todos).toEqual(one);
    expect(expectOk(await t.call("todo_read", {}, "agent:2.b_c-d")).todos).toEqual(two);
    const none = expectOk(await t.call("todo_read", {}, "s3"));
    expect(none).toMatchObject({ todos: [], count: 0, session: "s3", updated_at: null });
    expect((await appTodos(t, "agent:2.b_c-d")).body.todos).toEqual(two);
    expect(await appTodos(t, "never-used")).toEqual({ status: 200, body: { session: "never-used", todos: [], updated_at: null } });
    // Clearing one leaves the other.
    expectOk(await t.call("todo_write", { todos: [] }, "s1"));
    expect(expectOk(await t.call("todo_read", {}, "agent:2.b_c-d")).todos).toEqual(two);
  });

  it("refuses two todos in_progress, naming them, and leaves the stored list as it was", async () => {
    const t = await newTenant();
    expectOk(await t.call("todo_write", { todos: PLAN }));
    const before = await stored(t, "s1");
    const e = expectError(await t.call("todo_write", { todos: [item("Fix lint", "in_progress"), item("Idle"), item("Run tests", "in_progress")] }), 400, "INVALID_ARGUMENT", "todo_write");
    expect(e.message).toContain("only one todo may be in_progress");
    expect(e.message).toContain('todos[0] "Fix lint"');
    expect(e.message).toContain('todos[2] "Run tests"');
    expect(await stored(t, "s1")).toEqual(before);
  });

  it("bounds the list: items, characters per field, bytes in all; every refusal says how to fix it and writes nothing", async () => {
    const t = await newTenant();
    expectOk(await t.call("todo_write", { todos: PLAN }));
    const before = await stored(t, "s1");
    const refused = async (todos: unknown, expected: string) => {
      const e = expectError(await t.call("todo_write", { todos }), 400, "INVALID_ARGUMENT", "todo_write");
      expect(e.message).toContain(expected);
      expect(await stored(t, "s1")).toEqual(before);
    };
    const many = (n: number, chars = 10) => Array.from({ length: n }, (_, i) => item(`${i}`.padEnd(chars, "x"), "pending", "y".repeat(chars)));
    await refused(many(TODO_LIMITS.items + 1), `more than ${TODO_LIMITS.items} todos`);
    await refused([item("x".repeat(TODO_LIMITS.chars + 1))], `content is longer than ${TODO_LIMITS.chars} characters`);
    await refused([item("😀".repeat(TODO_LIMITS.chars + 1))], `content is longer than ${TODO_LIMITS.chars} characters`);
    await refused([item("ok", "pending", "y".repeat(TODO_LIMITS.chars + 1))], `activeForm is longer than ${TODO_LIMITS.chars} characters`);
    // 100 todos of 2 x 400 characters pass each bound but not the 64 KB of the whole list.
    await refused(many(TODO_LIMITS.items, 400), `more than ${TODO_LIMITS.bytes}`);
    await refused([item("   ")], "content is empty");
    await refused([{ content: "a", status: "pending" }], "activeForm");
    await refused([{ content: "a", activeForm: "b", status: "done" }], "status");
    await refused("not a list", "todos");
    // At the bounds exactly: accepted.
    expect(expectOk(await t.call("todo_write", { todos: many(TODO_LIMITS.items) })).count).toBe(TODO_LIMITS.items);
    expect(expectOk(await t.call("todo_write", { todos: [item("x".repeat(TODO_LIMITS.chars), "pending", "y".repeat(TODO_LIMITS.chars))] })).count).toBe(1);
    // A lone surrogate cannot be stored as UTF-8 without turning into U+FFFD: refused.
    const before2 = await stored(t, "s1");
    const lone = await callRaw(t, "todo_write", '{"todos":[{"content":"bad \\ud800 half","activeForm":"x","status":"pending"}]}');
    expect(expectError(lone, 400, "INVALID_ARGUMENT").message).toContain("well-formed Unicode");
    expect(await stored(t, "s1")).toEqual(before2);
  });

  it("keeps any Unicode exactly: emoji, CJK, combining marks, right-to-left, newlines", async () => {
    const t = await newTenant();
    const todos = [
      item("Fix the 🐛 in 日本語 parsing", "in_progress", "Fixing the 🐛 in 日本語 parsing"),
      item("Cafe\u0301 vs café: keep both forms", "pending", "Keeping e\u0301"),
      item("עדכן את התיעוד", "completed", "מעדכן"),
      item("two\nlines", "pending", "x"),
      // Characters are code points: a thousand emoji (two UTF-16 units each) fit.
      item("😀".repeat(TODO_LIMITS.chars), "pending", "emoji"),
    ];
    expectOk(await t.call("todo_write", { todos }));
    const r = await t.call("todo_read", {});
    expect(expectOk(r).todos).toEqual(todos);
    expect((await appTodos(t, "s1")).body.todos).toEqual(todos);
    expect(r.body.output).toContain("[>] Fix the 🐛 in 日本語 parsing (Fixing the 🐛 in 日本語 parsing)");
    // The rendering keeps one line per todo.
    expect(r.body.output).toContain("[ ] two lines");
    expect(r.body.output.split("\n")).toHaveLength(todos.length + 1);
  });

  it("isolates tenants: B cannot read or change A's todos (404, as for a workspace that does not exist)", async () => {
    const app = testApp();
    const a = await newTenant(app);
    const b = await newTenant(app);
    expectOk(await a.call("todo_write", { todos: PLAN }));
    const before = await stored(a, "s1");
    // B's own workspace "main" is its own: B's session s1 has no list there.
    expect(expectOk(await b.call("todo_read", {})).todos).toEqual([]);
    // A's workspace by another id, so B's own "main" cannot answer.
    const ws2 = await a.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "a-only" }) });
    expect(ws2.status).toBe(201);
    const onA2 = async (tool: string, args: unknown) => {
      const res = await b.req(`/v1/workspaces/a-only/tools/${tool}`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify(args) });
      return { status: res.status, body: (await res.json()) as any };
    };
    expectOk(await a.req("/v1/workspaces/a-only/tools/todo_write", { method: "POST", headers: { "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify({ todos: PLAN }) }).then(async (r) => ({ status: r.status, body: await r.json() })));
    const aOnly = await env.FILES.get(todosKey(a.tenant, "a-only", "s1"));
    const aOnlyEtag = aOnly?.etag;
    expect(aOnlyEtag).toBeTruthy();
    expectError(await onA2("todo_read", {}), 404, "NOT_FOUND", "todo_read");
    expectError(await onA2("todo_write", { todos: [item("pwned")] }), 404, "NOT_FOUND", "todo_write");
    const routeB = await appTodos(b, "s1", "a-only", b.key);
    expect(routeB.status).toBe(404);
    expect(routeB.body.error.code).toBe("NOT_FOUND");
    // The very answer a workspace that does not exist gets.
    const missing = await appTodos(b, "s1", "no-such-ws", b.key);
    expect(JSON.stringify(routeB.body).replaceAll("a-only", "X")).toBe(JSON.stringify(missing.body).replaceAll("no-such-ws", "X"));
    expect(JSON.stringify(routeB.body)).not.toContain("Read the existing code");
    expect((await env.FILES.get(todosKey(a.tenant, "a-only", "s1")))?.etag).toBe(aOnlyEtag);
    // And A's "main" list is untouched by B writing in its own "main", same session id.
    expectOk(await b.call("todo_write", { todos: [item("B's own")] }));
    expect(await stored(a, "s1")).toEqual(before);
    expect(expectOk(await a.call("todo_read", {})).todos).toEqual(PLAN);
  });

  it("a read-only key may plan (todo_write needs 'read'); a key without 'read' may not, nor read the app route", async () => {
    const t = await newTenant(undefined, { scopes: ["read"] });
    expectOk(await t.call("todo_write", { todos: PLAN }));
    expect(expectOk(await t.call("todo_read", {})).todos).toEqual(PLAN);
    expect((await appTodos(t, "s1")).body.todos).toEqual(PLAN);
    // ... but it still cannot write a file.
    expectError(await t.call("write", { file_path: "a.txt", content: "x" }), 403, "PERMISSION_DENIED");

    const w = await newTenant(undefined, { scopes: ["write", "execute"] });
    const e = expectError(await w.call("todo_write", { todos: PLAN }), 403, "PERMISSION_DENIED", "todo_write");
    expect(e.message).toContain("'read' scope");
    expectError(await w.call("todo_read", {}), 403, "PERMISSION_DENIED", "todo_read");
    const r = await appTodos(w, "s1");
    expect({ status: r.status, code: r.body.error?.code }).toEqual({ status: 403, code: "PERMISSION_DENIED" });
    expect(await env.FILES.head(todosKey(w.tenant, w.ws, "s1"))).toBeNull();
  });

  it("the app route gives an ETag and answers 304 to If-None-Match while the list is unchanged", async () => {
    const t = await newTenant();
    const url = `/v1/workspaces/${t.ws}/sessions/s1/todos`;
    const get = (etag?: string) => t.req(url, etag ? { headers: { "if-none-match": etag } } : {});
    // No list yet: a stable ETag too, so polling works from the first request.
    const none = await get();
    expect(none.status).toBe(200);
    expect(await none.json()).toEqual({ session: "s1", todos: [], updated_at: null });
    const noneEtag = none.headers.get("etag")!;
    expect(noneEtag).toBe('"no-list"');
    expect((await get()).headers.get("etag")).toBe(noneEtag);
    const still = await get(noneEtag);
    expect(still.status).toBe(304);
    expect(still.headers.get("etag")).toBe(noneEtag);
    expectOk(await t.call("todo_write", { todos: PLAN }));
    expect((await get(noneEtag)).status).toBe(200);
    const first = await get();
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^"[^"]+"$/);
    expect((await get(etag)).status).toBe(304);
    expect((await get(`"other", ${etag}`)).status).toBe(304);
    expectOk(await t.call("todo_write", { todos: PLAN.slice(0, 1) }));
    const changed = await get(etag);
    expect(changed.status).toBe(200);
    expect(changed.headers.get("etag")).not.toBe(etag);
    expect(((await changed.json()) as any).todos).toEqual(PLAN.slice(0, 1));
  });

  it("the app route: bad session ids, unknown workspaces and missing keys get clear errors", async () => {
    const t = await newTenant();
    for (const bad of ["has space", "a/b", "x".repeat(129), "ümlaut"]) {
      const r = await appTodos(t, bad);
      expect({ status: r.status, code: r.body.error?.code }, bad).toEqual({ status: 400, code: "INVALID_ARGUMENT" });
      expect(r.body.error.message).toContain("X-Session-Id");
    }
    const missing = await appTodos(t, "s1", "no-such-ws");
    expect({ status: missing.status, code: missing.body.error?.code }).toEqual({ status: 404, code: "NOT_FOUND" });
    const anon = await t.app.request(`/v1/workspaces/${t.ws}/sessions/s1/todos`);
    expect(anon.status).toBe(401);
    // The tools refuse a bad X-Session-Id the same way.
    expectError(await t.call("todo_write", { todos: PLAN }, "has space"), 400, "INVALID_ARGUMENT");
    await expectAuthErrors(t, "todo_read", {});
    await expectMissingWorkspace(t, "todo_write", { todos: PLAN });
  });

  it("survives a restart: a new app instance over the same storage sees the list", async () => {
    const t = await newTenant();
    const w = expectOk(await t.call("todo_write", { todos: PLAN }, "long-lived"));
    const fresh = testApp();
    const res = await fresh.request(`/v1/workspaces/${t.ws}/tools/todo_read`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": "long-lived" }, body: "{}" });
    const body = (await res.json()) as any;
    expect(res.status).toBe(200);
    expect(body.data).toMatchObject({ todos: PLAN, updated_at: w.updated_at });
    const route = await fresh.request(`/v1/workspaces/${t.ws}/sessions/long-lived/todos`, { headers: { authorization: `Bearer ${t.key}` } });
    expect(await route.json()).toEqual({ session: "long-lived", todos: PLAN, updated_at: w.updated_at });
  });

  it("is listed in /v1/tools as a planning tool needing 'read', with its bounds in the JSON Schema", async () => {
    const t = await newTenant();
    const { tools } = (await (await t.app.request("/v1/tools")).json()) as { tools: any[] };
    const w = tools.find((x) => x.name === "todo_write");
    const r = tools.find((x) => x.name === "todo_read");
    expect([w.category, w.permission, r.category, r.permission]).toEqual(["planning", "read", "planning", "read"]);
    const todos = w.input_schema.properties.todos;
    expect(todos.maxItems).toBe(TODO_LIMITS.items);
    expect(todos.items.required).toEqual(["content", "activeForm", "status"]);
    expect(todos.items.properties.content.maxLength).toBe(TODO_LIMITS.chars);
    expect(todos.items.properties.activeForm.maxLength).toBe(TODO_LIMITS.chars);
    expect(todos.items.properties.status.enum).toEqual(["pending", "in_progress", "completed"]);
    const doc = (await (await t.app.request("/openapi.json")).json()) as any;
    expect(doc.paths["/v1/workspaces/{ws}/sessions/{session}/todos"]?.get).toBeTruthy();
    expect(doc.paths["/v1/workspaces/{ws}/tools/todo_write"]?.post).toBeTruthy();
  });

  it("goes away with its workspace", async () => {
    const t = await newTenant();
    expectOk(await t.call("todo_write", { todos: PLAN }));
    expect((await t.req(`/v1/workspaces/${t.ws}`, { method: "DELETE" })).status).toBe(200);
    expect(await env.FILES.head(todosKey(t.tenant, t.ws, "s1"))).toBeNull();
  });
});

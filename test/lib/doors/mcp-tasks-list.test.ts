/**
 * MCP 2025-11-25 tasks/list on the Workers runtime (local R2 and KV, the official 1.x client over
 * app.request): two keys of one tenant on one workspace each list only their own tasks (and by id,
 * another key's task is not found); 1,050 tasks
 * of one key neither hide another key's task nor cost that key more than its page (storage operations
 * counted: test/support/counting-stores.ts); cursor paging gives every task of a key once, newest
 * first; a cursor not given by the list is -32602. Beside them, two door answers: a tools/call with a
 * task whose arguments the tool refuses is a failed task (the spec's tool execution error, as without a
 * task), and a request refused for its Origin is a JSON-RPC error.
 */
import { env } from "cloudflare:workers";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, CreateTaskResultSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { createCallTask } from "../../../lib/run/tasks/store.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { admin, newTenant, testApp, type TestApp } from "../../helpers.js";
import { countingStores } from "../../support/counting-stores.js";

async function connect(app: TestApp, ws: string, key: string): Promise<Client> {
  const client = new Client({ name: "tasks-list-test", version: "1.0.0" }, { capabilities: { tasks: { list: {}, cancel: {} } } });
  const url = new URL(`http://127.0.0.1/v1/workspaces/${ws}/mcp`);
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${key}`, "x-session-id": "s1" } }, fetch: async (input, init) => app.request(String(input), init as RequestInit) }));
  return client;
}
const startTask = async (client: Client, name: string, args: Record<string, unknown>) =>
  (await client.request({ method: "tools/call", params: { name, arguments: args, task: {} } }, CreateTaskResultSchema)).task;
const text = (r: any) => (r.content as { type: string; text: string }[]).map((c) => c.text).join("");

/** Every task id of the client's list, page by page (and the pages' sizes). */
async function listAll(client: Client): Promise<{ ids: string[]; pages: number[] }> {
  const ids: string[] = [];
  const pages: number[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.experimental.tasks.listTasks(cursor);
    ids.push(...page.tasks.map((t) => t.taskId));
    pages.push(page.tasks.length);
    cursor = page.nextCursor;
  } while (cursor);
  return { ids, pages };
}

describe("tasks/list: a key's own tasks, in bounded reads", () => {
  it("two keys of one tenant on one workspace each list only their own; 1,050 of one key do not hide the other's one, which costs 1 LIST and 1 GET; paging gives each task once, newest first", async () => {
    const stores = countingStores({ steps: false });
    const app = testApp({ storage: stores.storage, kv: stores.kv });
    const t = await newTenant(app);
    const keyOf = async (name: string) => (await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { name })).body as { key: string; key_id: string };
    const [a, b] = [await keyOf("a"), await keyOf("b")];
    const ca = await connect(app, t.ws, a.key);
    const cb = await connect(app, t.ws, b.key);
    const mineA = [await startTask(ca, "ls", {}), await startTask(ca, "ls", {})].map((x) => x.taskId);
    const mineB = (await startTask(cb, "ls", {})).taskId;
    expect((await listAll(ca)).ids).toEqual([...mineA].reverse());
    expect((await listAll(cb)).ids).toEqual([mineB]);
    // By id, another key's task is not found, as one that never existed (tasks/get, tasks/result, tasks/cancel).
    for (const ask of [() => cb.experimental.tasks.getTask(mineA[0]!), () => cb.experimental.tasks.getTaskResult(mineA[0]!, CallToolResultSchema), () => cb.experimental.tasks.cancelTask(mineA[0]!)]) {
      const e = await ask().then(() => null, (err: unknown) => err);
      expect(e).toBeInstanceOf(McpError);
      expect((e as McpError).code).toBe(-32602);
      expect((e as McpError).message).toMatch(/NOT_FOUND/);
    }

    // 1,048 more of key A, through the task layer on the same R2 (uncounted), a millisecond apart so their order is known.
    const r2 = r2Driver(env.FILES);
    const base = Date.now() + 1000;
    for (let i = 0; i < 1048; i += 50) {
      const made = await Promise.all(Array.from({ length: Math.min(50, 1048 - i) }, (_, j) => createCallTask({ storage: r2, tenant: t.tenant, workspace: t.ws, key_id: a.key_id, now: () => base + i + j }, { tool: "ls", session: "s1", ttl_ms: 3_600_000 })));
      mineA.push(...made.map((m) => m.rec.id));
    }
    expect(mineA).toHaveLength(1050);

    const from = stores.log.length;
    const listedB = await cb.experimental.tasks.listTasks();
    const taskOps = stores.log.slice(from).filter((o) => o.endsWith("internal:call-tasks"));
    expect(listedB.tasks.map((x) => x.taskId)).toEqual([mineB]);
    expect(listedB.nextCursor).toBeUndefined();
    expect(taskOps.sort()).toEqual(["r2.get internal:call-tasks", "r2.list internal:call-tasks"]);

    // Key A's first page: 1 LIST and a GET a task on it.
    const fromA = stores.log.length;
    const firstA = await ca.experimental.tasks.listTasks();
    const opsA = stores.log.slice(fromA).filter((o) => o.endsWith("internal:call-tasks"));
    expect(firstA.tasks).toHaveLength(100);
    expect(firstA.nextCursor).toEqual(expect.any(String));
    expect(opsA.filter((o) => o.startsWith("r2.list"))).toHaveLength(1);
    expect(opsA.filter((o) => o.startsWith("r2.get"))).toHaveLength(100);

    const all = await listAll(ca);
    expect(all.pages).toHaveLength(11);
    expect(new Set(all.ids).size).toBe(all.ids.length);
    // Newest first: the 1,048 made later, newest first, then the two made through the door, newest first.
    expect(all.ids).toEqual([...mineA.slice(2)].reverse().concat([...mineA.slice(0, 2)].reverse()));
    expect(all.ids).not.toContain(mineB);

    const bad = await ca.experimental.tasks.listTasks("not-a-cursor").then(() => null, (e: unknown) => e);
    expect(bad).toBeInstanceOf(McpError);
    expect((bad as McpError).code).toBe(-32602);
    await ca.close();
    await cb.close();
  }, 120_000);
});

describe("two door answers", () => {
  it("a tools/call with a task whose arguments the tool refuses is a failed task, its result the tool's INVALID_ARGUMENT, as without a task (the spec: input validation is a tool execution error)", async () => {
    const t = await newTenant();
    const client = await connect(t.app, t.ws, t.key);
    const task = await startTask(client, "read", { file_path: 5 });
    expect(task.status).toBe("failed");
    const asTask = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    const direct = await client.callTool({ name: "read", arguments: { file_path: 5 } });
    expect(asTask.isError).toBe(true);
    expect(text(asTask)).toMatch(/^INVALID_ARGUMENT: /);
    expect(text(asTask)).toBe(text(direct));
    await client.close();
  });

  it("a request refused for its Origin answers a JSON-RPC error: 403, code -32000 (the SDK's), no id (the spec: the error response has none)", async () => {
    const t = await newTenant();
    const r = await t.req(`/v1/workspaces/${t.ws}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", origin: "http://evil.example" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list", params: {} }),
    });
    expect(r.status).toBe(403);
    expect(r.headers.get("content-type")).toMatch(/^application\/json/);
    const body = (await r.json()) as any;
    expect(body).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32000, message: expect.stringMatching(/^PERMISSION_DENIED: Origin http:\/\/evil\.example may not call this MCP endpoint/), data: { code: "PERMISSION_DENIED" } } });
    expect(body.ok).toBeUndefined();
  });
});

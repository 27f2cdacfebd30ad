/**
 * MCP tasks on the Workers runtime (local R2 and KV, the official 1.x client over app.request): the
 * task records' conditional writes on R2, an approval answered through the pending API, ask_user by
 * elicitation, a refused held call cancelled (it never runs from a later approval), another tenant's
 * task id not found. The sandbox runs are tested in Node (mcp-tasks.node.test.ts).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { admin, newTenant, upload, type Tenant } from "../../helpers.js";

async function connect(t: Tenant, onAsk?: (message: string) => ElicitResult): Promise<Client> {
  const client = new Client({ name: "tasks-test", version: "1.0.0" }, { capabilities: { tasks: { list: {}, cancel: {} }, ...(onAsk ? { elicitation: { form: {} } } : {}) } });
  if (onAsk) client.setRequestHandler(ElicitRequestSchema, async (req) => onAsk(req.params.message));
  const url = new URL(`http://127.0.0.1/v1/workspaces/${t.ws}/mcp`);
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${t.key}`, "x-session-id": "s1" } }, fetch: async (input, init) => t.app.request(String(input), init as RequestInit) }));
  return client;
}
const startTask = async (client: Client, name: string, args: Record<string, unknown>) =>
  (await client.request({ method: "tools/call", params: { name, arguments: args, task: {} } }, CreateTaskResultSchema)).task;
const text = (r: any) => (r.content as { type: string; text: string }[]).map((c) => c.text).join("");
const approverKey = async (t: Tenant) => (await admin(t.app, `/v1/admin/tenants/${t.tenant}/keys`, { name: "app", scopes: ["read", "approve"] })).body.key as string;
const answer = async (t: Tenant, key: string, id: string, body: unknown) =>
  (await t.app.request(`/v1/workspaces/${t.ws}/pending/${id}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) })).status;

describe("MCP tasks on Workers", () => {
  it("a held write as a task: approved in the app, its result through tasks/result; another tenant's task id is not found", async () => {
    const t = await newTenant();
    await admin(t.app, `/v1/admin/tenants/${t.tenant}/policy`, { gate: [{ tool: "write" }] }, "PUT");
    const client = await connect(t);
    const task = await startTask(client, "write", { file_path: "a.txt", content: "hello" });
    expect(task.status).toBe("input_required");
    const got = await client.experimental.tasks.getTask(task.taskId);
    const id = got._meta?.["toolshed/pending_id"] as string;
    expect((await t.req(`/v1/workspaces/${t.ws}/files/a.txt`)).status).toBe(404); // nothing ran
    expect(await answer(t, await approverKey(t), id, { approved: true })).toBe(200);
    const r = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(r.isError ?? false, text(r)).toBe(false);
    expect(text(r)).toMatch(/^A human approved this write call; it ran\.\n/);
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe("completed");

    const other = await connect(await newTenant(t.app));
    await expect(other.experimental.tasks.getTask(task.taskId)).rejects.toThrow(/NOT_FOUND/);
    await expect(other.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)).rejects.toThrow(/NOT_FOUND/);
    await client.close();
    await other.close();
  });

  it("ask_user as a task, answered by elicitation; a cancelled held call never runs from a later approval", async () => {
    const t = await newTenant();
    const client = await connect(t, () => ({ action: "accept", content: { answer: "blue" } }));
    const ask = await startTask(client, "ask_user", { question: "Colour?" });
    expect(ask.status).toBe("input_required");
    expect(text(await client.experimental.tasks.getTaskResult(ask.taskId, CallToolResultSchema))).toBe("The user answered: blue");

    await admin(t.app, `/v1/admin/tenants/${t.tenant}/policy`, { gate: [{ tool: "delete" }] }, "PUT");
    await upload(t, "keep.txt", "x");
    const held = await startTask(client, "delete", { path: "keep.txt" });
    const id = (await client.experimental.tasks.getTask(held.taskId))._meta?.["toolshed/pending_id"] as string;
    expect((await client.experimental.tasks.cancelTask(held.taskId)).status).toBe("cancelled");
    expect(await answer(t, await approverKey(t), id, { approved: true })).toBe(409);
    expect((await t.req(`/v1/workspaces/${t.ws}/files/keep.txt`)).status).toBe(200);
    const r = await client.experimental.tasks.getTaskResult(held.taskId, CallToolResultSchema);
    expect(text(r)).toMatch(/^CANCELLED: .*the held call will never run/);
    await client.close();
  });
});

describe("tasks by revision", () => {
  it("an unknown tool's name: the closest one, plainly and as a task, as the tool route says it", async () => {
    const t = await newTenant();
    const client = await connect(t);
    const plain = await client.callTool({ name: "raed", arguments: { file_path: "a.txt" } });
    expect(plain.isError).toBe(true);
    expect(text(plain)).toMatch(/^NOT_FOUND: No tool named 'raed'\. Did you mean 'read'\? Tools this key can use: read, .*tools\/list lists them/);
    await expect(startTask(client, "raed", { file_path: "a.txt" })).rejects.toThrow(/No tool named 'raed'\. Did you mean 'read'\?/);
    // a tool the key may not use is named with why
    const readonly = (await admin(t.app, `/v1/admin/tenants/${t.tenant}/keys`, { name: "ro", tools: "readonly" })).body.key as string;
    const ro = await connect({ ...t, key: readonly });
    expect(text(await ro.callTool({ name: "wirte", arguments: {} }))).toMatch(/Did you mean 'write'\? \(not usable here: The write tool /);
    await client.close();
    await ro.close();
  });

  it("initialize offers the tasks capability to a 2025-11-25 client only; 2025-06-18 and 2025-03-26 get tools alone", async () => {
    const t = await newTenant();
    const init = async (protocolVersion: string) => {
      const r = await t.app.request(`/v1/workspaces/${t.ws}/mcp`, {
        method: "POST",
        headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion, capabilities: {}, clientInfo: { name: "rev", version: "1" } } }),
      });
      expect(r.status).toBe(200);
      return ((await r.json()) as any).result;
    };
    const now = await init("2025-11-25");
    expect(now.protocolVersion).toBe("2025-11-25");
    expect(now.capabilities).toMatchObject({ tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } });
    for (const v of ["2025-06-18", "2025-03-26"]) {
      const older = await init(v);
      expect(older.protocolVersion).toBe(v);
      expect(older.capabilities, v).toEqual({ tools: {} });
    }
  });
});

/**
 * The audit entries of the MCP and SSE doors (issue #28 §4, docs/audit.md): a tools/call that may
 * change the workspace is recorded with door "mcp", a streamed call with "sse"; tools/list and
 * reads are not; no entry holds the content written.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { createApp } from "../../../lib/api/app.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";

const ADMIN = "mcp-audit-admin";
const app = createApp({ storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN }, tools);
let key = "";
const req = (path: string, init: RequestInit = {}, auth = key) =>
  app.request(path, { ...init, headers: { authorization: `Bearer ${auth}`, "content-type": "application/json", ...(init.headers as Record<string, string> | undefined) } });

beforeAll(async () => {
  expect((await req("/v1/admin/tenants", { method: "POST", body: JSON.stringify({ id: "mcpaudit" }) }, ADMIN)).status).toBe(201);
  key = ((await (await req("/v1/admin/tenants/mcpaudit/keys", { method: "POST", body: JSON.stringify({ scopes: ["read", "write", "manage"] }) }, ADMIN)).json()) as { key: string }).key;
  expect((await req("/v1/workspaces", { method: "POST", body: JSON.stringify({ id: "main" }) })).status).toBe(201);
});

describe("audit entries by the MCP and SSE doors", () => {
  it("an MCP write and a streamed edit are recorded by their door; the list and the read are not", async () => {
    const CONTENT = "MCP-SECRET-91f0c2";
    const client = new Client({ name: "audit-test", version: "1.0.0" });
    const headers = { authorization: `Bearer ${key}`, "x-session-id": "m1" };
    await client.connect(new StreamableHTTPClientTransport(new URL("http://127.0.0.1/v1/workspaces/main/mcp"), { requestInit: { headers }, fetch: async (input, init) => app.request(String(input), init as RequestInit) }));
    await client.listTools();
    expect((await client.callTool({ name: "write", arguments: { file_path: "m.txt", content: CONTENT } })).isError).toBeFalsy();
    expect((await client.callTool({ name: "read", arguments: { file_path: "m.txt" } })).isError).toBeFalsy();
    await client.close();
    const streamed = await req("/v1/workspaces/main/tools/edit", { method: "POST", headers: { accept: "text/event-stream", "x-session-id": "m1" }, body: JSON.stringify({ file_path: "m.txt", old_string: CONTENT, new_string: "x" }) });
    expect(await streamed.text()).toContain("event: result");

    const res = await req("/v1/workspaces/main/audit");
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).not.toContain(CONTENT);
    const entries = (JSON.parse(text) as { entries: any[] }).entries;
    expect(entries.map((e) => `${e.door} ${e.tool ?? e.route}`)).toEqual(["mcp write", "sse edit"]);
    expect(entries[0]).toMatchObject({ session: "m1", args: { file_path: "m.txt", content_bytes: CONTENT.length }, files: ["m.txt"], outcome: { ok: true } });
    expect(entries[1]).toMatchObject({ files: ["m.txt"], outcome: { ok: true } });
    expect(typeof entries[1].call_id).toBe("string");
  });
});

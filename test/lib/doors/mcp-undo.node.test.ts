/**
 * MCP and per-call undo: a tools/call that changed files carries its undo id in
 * _meta["toolshed/call_id"], and POST /v1/workspaces/{ws}/undo with it puts the files back.
 * In-process: the official SDK Client over app.request, memory storage.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { createApp } from "../../../lib/api/app.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";

const ADMIN = "mcp-undo-admin";
const app = createApp({ storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN }, tools);
let key = "";

const req = (path: string, init: RequestInit = {}, auth = key) =>
  app.request(path, { ...init, headers: { authorization: `Bearer ${auth}`, "content-type": "application/json", ...(init.headers as Record<string, string> | undefined) } });
const undo = async (body: Record<string, unknown>, session = "m1") => {
  const res = await req("/v1/workspaces/main/undo", { method: "POST", headers: { "x-session-id": session }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
};
const raw = async (path: string) => {
  const res = await req(`/v1/workspaces/main/files/${path}`);
  return res.status === 200 ? res.text() : null;
};

async function mcpClient(session = "m1"): Promise<Client> {
  const client = new Client({ name: "undo-test", version: "1.0.0" });
  const headers = { authorization: `Bearer ${key}`, "x-session-id": session };
  await client.connect(new StreamableHTTPClientTransport(new URL("http://127.0.0.1/v1/workspaces/main/mcp"), { requestInit: { headers }, fetch: async (input, init) => app.request(String(input), init as RequestInit) }));
  return client;
}

/** A _meta key as the MCP spec allows: an optional prefix of dot-separated labels and a slash, then a name. */
const META_KEY = /^(?:[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\/)?(?:[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)?$/;

beforeAll(async () => {
  expect((await req("/v1/admin/tenants", { method: "POST", body: JSON.stringify({ id: "mcpundo" }) }, ADMIN)).status).toBe(201);
  key = ((await (await req("/v1/admin/tenants/mcpundo/keys", { method: "POST", body: "{}" }, ADMIN)).json()) as { key: string }).key;
  expect((await req("/v1/workspaces", { method: "POST", body: JSON.stringify({ id: "main" }) })).status).toBe(201);
});

describe("MCP results carry the call's undo id", () => {
  it("a write returns _meta[toolshed/call_id]; undo with it restores the file; a read has none", async () => {
    const client = await mcpClient();
    const created = await client.callTool({ name: "write", arguments: { file_path: "notes.md", content: "first\n" } });
    expect(created.isError).toBeFalsy();
    const createdId = created._meta?.["toolshed/call_id"];
    expect(createdId).toEqual(expect.stringMatching(/^m1~/));
    for (const k of Object.keys(created._meta ?? {})) expect(k).toMatch(META_KEY);

    const read = await client.callTool({ name: "read", arguments: { file_path: "notes.md" } });
    expect(read.isError).toBeFalsy();
    expect(read._meta?.["toolshed/call_id"]).toBeUndefined();

    const overwritten = await client.callTool({ name: "write", arguments: { file_path: "notes.md", content: "second\n" } });
    const overId = overwritten._meta?.["toolshed/call_id"];
    expect(typeof overId).toBe("string");
    expect(overId).not.toBe(createdId);
    expect(await raw("notes.md")).toBe("second\n");

    const u = await undo({ call_id: overId });
    expect(u.status, JSON.stringify(u.body)).toBe(200);
    expect(u.body).toMatchObject({ call_id: overId, tool: "write", restored: [{ path: "notes.md", action: "restored" }] });
    expect(await raw("notes.md")).toBe("first\n");
    await client.close();
  });

  it("undo of a created file deletes it; a later change through MCP makes that undo FILE_MODIFIED", async () => {
    const client = await mcpClient("m2");
    const made = await client.callTool({ name: "write", arguments: { file_path: "gone.txt", content: "x\n" } });
    const madeId = made._meta?.["toolshed/call_id"] as string;
    const u = await undo({ call_id: madeId }, "m2");
    expect(u.body.restored).toEqual([{ path: "gone.txt", action: "deleted" }]);
    expect(await raw("gone.txt")).toBeNull();

    const kept = await client.callTool({ name: "write", arguments: { file_path: "kept.txt", content: "one\n" } });
    const keptId = kept._meta?.["toolshed/call_id"] as string;
    await client.callTool({ name: "read", arguments: { file_path: "kept.txt" } });
    await client.callTool({ name: "edit", arguments: { file_path: "kept.txt", old_string: "one", new_string: "two" } });
    const refused = await undo({ call_id: keptId }, "m2");
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: "FILE_MODIFIED", details: { files: ["kept.txt"] } });
    expect(await raw("kept.txt")).toBe("two\n");
    await client.close();
  });
});

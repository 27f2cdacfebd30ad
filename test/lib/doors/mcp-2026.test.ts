/**
 * The MCP 2026-07-28 door (lib/doors/mcp-2026.ts, SDK 2.x) on the same URL as the 2025 door, in
 * workerd with local R2 and KV: the official 2.x client (@modelcontextprotocol/client) negotiates
 * 2026-07-28 by server/discover, lists, calls (a file changes), gets progress, cancels, sees
 * errors and its key's scopes/preset; the wire carries what the revision asks (resultType,
 * ttlMs/cacheScope, the Mcp-Method check). The 1.x client and the 2.x client in legacy mode still
 * negotiate 2025-11-25 on the same URL.
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Client as Client1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as Transport1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { z } from "@hono/zod-openapi";
import { describe, expect, it } from "vitest";
import { tools as allTools } from "../../../functions/index.js";
import { defineTool, type Tool } from "../../../lib/contract/tool.js";
import { admin, newTenant, testApp, type TestApp } from "../../helpers.js";

const ticker = defineTool({
  name: "ticker",
  description: "Test tool: reports progress.\nReturns: {n}",
  summary: "Test tool: reports progress.",
  annotations: { title: "Ticker", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  output: z.object({ n: z.number() }),
  category: "file",
  permission: "read",
  input: z.object({}),
  async execute(_args, ctx) {
    ctx.progress?.({ kind: "output", stream: "stdout", text: "first\n" });
    ctx.progress?.({ kind: "status", message: "half", done: 2, total: 4 });
    return { title: "ticker", output: "done", data: { n: 2 } };
  },
}) as Tool;

/** Test tool: waits until its call is aborted, and records that it was. */
const aborts: string[] = [];
let started: () => void = () => {};
const waiter = defineTool({
  name: "waiter",
  description: "Test tool: waits until the call is cancelled.\nReturns: {}",
  summary: "Test tool: waits.",
  annotations: { title: "Waiter", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  output: z.object({}),
  category: "file",
  permission: "read",
  input: z.object({ id: z.string() }),
  async execute(args, ctx) {
    started();
    await new Promise<void>((resolve) => ctx.signal?.addEventListener("abort", () => resolve(), { once: true }));
    aborts.push(args.id);
    return { title: "waiter", output: "stopped", data: {} };
  },
}) as Tool;

const TOOLS = [...allTools, ticker, waiter];
const appFetch = (app: TestApp) => async (input: string | URL | Request, init?: RequestInit) => app.request(String(input), init);
/** Every request the 2.x client sent, with its answer's body (for the wire checks). */
type Seen = { headers: Headers; body: any; status: number; answer: string }[];

async function client2026(app: TestApp, ws: string, key: string, seen?: Seen): Promise<Client> {
  const client = new Client({ name: "t2026", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
  const fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const res = await app.request(String(input), init);
    if (seen) seen.push({ headers: new Headers(init?.headers), body: JSON.parse(String(init?.body ?? "null")), status: res.status, answer: await res.clone().text() });
    return res;
  };
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1/v1/workspaces/${ws}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } }, fetch }));
  return client;
}

const mcpPost = (app: TestApp, ws: string, key: string, body: unknown, headers: Record<string, string>) =>
  app.request(`/v1/workspaces/${ws}/mcp`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "application/json, text/event-stream", ...headers }, body: JSON.stringify(body) });
const envelope = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" }, "io.modelcontextprotocol/clientCapabilities": {} };

describe("MCP 2026-07-28 door", () => {
  it("negotiates 2026-07-28 by server/discover: no initialize; every result carries resultType; list results ttlMs/cacheScope", async () => {
    const app = testApp({}, TOOLS);
    const t = await newTenant(app);
    const seen: Seen = [];
    const client = await client2026(app, t.ws, t.key, seen);
    await client.listTools();
    const methods = seen.map((s) => s.body?.method);
    expect(methods).toContain("server/discover");
    expect(methods).not.toContain("initialize");
    const discover = JSON.parse(seen.find((s) => s.body?.method === "server/discover")!.answer);
    expect(discover.result).toMatchObject({ supportedVersions: ["2026-07-28"], capabilities: { tools: {} }, resultType: "complete" });
    const list = seen.find((s) => s.body?.method === "tools/list")!;
    expect(list.headers.get("mcp-method")).toBe("tools/list");
    expect(JSON.parse(list.answer).result).toMatchObject({ resultType: "complete", ttlMs: 60_000, cacheScope: "private" });
    // No session: the server never names one.
    expect(seen.every((s) => !s.headers.has("mcp-session-id"))).toBe(true);
    await client.close();
  });

  it("tools/list: the catalog's fixed order, the same on both revisions; a readonly key's list is the same order minus what its preset leaves out", async () => {
    const app = testApp({}, TOOLS);
    const t = await newTenant(app);
    const modern = await client2026(app, t.ws, t.key);
    const names = (await modern.listTools()).tools.map((x) => x.name);
    expect(names).toEqual(TOOLS.map((x) => x.name).filter((n) => names.includes(n)));
    expect((await modern.listTools()).tools.map((x) => x.name)).toEqual(names);
    const old = new Client1({ name: "t2025", version: "1.0.0" });
    await old.connect(new Transport1(new URL(`http://127.0.0.1/v1/workspaces/${t.ws}/mcp`), { requestInit: { headers: { authorization: `Bearer ${t.key}` } }, fetch: appFetch(app) }));
    expect(old.getServerCapabilities()).toMatchObject({ tools: {} });
    const oldList = (await old.listTools()).tools;
    expect(oldList.map((x) => x.name)).toEqual(names);
    // The same tool objects (annotations, schemas) through both SDKs: one listing (lib/doors/mcp-tools.ts).
    // The same tool object, but for the 2025 door's `execution.taskSupport` (on 2026-07-28 the server decides per call: the tasks extension).
    const { execution, ...oldWrite } = oldList.find((x) => x.name === "write")! as typeof oldList[number] & { execution?: unknown };
    expect(execution).toEqual({ taskSupport: "optional" });
    expect((await modern.listTools()).tools.find((x) => x.name === "write")).toEqual(oldWrite);

    const ro = (await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { tools: "readonly" })).body.key as string;
    const roNames = (await (await client2026(app, t.ws, ro)).listTools()).tools.map((x) => x.name);
    expect(roNames).toEqual(["read", "ls", "glob", "grep", "find", "pending_result", "ticker", "waiter"].filter((n) => roNames.includes(n)));
    expect(roNames).toEqual(expect.arrayContaining(["read", "ls", "glob", "grep", "find", "pending_result"]));
    expect(roNames).not.toContain("write");
    expect(roNames).toEqual(names.filter((n) => roNames.includes(n)));
    // The preset binds calls too: a readonly key's write is refused, the file untouched.
    const refused = await (await client2026(app, t.ws, ro)).callTool({ name: "write", arguments: { file_path: "ro.txt", content: "x" } });
    expect(refused.isError).toBe(true);
    expect((refused._meta?.["toolshed/error"] as { code: string }).code).toBe("PERMISSION_DENIED");
    expect((await t.req(`/v1/workspaces/${t.ws}/files/ro.txt`)).status).toBe(404);
    await old.close();
  });

  it("tools/call changes a file through the run path: the file is there by the HTTP API, the result carries its undo id", async () => {
    const app = testApp({}, TOOLS);
    const t = await newTenant(app);
    const client = await client2026(app, t.ws, t.key);
    const w = await client.callTool({ name: "write", arguments: { file_path: "src/a.txt", content: "one\n" } });
    expect(w.isError).toBeFalsy();
    expect(w.content).toEqual([{ type: "text", text: expect.stringContaining("src/a.txt") }]);
    expect(w.structuredContent).toMatchObject({ file_path: "src/a.txt", created: true });
    expect(w._meta?.["toolshed/call_id"]).toEqual(expect.any(String));
    const e = await client.callTool({ name: "edit", arguments: { file_path: "src/a.txt", old_string: "one", new_string: "two" } });
    expect(e.isError).toBeFalsy();
    expect(await (await t.req(`/v1/workspaces/${t.ws}/files/src/a.txt`)).text()).toBe("two\n");
    const r = await client.callTool({ name: "read", arguments: { file_path: "src/a.txt" } });
    expect((r.content as { text: string }[])[0]!.text).toContain("two");
    await client.close();
  });

  it("errors: a tool's error is an isError result naming its code; an unknown tool names the usable ones", async () => {
    const app = testApp({}, TOOLS);
    const t = await newTenant(app);
    const client = await client2026(app, t.ws, t.key);
    const missing = await client.callTool({ name: "read", arguments: { file_path: "nope.txt" } });
    expect(missing.isError).toBe(true);
    expect((missing.content as { text: string }[])[0]!.text).toBe("NOT_FOUND: File not found: nope.txt. Use glob or ls to find it.");
    const bad = await client.callTool({ name: "read", arguments: { file_pth: "x" } });
    expect((bad._meta?.["toolshed/error"] as { code: string }).code).toBe("INVALID_ARGUMENT");
    const unknown = await client.callTool({ name: "no_such_tool", arguments: {} });
    expect(unknown.isError).toBe(true);
    expect((unknown.content as { text: string }[])[0]!.text).toMatch(/^NOT_FOUND: No tool named 'no_such_tool'\. Tools this key can use: read, /);
    // a typo names the tool meant, as the tool route does (lib/run/toolset.ts unknownToolError)
    const typo = await client.callTool({ name: "raed", arguments: { file_path: "a.txt" } });
    expect((typo.content as { text: string }[])[0]!.text).toMatch(/^NOT_FOUND: No tool named 'raed'\. Did you mean 'read'\? Tools this key can use: read, /);
    expect((typo._meta?.["toolshed/error"] as { details: unknown }).details).toMatchObject({ tool: "raed", similar: "read" });
    await client.close();
  });

  it("progress: the 2.x client's onprogress sees what the tool reports (the answer upgrades to SSE)", async () => {
    const app = testApp({}, TOOLS);
    const t = await newTenant(app);
    const client = await client2026(app, t.ws, t.key);
    const seen: { progress: number; total?: number; message?: string }[] = [];
    const r = await client.callTool({ name: "ticker", arguments: {} }, { onprogress: (p) => seen.push(p) });
    expect(r.structuredContent).toEqual({ n: 2 });
    expect(seen).toEqual([
      { progress: 1, message: "first\n" },
      { progress: 2, total: 4, message: "half" },
    ]);
    await client.close();
  });

  it("cancel: the client aborting its request aborts the tool's run", async () => {
    const app = testApp({}, TOOLS);
    const t = await newTenant(app);
    const client = await client2026(app, t.ws, t.key);
    const running = new Promise<void>((ok) => (started = ok));
    const stop = new AbortController();
    const call = client.callTool({ name: "waiter", arguments: { id: "c1" } }, { signal: stop.signal });
    await running;
    stop.abort();
    await expect(call).rejects.toThrow();
    await expect.poll(() => aborts).toContain("c1");
    await client.close();
  });

  it("the wire: Mcp-Method must match the body; a 2026-07-28 header without the envelope is refused; a modern tools/call without Mcp-Name is refused; a foreign Origin is 403", async () => {
    const app = testApp({}, TOOLS);
    const t = await newTenant(app);
    const mismatch = await mcpPost(app, t.ws, t.key, { jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: envelope } }, { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call" });
    expect(((await mismatch.json()) as { error: { code: number } }).error.code).toBe(-32020);
    const noEnvelope = await mcpPost(app, t.ws, t.key, { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }, { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list" });
    expect(((await noEnvelope.json()) as { error: { code: number } }).error.code).toBe(-32602);
    const ok = await mcpPost(app, t.ws, t.key, { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "ls", arguments: {}, _meta: envelope } }, { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "ls" });
    expect(((await ok.json()) as { result: { resultType: string } }).result.resultType).toBe("complete");
    const noName = await mcpPost(app, t.ws, t.key, { jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "ls", arguments: {}, _meta: envelope } }, { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call" });
    expect(((await noName.json()) as { error?: { code: number } }).error?.code).toBe(-32020);
    // DNS rebinding: the route's origin check runs before either door.
    const foreign = await mcpPost(app, t.ws, t.key, { jsonrpc: "2.0", id: 5, method: "tools/list", params: { _meta: envelope } }, { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list", origin: "http://evil.example" });
    expect(foreign.status).toBe(403);
  });

  it("the 2.x client in legacy mode (no probe) negotiates 2025-11-25 on the same URL and calls through the same path", async () => {
    const app = testApp({}, TOOLS);
    const t = await newTenant(app);
    const seen: string[] = [];
    const client = new Client({ name: "legacy", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1/v1/workspaces/${t.ws}/mcp`), { requestInit: { headers: { authorization: `Bearer ${t.key}` } }, fetch: async (input, init) => { seen.push(JSON.parse(String(init?.body ?? "null"))?.method); return app.request(String(input), init); } }));
    expect(seen[0]).toBe("initialize");
    const w = await client.callTool({ name: "write", arguments: { file_path: "legacy.txt", content: "ok\n" } });
    expect(w.isError).toBeFalsy();
    expect(await (await t.req(`/v1/workspaces/${t.ws}/files/legacy.txt`)).text()).toBe("ok\n");
    await client.close();
  });
});

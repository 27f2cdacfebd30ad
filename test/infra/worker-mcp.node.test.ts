/**
 * MCP end to end as `npm start` runs it: the official MCP client SDK (Client +
 * StreamableHTTPClientTransport) against the app in the Workers runtime (wrangler dev), with bash
 * through the local Invoke stand-in and its bubblewrap sandbox. The client validates every
 * structuredContent against the tool's outputSchema, so this also checks the output schemas.
 */
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { Client as Client2026, StreamableHTTPClientTransport as Transport2026 } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { LocalInvokeServer } from "../../infra/container/local-server.js";
import { startWorkerWithRunner, type WorkerWithRunner } from "../support/worker-with-runner.js";
import { setupTenant, type WorkerProcess } from "../support/wrangler-dev.js";

let w: WorkerProcess;
let runner: LocalInvokeServer;
let toolshed: WorkerWithRunner;

beforeAll(async () => {
  toolshed = await startWorkerWithRunner("worker-mcp");
  ({ worker: w, runner } = toolshed);
}, 120_000);

afterAll(async () => {
  await toolshed?.stop();
});

async function connect(url: string, key: string): Promise<Client> {
  const client = new Client({ name: "toolshed-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return client;
}

const text = (r: any) => (r.content as { type: string; text: string }[]).map((c) => c.text).join("");

it("the official 2.x client negotiates 2026-07-28 with the Worker on the same URL, and bash in the sandbox changes a file", async () => {
  const t = await setupTenant(w, "mcp2026");
  const methods: string[] = [];
  const client = new Client2026({ name: "toolshed-test-2026", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
  await client.connect(new Transport2026(new URL(`${t.base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${t.key}` } }, fetch: async (input, init) => { methods.push(JSON.parse(String(init?.body ?? "null"))?.method); return fetch(input, init); } }));
  expect(methods[0]).toBe("server/discover");
  expect(methods).not.toContain("initialize");
  const names = (await client.listTools()).tools.map((x) => x.name);
  for (const n of ["read", "write", "bash"]) expect(names).toContain(n);
  const b = await client.callTool({ name: "bash", arguments: { command: "mkdir -p out && echo from-2026 > out/b.txt && cat out/b.txt" } });
  expect(b.isError ?? false).toBe(false);
  expect(text(b)).toContain("from-2026");
  const r = await client.callTool({ name: "read", arguments: { file_path: "out/b.txt" } });
  expect(text(r)).toBe("     1\tfrom-2026");
  await client.close();
});

it("the official client lists the tools with schemas and annotations, and calls write, read, edit, grep and bash", async () => {
  const t = await setupTenant(w, "mcp");
  const client = await connect(`${t.base}/mcp`, t.key);
  expect(client.getServerVersion()?.name).toBe("toolshed");
  const { tools } = await client.listTools();
  const names = tools.map((x) => x.name);
  for (const n of ["read", "write", "edit", "grep", "bash"]) expect(names).toContain(n);
  const read = tools.find((x) => x.name === "read")!;
  expect(read.inputSchema.type).toBe("object");
  expect(read.outputSchema?.type).toBe("object");
  expect(read.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });

  const wrote = await client.callTool({ name: "write", arguments: { file_path: "src/a.ts", content: "export const a = 1;\n" } });
  expect(wrote.isError ?? false).toBe(false);
  expect((wrote.structuredContent as any).created).toBe(true);
  const r = await client.callTool({ name: "read", arguments: { file_path: "src/a.ts" } });
  expect(text(r)).toBe("     1\texport const a = 1;");
  expect((r.structuredContent as any).file_path).toBe("src/a.ts");
  const e = await client.callTool({ name: "edit", arguments: { file_path: "src/a.ts", old_string: "= 1", new_string: "= 2" } });
  expect((e.structuredContent as any).replacements).toBe(1);
  const g = await client.callTool({ name: "grep", arguments: { pattern: "a = 2" } });
  expect((g.structuredContent as any).files).toEqual(["src/a.ts"]);
  // The same workspace as the HTTP route: a file written over MCP reads back over HTTP.
  expect((await t.call("read", { file_path: "src/a.ts" })).output).toBe("     1\texport const a = 2;");

  const b = await client.callTool({ name: "bash", arguments: { command: "cat src/a.ts && echo made > b.txt" } });
  expect(b.isError ?? false, text(b)).toBe(false);
  expect(text(b)).toContain("export const a = 2;");
  expect((b.structuredContent as any).exit_code).toBe(0);
  expect((await t.call("read", { file_path: "b.txt" })).output).toBe("     1\tmade");

  // Tool errors are results with isError and the code, not protocol errors.
  const miss = await client.callTool({ name: "edit", arguments: { file_path: "src/a.ts", old_string: "nope", new_string: "x" } });
  expect(miss.isError).toBe(true);
  expect(text(miss)).toMatch(/^NO_MATCH: /);
  const bad = await client.callTool({ name: "read", arguments: { file_path: "src/a.ts", surprise: 1 } });
  expect(bad.isError).toBe(true);
  expect(text(bad)).toMatch(/^INVALID_ARGUMENT: .*surprise/);
  const unknown = await client.callTool({ name: "nope", arguments: {} });
  expect(unknown.isError).toBe(true);
  expect(text(unknown)).toMatch(/^NOT_FOUND: /);
  await client.close();
}, 120_000);

it("held calls over real HTTP in workerd: ask_user answered by the client's elicitation; without it, NEEDS_INPUT and pending_result", async () => {
  const t = await setupTenant(w, "mcp-ask");
  const asking = new Client({ name: "toolshed-test", version: "1.0.0" }, { capabilities: { elicitation: {} } });
  asking.setRequestHandler(ElicitRequestSchema, async (req) => ({ action: "accept", content: { answer: `answer to ${req.params.message}` } }));
  await asking.connect(new StreamableHTTPClientTransport(new URL(`${t.base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${t.key}` } } }));
  const r = await asking.callTool({ name: "ask_user", arguments: { question: "Which branch?" } });
  expect(r.isError ?? false, text(r)).toBe(false);
  expect(r.structuredContent).toEqual({ question: "Which branch?", answer: "answer to Which branch?", option_index: null });
  await asking.close();

  const plain = await connect(`${t.base}/mcp`, t.key);
  const held = await plain.callTool({ name: "ask_user", arguments: { question: "Which tag?" } });
  expect(text(held)).toMatch(/^NEEDS_INPUT: .*call the pending_result tool/);
  expect(text(held)).not.toMatch(/x-pending-id/i);
  const id = (held._meta as any)["toolshed/error"].details.pending_id as string;
  const approver = ((await (await fetch(`${w.url}/v1/admin/tenants/mcp-ask/keys`, { method: "POST", headers: { authorization: `Bearer ${w.adminToken}`, "content-type": "application/json" }, body: JSON.stringify({ scopes: ["read", "approve"] }) })).json()) as { key: string }).key;
  const answered = await fetch(`${t.base}/pending/${id}`, { method: "POST", headers: { authorization: `Bearer ${approver}`, "content-type": "application/json" }, body: JSON.stringify({ answer: "v2" }) });
  expect(answered.status).toBe(200);
  const got = await plain.callTool({ name: "pending_result", arguments: { pending_id: id } });
  expect(got.structuredContent).toMatchObject({ pending_id: id, tool: "ask_user", result: { answer: "v2" } });
  await plain.close();
}, 60_000);

it("a read-only key lists no write tools, and its write call is an isError PERMISSION_DENIED result", async () => {
  const t = await setupTenant(w, "mcp-ro");
  const ro = ((await (await fetch(`${w.url}/v1/admin/tenants/mcp-ro/keys`, { method: "POST", headers: { authorization: `Bearer ${w.adminToken}`, "content-type": "application/json" }, body: JSON.stringify({ scopes: ["read"] }) })).json()) as { key: string }).key;
  const client = await connect(`${t.base}/mcp`, ro);
  const names = (await client.listTools()).tools.map((x) => x.name);
  expect(names).toContain("read");
  for (const n of ["write", "edit", "bash", "delete"]) expect(names).not.toContain(n);
  const r = await client.callTool({ name: "write", arguments: { file_path: "x.txt", content: "x" } });
  expect(r.isError).toBe(true);
  expect(text(r)).toMatch(/^PERMISSION_DENIED: /);
  expect((await t.call("read", { file_path: "x.txt" })).error.code).toBe("NOT_FOUND");
  await client.close();
}, 60_000);

it("another tenant's key sees nothing of this workspace: 404 before any JSON-RPC, and the client cannot connect", async () => {
  // A's workspace has a name B has none of; B's own "main" workspace is B's (the tenant comes from the key, never from the URL).
  const a = await setupTenant(w, "mcp-a", "a-only");
  const b = await setupTenant(w, "mcp-b");
  await a.call("write", { file_path: "secret.txt", content: "a's" });
  const res = await fetch(`${a.base}/mcp`, {
    method: "POST",
    headers: { authorization: `Bearer ${b.key}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  expect(res.status).toBe(404);
  // As MCP answers errors: a JSON-RPC error with the request's id, the code in data (docs/mcp-and-providers.md, Refusals).
  expect(await res.json()).toMatchObject({ jsonrpc: "2.0", id: 1, error: { code: -32000, data: { code: "NOT_FOUND" } } });
  await expect(connect(`${a.base}/mcp`, b.key)).rejects.toThrow();
  await expect(connect(`${a.base}/mcp`, "tsk_invalid")).rejects.toThrow();
  // The same workspace name under B's key is B's own workspace: A's file is not there.
  const own = await connect(`${a.base.replace("/a-only", "/main")}/mcp`, b.key);
  const r = await own.callTool({ name: "read", arguments: { file_path: "secret.txt" } });
  expect(r.isError).toBe(true);
  expect(text(r)).toMatch(/^NOT_FOUND: /);
  await own.close();
}, 60_000);

it("speaks the protocol versions current clients send, refuses foreign origins and answers GET/DELETE with 405 (stateless)", async () => {
  const t = await setupTenant(w, "mcp-proto");
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${t.base}/mcp`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", accept: "application/json, text/event-stream", ...headers }, body: JSON.stringify(body) });
  for (const version of ["2025-06-18", "2025-11-25", LATEST_PROTOCOL_VERSION]) {
    const r = await post({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: version, capabilities: {}, clientInfo: { name: "raw", version: "1" } } });
    expect(r.status).toBe(200);
    expect(((await r.json()) as any).result.protocolVersion).toBe(version);
  }
  const evil = await post({ jsonrpc: "2.0", id: 1, method: "tools/list" }, { origin: "http://evil.example" });
  expect(evil.status).toBe(403);
  // DNS rebinding: a name rebound to our address sends its own Host and Origin, which match each other (the
  // MCP conformance suite's dns-rebinding-protection scenario); node:http, since fetch cannot set Host.
  const rebound = await new Promise<number>((resolve, reject) => {
    const u = new URL(`${t.base}/mcp`);
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    const req = httpRequest({ host: u.hostname, port: u.port, path: u.pathname, method: "POST", headers: { host: "evil.example.com", origin: "http://evil.example.com", authorization: `Bearer ${t.key}`, "content-type": "application/json", accept: "application/json, text/event-stream", "content-length": Buffer.byteLength(body) } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end(body);
  });
  expect(rebound).toBe(403);
  const own = await post({ jsonrpc: "2.0", id: 1, method: "tools/list" }, { origin: new URL(w.url).origin, "mcp-protocol-version": "2025-06-18" });
  expect(own.status).toBe(200);
  expect(((await own.json()) as any).result.tools.length).toBeGreaterThan(5);
  for (const method of ["GET", "DELETE"]) {
    const r = await fetch(`${t.base}/mcp`, { method, headers: { authorization: `Bearer ${t.key}`, accept: "text/event-stream" } });
    expect(r.status).toBe(405);
  }
}, 60_000);

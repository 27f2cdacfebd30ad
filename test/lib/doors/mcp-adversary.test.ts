/**
 * The MCP doors attacked by a tenant that wants more than its key gives, in workerd with local R2,
 * KV and the limits' Durable Object (docs/mcp-and-providers.md): a key limited by its preset may not
 * store through an MCP task what the HTTP route refuses with nothing stored; a JSON-RPC batch over
 * the SDKs' bound is refused before it takes any of the tenant's calls_per_minute; a storage error
 * under a task reaches the client as INTERNAL, never with its text (a storage key names the tenant).
 * What held and is pinned elsewhere is not repeated here: another tenant's, workspace's or key's task
 * and pending ids (mcp-tasks*.test.ts, mcp-pending.test.ts), a workspace-limited key
 * (keys-tenant.test.ts), a readonly key's plain tools/call (keys-matrix.test.ts).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH, MAX_JSON_VALUES } from "../../../lib/api/routes/json-body.js";
import { durableLimits } from "../../../lib/limits/durable-object.js";
import type { UsageRecord } from "../../../lib/run/metering/record.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { admin, newTenant, testApp, UNGATED, type Tenant } from "../../helpers.js";

const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const TASKS = "io.modelcontextprotocol/tasks";
const env26 = (caps: object = {}) => ({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" }, "io.modelcontextprotocol/clientCapabilities": caps });
const rpc = async (t: Tenant, key: string, body: unknown, headers: Record<string, string> = {}) => {
  const res = await t.app.request(`/v1/workspaces/${t.ws}/mcp`, { method: "POST", headers: { authorization: `Bearer ${key}`, ...HEADERS, ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
};
const call = (name: string, args: object, extra: object = {}, id: number | string = 1) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args, ...extra } });
const V2025 = { "mcp-protocol-version": "2025-11-25" };
const modern = (name: string) => ({ "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": name });

describe("MCP doors, a hostile tenant", () => {
  it("a readonly key's write as a task (2025-11-25 params.task, 2026-07-28 tasks extension) is refused with nothing stored, as on the HTTP route: no task record", async () => {
    const app = testApp();
    const t = await newTenant(app, UNGATED);
    const ro = (await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { tools: "readonly" })).body.key as string;
    const old = await rpc(t, ro, call("write", { file_path: "x.txt", content: "x" }, { task: {} }), V2025);
    expect(old.body.error, JSON.stringify(old.body)).toMatchObject({ code: -32602, message: expect.stringMatching(/PERMISSION_DENIED: The write tool needs the 'write' scope/) });
    const now = await rpc(t, ro, call("write", { file_path: "x.txt", content: "x" }, { _meta: env26({ extensions: { [TASKS]: {} } }) }), modern("write"));
    expect(now.body.result).toMatchObject({ isError: true, _meta: { "toolshed/error": { code: "PERMISSION_DENIED" } } });
    // No record for the key (tasks/list reads the workspace's records of this key), no file.
    expect((await rpc(t, ro, { jsonrpc: "2.0", id: 2, method: "tasks/list", params: {} }, V2025)).body.result.tasks).toEqual([]);
    expect((await t.req(`/v1/workspaces/${t.ws}/files/x.txt`)).status).toBe(404);
    // A tool outside the key's list (not its scope) likewise.
    const ask = await rpc(t, ro, call("ask_user", { question: "q?" }, { task: {} }), V2025);
    expect(ask.body.error?.message).toMatch(/PERMISSION_DENIED: The ask_user tool is outside this API key's tools/);
    expect((await rpc(t, ro, { jsonrpc: "2.0", id: 2, method: "tasks/list", params: {} }, V2025)).body.result.tasks).toEqual([]);
  });

  it("a batch over the SDKs' 100 messages is refused before it takes any calls_per_minute (it took 100 of them, then the SDK refused it)", async () => {
    const usage: UsageRecord[] = [];
    const app = testApp({ limits: durableLimits(env.LIMITS), onUsage: (u) => void usage.push(u) });
    const t = await newTenant(app, UNGATED);
    expect((await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, { calls_per_minute: 120 }, "PUT")).status).toBe(200);
    const batch = (n: number, p: string) => Array.from({ length: n }, (_, i) => call("write", { file_path: `${p}${i}.txt`, content: "x" }, {}, i + 1));
    const over = await rpc(t, t.key, batch(101, "a"));
    expect(over.status).toBe(400);
    expect(over.body).toEqual({ jsonrpc: "2.0", error: { code: -32600, message: "Invalid Request: Batch must not exceed 100 messages" }, id: null });
    // The budget is whole: a batch of 100 runs.
    const ok = await rpc(t, t.key, batch(100, "b"));
    expect(ok.status, JSON.stringify(ok.body).slice(0, 300)).toBe(200);
    expect(usage.filter((u) => u.tool === "write" && u.ok).length).toBe(100);
  });

  it("a storage error under a task reaches the client as INTERNAL, without its text (a storage key names the tenant)", async () => {
    const r2 = r2Driver(env.FILES);
    const failing = { ...r2, put: async (key: string, ...rest: Parameters<typeof r2.put> extends [string, ...infer R] ? R : never) => {
      if (key.includes("/call-tasks/")) throw new Error(`R2 put failed for ${key}`);
      return r2.put(key, ...rest);
    } };
    const app = testApp({ storage: failing as typeof r2 });
    const t = await newTenant(app, UNGATED);
    const r = await rpc(t, t.key, call("read", { file_path: "none.txt" }, { task: {} }), V2025);
    expect(r.body.error).toMatchObject({ code: -32603, message: expect.stringMatching(/INTERNAL: Internal error\./) });
    expect(JSON.stringify(r.body)).not.toContain(t.tenant);
  });

  it("a storage error under tools/list reaches the client as INTERNAL on both revisions, without its text", async () => {
    const r2 = r2Driver(env.FILES);
    // Armed: the guard's read of the workspace record passes, the door's next read of it fails.
    let passes = Infinity;
    const failing = { ...r2, get: async (key: string, ...rest: Parameters<typeof r2.get> extends [string, ...infer R] ? R : never) => {
      if (key.endsWith("/meta.json") && passes-- <= 0) throw new Error(`R2 get failed for ${key}`);
      return r2.get(key, ...rest);
    } };
    const app = testApp({ storage: failing as typeof r2 });
    const t = await newTenant(app, UNGATED);
    for (const [body, headers] of [
      [{ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }, V2025],
      [{ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: env26() } }, { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list" }],
    ] as const) {
      passes = 1;
      const r = await rpc(t, t.key, body, headers);
      expect(r.body.error, JSON.stringify(r.body)).toMatchObject({ code: -32603 });
      expect(JSON.stringify(r.body)).not.toContain(t.tenant);
    }
  });

  it("each request of a batch is a call of calls_per_minute, not only tools/call: 10 tasks/get (or tasks/result, each a wait of up to 5 minutes polling storage) were one call", async () => {
    const app = testApp({ limits: durableLimits(env.LIMITS) });
    const t = await newTenant(app, UNGATED);
    expect((await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, { calls_per_minute: 5 }, "PUT")).status).toBe(200);
    const waits = Array.from({ length: 10 }, (_, i) => ({ jsonrpc: "2.0", id: i + 1, method: "tasks/get", params: { taskId: `nosuchtask${i}` } }));
    const r = await rpc(t, t.key, waits, V2025);
    expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(429);
    // Notifications are no calls: the SDKs run nothing for them (a tools/call without an id writes nothing). Under 1 a minute,
    // a batch of 3 is the request's one call (counted as tool calls, they were 3: 429).
    const u = await newTenant(app, UNGATED);
    expect((await admin(app, `/v1/admin/tenants/${u.tenant}/limits`, { calls_per_minute: 1 }, "PUT")).status).toBe(200);
    const note = { jsonrpc: "2.0", method: "tools/call", params: { name: "write", arguments: { file_path: "n.txt", content: "x" } } };
    expect((await rpc(u, u.key, [note, note, note], V2025)).status).toBe(202);
    expect((await u.req(`/v1/workspaces/${u.ws}/files/n.txt`)).status).toBe(404);
  });

  it("a body that parses into more than the isolate holds is refused before it is parsed, by the MCP door and the tool route (the one reader): 4 MB of nested arrays was 116 MB of heap", async () => {
    const t = await newTenant(testApp(), UNGATED);
    const deep = `${"[".repeat(MAX_JSON_DEPTH + 1)}${"]".repeat(MAX_JSON_DEPTH + 1)}`;
    const wide = `[${Array(MAX_JSON_VALUES).fill("[]").join(",")}]`;
    for (const [shape, value, status, code] of [["deep", deep, 400, -32700], ["wide", wide, 413, -32000]] as const) {
      const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"file_path":"a.txt","extra":${value}}}}`;
      const mcp = await t.app.request(`/v1/workspaces/${t.ws}/mcp`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, ...HEADERS }, body });
      expect(mcp.status, shape).toBe(status);
      expect(((await mcp.json()) as any).error, shape).toMatchObject({ code, message: expect.stringMatching(shape === "deep" ? `nested deeper than ${MAX_JSON_DEPTH}` : `more than ${MAX_JSON_VALUES}`) });
      const http = await t.req(`/v1/workspaces/${t.ws}/tools/read`, { method: "POST", headers: { "content-type": "application/json" }, body: `{"file_path":"a.txt","extra":${value}}` });
      expect(http.status, shape).toBe(status);
    }
    // At the bounds, as before: the tool's own answer (an unknown argument).
    const fits = await t.req(`/v1/workspaces/${t.ws}/tools/read`, { method: "POST", headers: { "content-type": "application/json" }, body: `{"file_path":"a.txt","extra":${"[".repeat(MAX_JSON_DEPTH - 1)}${"]".repeat(MAX_JSON_DEPTH - 1)}}` });
    expect(((await fits.json()) as any).error.message).toMatch(/Unknown argument 'extra'/);
  });

  it("a tools/call with malformed params (2025-era) is -32602 naming the field, with its id, where the SDK answered -32603 and a raw zod dump", async () => {
    const t = await newTenant(testApp(), UNGATED);
    for (const [params, field] of [
      [{ name: "write", arguments: "x" }, "params.arguments must be an object of the tool's parameters, not a string"],
      [{ name: "write", arguments: [1] }, "params.arguments must be an object of the tool's parameters, not an array"],
      [{ name: 5, arguments: {} }, "params.name must be the tool's name (a string), not a number"],
      [{ name: "write", arguments: {}, task: "soon" }, "params.task must be an object"],
    ] as const) {
      const r = await rpc(t, t.key, { jsonrpc: "2.0", id: "c-7", method: "tools/call", params }, V2025);
      expect(r.status, JSON.stringify([params, r.body])).toBe(200);
      expect(r.body, JSON.stringify(params)).toMatchObject({ id: "c-7", error: { code: -32602, message: expect.stringContaining(field) } });
      expect(r.body.error.message).not.toMatch(/invalid_type|"path"/);
    }
    // params that are not an object at all: the SDK's classifier already answers -32600, clearly.
    expect((await rpc(t, t.key, { jsonrpc: "2.0", id: 1, method: "tools/call", params: "write" }, V2025)).body.error).toMatchObject({ code: -32600, message: expect.stringContaining("not a valid JSON-RPC message") });
    const ok = await rpc(t, t.key, call("write", { file_path: "fine.txt", content: "x" }), V2025);
    expect(ok.body.result.isError, JSON.stringify(ok.body)).toBeFalsy();
  });
});

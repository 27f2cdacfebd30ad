/**
 * A call never outlives its key (lib/run/key-watch.ts): a key revoked while one of its calls waits
 * (pending_result's wait_seconds through MCP tools/call, MCP tasks/result with the official client,
 * GET .../pending/{id}?wait=) gets UNAUTHORIZED key_gone (tasks/result: a JSON-RPC error -32000), never what the wait found afterwards (here: the human's answer, given
 * after the revocation); bash_output's wait ends when its call's signal aborts. The real app over
 * memory storage; each wait is caught in its loop by counting its storage reads, never by a sleep.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, CreateTaskResultSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { createApp } from "../../../lib/api/app.js";
import type { AppDeps } from "../../../lib/api/deps.js";
import { pollTask } from "../../../lib/exec/tasks.js";
import { runPrefix } from "../../../lib/layout/paths.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import type { StorageDriver } from "../../../lib/storage/types.js";
import { keysOf } from "../../../lib/sync/run-records.js";

const ADMIN = "key-watch-admin";

/** Memory storage that counts the GETs of keys holding `part`, and resolves `reads(part, n)` at the n-th. */
function watchedStorage() {
  const inner = memoryDriver();
  const seen = new Map<string, number>();
  const all: string[] = [];
  const waiters: { part: string; n: number; resolve: () => void }[] = [];
  const storage: StorageDriver = Object.assign(Object.create(inner) as StorageDriver, {
    get: async (key: string, opts?: Parameters<StorageDriver["get"]>[1]) => {
      const r = await inner.get(key, opts);
      all.push(key);
      for (const w of [...waiters]) {
        if (!key.includes(w.part)) continue;
        const n = (seen.get(w.part) ?? 0) + 1;
        seen.set(w.part, n);
        if (n >= w.n) (waiters.splice(waiters.indexOf(w), 1), w.resolve());
      }
      return r;
    },
  });
  /** Resolves once `n` more GETs of keys holding `part` were made. */
  const reads = (part: string, n: number) => new Promise<void>((resolve) => (seen.set(part, 0), waiters.push({ part, n, resolve })));
  /** How many GETs of keys holding `part` were made in all. */
  const count = (part: string) => all.filter((k) => k.includes(part)).length;
  return { storage, reads, count };
}

async function setup() {
  const { storage, reads } = watchedStorage();
  const app = createApp({ storage, kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, keyWatchMs: 20 } as AppDeps, tools);
  const req = async (path: string, key: string, body?: unknown, method = body === undefined ? "GET" : "POST", headers: Record<string, string> = {}) => {
    const r = await app.request(path, { method, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await r.text();
    return { status: r.status, text, json: (() => { try { return JSON.parse(text); } catch { return null; } })() as any };
  };
  const tenant = `t-kw${Math.random().toString(36).slice(2, 8)}`;
  expect((await req("/v1/admin/tenants", ADMIN, { id: tenant })).status).toBe(201);
  const agent = (await req(`/v1/admin/tenants/${tenant}/keys`, ADMIN, {})).json as { key: string; key_id: string };
  const approver = (await req(`/v1/admin/tenants/${tenant}/keys`, ADMIN, { name: "app", scopes: ["read", "approve"] })).json.key as string;
  expect((await req("/v1/workspaces", agent.key, { id: "main" })).status).toBe(201);
  const revoke = async () => expect((await req(`/v1/admin/tenants/${tenant}/keys/${agent.key_id}`, ADMIN, undefined, "DELETE")).status).toBe(200);
  const answer = async (id: string) => expect((await req(`/v1/workspaces/main/pending/${id}`, approver, { answer: "the secret plan" })).status).toBe(200);
  const mcp = (body: unknown) => req("/v1/workspaces/main/mcp", agent.key, body, "POST", { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" });
  /** ask_user's pending id, from a call that answers NEEDS_INPUT. */
  const ask = async () => {
    const r = await req("/v1/workspaces/main/tools/ask_user", agent.key, { question: "What is the plan?" });
    expect(r.json.error.code, r.text).toBe("NEEDS_INPUT");
    return r.json.error.details.pending_id as string;
  };
  return { app, storage, reads, req, agent, revoke, answer, mcp, ask };
}

describe("a call never outlives its key", () => {
  it("pending_result waiting through MCP tools/call: revoked while it waits, the answer given after is not handed to it (key_gone)", async () => {
    const s = await setup();
    const id = await s.ask();
    const waiting = s.mcp({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "pending_result", arguments: { pending_id: id, wait_seconds: 30 } } });
    await s.reads(`pending/${id}`, 2); // in its loop: it read the call, waited, read again
    await s.revoke();
    await s.answer(id);
    const r = await waiting;
    expect(r.json.result?.isError, r.text).toBe(true);
    expect(r.json.result._meta["toolshed/error"]).toMatchObject({ code: "UNAUTHORIZED", details: { refused_by: "key_gone", key_id: s.agent.key_id } });
    expect(r.text).not.toContain("the secret plan");
  });

  it("MCP tasks/result (a wait of up to 5 minutes), with the official client: revoked while it waits, a JSON-RPC error -32000 UNAUTHORIZED key_gone (not -32603), never the task's result", async () => {
    const s = await setup();
    const client = new Client({ name: "key-watch-test", version: "1.0.0" }, { capabilities: { tasks: { list: {}, cancel: {} } } });
    const url = new URL("http://127.0.0.1/v1/workspaces/main/mcp");
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${s.agent.key}` } }, fetch: async (input, init) => s.app.request(String(input), init as RequestInit) }));
    const { task } = await client.request({ method: "tools/call", params: { name: "ask_user", arguments: { question: "What is the plan?" }, task: {} } }, CreateTaskResultSchema);
    const pendingId = (await client.experimental.tasks.getTask(task.taskId))._meta?.["toolshed/pending_id"] as string;
    expect(pendingId).toMatch(/^p/);
    const waiting = client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema).then(() => null, (e: unknown) => e);
    await s.reads("/call-tasks/", 2); // in its loop
    await s.revoke();
    await s.answer(pendingId);
    const e = await waiting;
    expect(e).toBeInstanceOf(McpError);
    expect((e as McpError).code).toBe(-32000);
    expect((e as McpError).message).toMatch(/UNAUTHORIZED: The API key this tasks\/result request runs with .* Start it again with a valid key\./);
    expect((e as McpError).data).toMatchObject({ code: "UNAUTHORIZED", details: { refused_by: "key_gone", key_id: s.agent.key_id } });
    expect(JSON.stringify(e)).not.toContain("the secret plan");
    await client.close();
  });

  it("GET .../pending/{id}?wait=30: revoked while it waits, 401 key_gone, not the outcome", async () => {
    const s = await setup();
    const id = await s.ask();
    const waiting = s.req(`/v1/workspaces/main/pending/${id}?wait=30`, s.agent.key);
    await s.reads(`pending/${id}`, 2);
    await s.revoke();
    await s.answer(id);
    const r = await waiting;
    expect(r.status, r.text).toBe(401);
    expect(r.json.error).toMatchObject({ code: "UNAUTHORIZED", details: { refused_by: "key_gone" } });
    expect(r.text).not.toContain("the secret plan");
  });

  it("bash_output's wait (up to 600 s) ends when its call's signal aborts: no poll of the result after it", async () => {
    const { storage, reads, count } = watchedStorage();
    const ref = { tenant: "t1", workspace: "w1", task_id: "r0123456789abcde" };
    const k = keysOf(runPrefix(ref.tenant, ref.workspace, ref.task_id));
    await storage.put(k.task, JSON.stringify({ task_id: ref.task_id, created_at: Date.now(), deadline: Date.now() + 3_600_000 }));
    const stop = new AbortController();
    // A wait of 5 s: polled to its end, the result is read 7 times (250 ms growing to 2 s); stopped after its first poll, twice.
    const polled = pollTask(storage, ref, { wait_ms: 5_000, signal: stop.signal });
    await reads("result.json", 2); // the first read, then one poll
    stop.abort();
    expect((await polled).status).toBe("running");
    expect(count("result.json")).toBe(2);
  });
});

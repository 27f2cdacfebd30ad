/**
 * Idempotency-Key on the MCP door with the official SDK 1.x client (docs/idempotency.md, "MCP"): a
 * key in the transport's requestInit goes with every request, so the client's second request
 * (notifications/initialized) is refused, and the refusal must say why and what to do; a key per
 * POST given in the transport's fetch (the documented way) makes a retried tools/call run once.
 * The real app over memory storage; counts, never times.
 */
import { describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { tools } from "../../../functions/index.js";
import { createApp } from "../../../lib/api/app.js";
import type { AppDeps } from "../../../lib/api/deps.js";
import type { UsageRecord } from "../../../lib/run/metering/record.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";

const ADMIN = "mcp-idem-admin";

async function setup() {
  const usage: UsageRecord[] = [];
  const app = createApp({ storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, onUsage: (u: UsageRecord) => void usage.push(u) } as AppDeps, tools);
  const viaApp = (async (url: string | URL | Request, init?: RequestInit) => app.request(String(url), init)) as typeof fetch;
  const post = async (path: string, body: unknown, auth: string) => (await app.request(path, { method: "POST", headers: { authorization: `Bearer ${auth}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json() as Promise<any>;
  await post("/v1/admin/tenants", { id: "idem" }, ADMIN);
  const key = (await post("/v1/admin/tenants/idem/keys", {}, ADMIN)).key as string;
  await post("/v1/workspaces", { id: "main" }, key);
  const url = new URL("http://127.0.0.1/v1/workspaces/main/mcp");
  return { app, usage, viaApp, key, url };
}

describe("Idempotency-Key through the official MCP client", () => {
  it("a key in requestInit (sent with every request) is refused at the client's second request, saying to give each POST its own key in the transport's fetch", async () => {
    const s = await setup();
    const client = new Client({ name: "static-key", version: "1" });
    const transport = new StreamableHTTPClientTransport(s.url, { fetch: s.viaApp, requestInit: { headers: { Authorization: `Bearer ${s.key}`, "Idempotency-Key": "one-key" } } });
    const refused = await client.connect(transport).then(() => null, (e: Error) => e.message);
    expect(refused).toMatch(/already used for a different request/);
    expect(refused).toMatch(/An MCP client sends the headers of its transport's requestInit with every request.*give each POST its own key in the transport's fetch/);
  });

  it("a key per POST given in the transport's fetch: every request works, and a tools/call whose answer was lost runs once when retried with its key", async () => {
    const s = await setup();
    let lose = false;
    let sent = 0;
    // The documented wrapper: a new key for each POST, the same key for that POST's retries.
    const keyed = (async (url: string | URL | Request, init?: RequestInit) => {
      const headers = new Headers(init?.headers);
      if (init?.method === "POST") headers.set("Idempotency-Key", crypto.randomUUID());
      for (let attempt = 0; ; attempt++) {
        sent++;
        const res = await s.viaApp(url, { ...init, headers });
        if (lose && attempt === 0) continue; // the answer is lost on the way: retried with the same key and body
        return res;
      }
    }) as typeof fetch;
    const client = new Client({ name: "keyed", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(s.url, { fetch: keyed, requestInit: { headers: { Authorization: `Bearer ${s.key}` } } }));
    expect((await client.listTools()).tools.length).toBeGreaterThan(5);
    lose = true;
    const before = sent;
    const r = await client.callTool({ name: "write", arguments: { file_path: "once.txt", content: "x" } });
    lose = false;
    expect(r.isError, JSON.stringify(r)).toBeFalsy();
    expect(sent - before).toBe(2); // sent twice ...
    expect(s.usage.filter((u) => u.tool === "write").length).toBe(1); // ... ran once
    const again = await client.callTool({ name: "write", arguments: { file_path: "twice.txt", content: "y" } });
    expect(again.isError, JSON.stringify(again)).toBeFalsy();
    expect(s.usage.filter((u) => u.tool === "write").length).toBe(2);
    await client.close();
  });
});

/**
 * calls_per_minute by the MCP door: a JSON-RPC batch of tool calls is as many calls as it holds.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { durableLimits } from "../../../lib/limits/durable-object.js";
import type { UsageRecord } from "../../../lib/run/metering/record.js";
import { admin, newTenant, testApp } from "../../helpers.js";

describe("an MCP batch under calls_per_minute", () => {
  it("10 tools/call in one batch under calls_per_minute 5: 2 in a batch run; 10 are refused before any runs", async () => {
    const usage: UsageRecord[] = [];
    const app = testApp({ limits: durableLimits(env.LIMITS), onUsage: (u) => void usage.push(u) });
    const t = await newTenant(app);
    expect((await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, { calls_per_minute: 5 }, "PUT")).status).toBe(200);
    const batch = (n: number) => Array.from({ length: n }, (_, i) => ({ jsonrpc: "2.0", id: i + 1, method: "tools/call", params: { name: "write", arguments: { file_path: `f${i}.txt`, content: "x" } } }));
    const send = (n: number) => t.req(`/v1/workspaces/${t.ws}/mcp`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-03-26" }, body: JSON.stringify(batch(n)) });
    const ran = () => usage.filter((u) => u.tool === "write" && u.ok).length;
    // A batch within the budget runs whole (two calls of it).
    const small = await send(2);
    expect(small.status).toBe(200);
    expect(ran()).toBe(2);
    // Before: one call of the budget, and all 10 ran. Now each tool call is a call: refused before any of it runs
    // (what it took of the budget stays spent).
    const big = await send(10);
    expect(big.status, (await big.text()).slice(0, 300)).toBe(429);
    expect(ran()).toBe(2);
  });
});

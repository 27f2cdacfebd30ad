/** MCP progress: a tools/call with a progress token gets notifications/progress from ctx.progress (official SDK Client, onprogress). */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { z } from "@hono/zod-openapi";
import { describe, expect, it } from "vitest";
import { tools as allTools } from "../../../functions/index.js";
import { defineTool, type Tool } from "../../../lib/contract/tool.js";
import { newTenant, testApp, upload } from "../../helpers.js";

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

describe("MCP progress notifications", () => {
  it("the SDK client's onprogress sees what the tool reports; without a token the call is plain JSON", async () => {
    const app = testApp({}, [...allTools, ticker]);
    const t = await newTenant(app);
    const client = new Client({ name: "t", version: "1.0.0" });
    const url = new URL(`http://127.0.0.1/v1/workspaces/${t.ws}/mcp`);
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${t.key}` } }, fetch: async (input, init) => app.request(String(input), init as RequestInit) }));
    const seen: { progress: number; total?: number; message?: string }[] = [];
    const r = await client.callTool({ name: "ticker", arguments: {} }, undefined, { onprogress: (p) => seen.push(p) });
    expect(r.structuredContent).toEqual({ n: 2 });
    expect(seen).toEqual([
      { progress: 1, message: "first\n" },
      { progress: 2, total: 4, message: "half" },
    ]);
    const plain = await client.callTool({ name: "ticker", arguments: {} });
    expect(plain.structuredContent).toEqual({ n: 2 });
    await client.close();
  });

  it("grep with a progress token: its status progress (files searched of the candidates) as notifications/progress", async () => {
    const app = testApp({ progress: { intervalMs: 0 } });
    const t = await newTenant(app);
    for (let i = 0; i < 15; i++) await upload(t, `src/f${i}.ts`, `export const n${i} = ${i}; // needle\n`);
    const client = new Client({ name: "t", version: "1.0.0" });
    const url = new URL(`http://127.0.0.1/v1/workspaces/${t.ws}/mcp`);
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${t.key}` } }, fetch: async (input, init) => app.request(String(input), init as RequestInit) }));
    const seen: { progress: number; total?: number; message?: string }[] = [];
    const r = await client.callTool({ name: "grep", arguments: { pattern: "needle", path: "src" } }, undefined, { onprogress: (p) => seen.push(p) });
    expect(r.structuredContent).toMatchObject({ total_found: 15, complete: true });
    const searched = seen.filter((p) => p.message?.startsWith("searched"));
    expect(searched.length).toBeGreaterThan(0);
    expect(searched.at(-1)).toEqual({ progress: 15, total: 15, message: "searched 15 of 15 files" });
    // progress increases and never passes its total (the listing's events, which count nothing, add only a thousandth).
    expect(seen.every((p, i) => i === 0 || p.progress > seen[i - 1]!.progress)).toBe(true);
    expect(seen.every((p) => p.total === undefined || p.progress <= p.total)).toBe(true);
    await client.close();
  });
});

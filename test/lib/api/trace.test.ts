/**
 * Traces on the Workers runtime (docs/tracing.md), in workerd over the real local R2 and KV: the
 * current span follows a call through awaits (AsyncLocalStorage under nodejs_compat), a plain
 * tool call's spans carry the caller's trace id, the export runs in waitUntil (the answer does
 * not wait for it), MCP's `_meta.traceparent` names the call's parent, and with
 * TOOLSHED_OTLP_ENDPOINT unset nothing is wrapped and nothing is sent.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fromWorkersEnv, type WorkersEnv } from "../../../lib/runtime/workers.js";
import { otlpTracer } from "../../../lib/shared/otlp.js";
import { newTenant, testApp, UNGATED } from "../../helpers.js";
import { TRACE_PEEK_MAX_BYTES } from "../../../lib/api/routes/mcp-body.js";

const TRACE = "0af7651916cd43dd8448eb211c80319c";
const PARENT = "b7ad6b7169203331";

interface Export {
  url: string;
  headers: Headers;
  spans: { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes: { key: string; value: Record<string, unknown> }[] }[];
}

/** The exporter's fetch, captured (the collector's side is test/support/otlp-receiver.ts, in Node); `hold` keeps each export pending until released. */
function collector(hold = false) {
  const exports: Export[] = [];
  let release: () => void = () => {};
  const held = new Promise<void>((r) => (release = r));
  const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const body = JSON.parse(String(init?.body));
    if (hold) await held;
    exports.push({ url: String(input), headers: new Headers(init?.headers), spans: body.resourceSpans.flatMap((r: any) => r.scopeSpans.flatMap((s: any) => s.spans)) });
    return new Response("{}", { status: 200 });
  }) as typeof globalThis.fetch;
  return { exports, fetch, release: () => release(), spans: () => exports.flatMap((e) => e.spans) };
}

afterEach(() => vi.restoreAllMocks());

describe("traces on Workers", () => {
  it("a tool call's spans carry the caller's trace id, and its storage spans are its children", async () => {
    const c = collector();
    const app = testApp({ tracer: otlpTracer({ endpoint: "http://collector.test:4318", service: "toolshed-api", fetch: c.fetch }) });
    const t = await newTenant(app, UNGATED);
    const ctx = createExecutionContext();
    const res = await app.request(`/v1/workspaces/${t.ws}/tools/write`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", traceparent: `00-${TRACE}-${PARENT}-01` }, body: JSON.stringify({ file_path: "notes/a.md", content: "the contents\n" }) }, env, ctx);
    expect(res.status).toBe(200);
    await waitOnExecutionContext(ctx);
    const spans = c.spans().filter((s) => s.traceId === TRACE);
    const root = spans.find((s) => s.name === "POST /v1/workspaces/:ws/tools/write")!;
    expect(root).toMatchObject({ parentSpanId: PARENT, kind: 2 });
    const puts = spans.filter((s) => s.name === "storage.put" && s.parentSpanId === root.spanId);
    expect(puts.length).toBeGreaterThan(0);
    expect(JSON.stringify(puts)).toContain(`t/${t.tenant}/w/${t.ws}/f/notes/a.md`);
    expect(c.exports.every((e) => e.url === "http://collector.test:4318/v1/traces")).toBe(true);
    const all = JSON.stringify(c.exports.map((e) => e.spans));
    expect(all).not.toContain("the contents");
    expect(all).not.toContain(t.key);
  });

  it("the answer does not wait for the export (Workers: waitUntil)", async () => {
    const c = collector(true);
    const app = testApp({ tracer: otlpTracer({ endpoint: "http://collector.test:4318", service: "toolshed-api", fetch: c.fetch }) });
    const ctx = createExecutionContext();
    const res = await app.request("/healthz", { headers: { traceparent: `00-${TRACE}-${PARENT}-01` } }, env, ctx);
    expect(res.status).toBe(200);
    expect(c.exports).toHaveLength(0); // still held: the response came first
    c.release();
    await waitOnExecutionContext(ctx);
    expect(c.spans().map((s) => s.name)).toEqual(["GET /healthz"]);
  });

  it("an MCP tools/call takes its parent from params._meta.traceparent", async () => {
    const c = collector();
    const app = testApp({ tracer: otlpTracer({ endpoint: "http://collector.test:4318", service: "toolshed-api", fetch: c.fetch }) });
    const t = await newTenant(app, UNGATED);
    const meta = "1234567890abcdef1234567890abcdef";
    const res = await app.request(`/v1/workspaces/${t.ws}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", accept: "application/json, text/event-stream", traceparent: `00-${TRACE}-${PARENT}-01` },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "write", arguments: { file_path: "m.txt", content: "x" }, _meta: { traceparent: `00-${meta}-aaaaaaaaaaaaaaaa-01` } } }),
    });
    expect(res.status).toBe(200);
    await res.text();
    const root = c.spans().find((s) => s.kind === 2 && s.name.endsWith("/mcp"))!;
    expect(root).toMatchObject({ traceId: meta, parentSpanId: "aaaaaaaaaaaaaaaa" });
    expect(c.spans().some((s) => s.traceId === meta && s.name === "storage.put" && s.parentSpanId === root.spanId)).toBe(true);
  });

  it("an MCP body over TRACE_PEEK_MAX_BYTES is not parsed before the key is checked: its span takes the header's parent, and a call without a key is refused unparsed", async () => {
    const c = collector();
    const app = testApp({ tracer: otlpTracer({ endpoint: "http://collector.test:4318", service: "toolshed-api", fetch: c.fetch }) });
    const t = await newTenant(app, UNGATED);
    const meta = "1234567890abcdef1234567890abcdef";
    const big = "x".repeat(TRACE_PEEK_MAX_BYTES);
    const message = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "write", arguments: { file_path: "big.txt", content: big }, _meta: { traceparent: `00-${meta}-aaaaaaaaaaaaaaaa-01` } } };
    const post = (authorization: string) =>
      app.request(`/v1/workspaces/${t.ws}/mcp`, {
        method: "POST",
        headers: { authorization, "content-type": "application/json", accept: "application/json, text/event-stream", traceparent: `00-${TRACE}-${PARENT}-01` },
        body: JSON.stringify(message),
      });
    const parsed = vi.spyOn(JSON, "parse");
    const refused = await post("Bearer not-a-key");
    expect(refused.status).toBe(401);
    expect(parsed.mock.calls.some(([text]) => typeof text === "string" && text.includes(big))).toBe(false);
    parsed.mockRestore();
    const res = await post(`Bearer ${t.key}`);
    expect(res.status).toBe(200);
    expect(JSON.stringify(await res.json())).not.toContain('"isError":true');
    const roots = c.spans().filter((s) => s.kind === 2 && s.name.endsWith("/mcp"));
    expect(roots.at(-1)).toMatchObject({ traceId: TRACE, parentSpanId: PARENT });
  });

  it("without TOOLSHED_OTLP_ENDPOINT there is no tracer, nothing is wrapped and nothing is sent", async () => {
    const deps = fromWorkersEnv({ ...(env as unknown as WorkersEnv), TOOLSHED_OTLP_ENDPOINT: undefined });
    expect(deps.tracer).toBeUndefined();
    const sent = vi.spyOn(globalThis, "fetch");
    const app = testApp({ tracer: deps.tracer! });
    const t = await newTenant(app, UNGATED);
    const ctx = createExecutionContext();
    const res = await app.request(`/v1/workspaces/${t.ws}/tools/read`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", traceparent: `00-${TRACE}-${PARENT}-01` }, body: JSON.stringify({ file_path: "nothing.txt" }) }, env, ctx);
    expect(res.status).toBe(404);
    await waitOnExecutionContext(ctx);
    expect(sent).not.toHaveBeenCalled();
    const on = fromWorkersEnv({ ...(env as unknown as WorkersEnv), TOOLSHED_OTLP_ENDPOINT: "http://collector.test:4318" });
    expect(on.tracer).toBeDefined();
  });
});

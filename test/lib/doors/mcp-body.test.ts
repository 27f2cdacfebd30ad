/**
 * The MCP route reads a request's body once (lib/api/routes/mcp.ts, by the one JSON reader
 * lib/api/routes/json-body.ts: bounded at MAX_JSON_BODY_BYTES, strict UTF-8) and hands the parsed
 * value to every consumer: the batch count, the SDKs' classifier and transports, the door's own
 * inspections. What is not JSON is answered as an MCP client understands it: a JSON-RPC error
 * (-32700 Parse error, id null), never a Toolshed envelope.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_JSON_BODY_BYTES } from "../../../lib/api/routes/json-body.js";
import { durableLimits } from "../../../lib/limits/durable-object.js";
import { otlpTracer } from "../../../lib/shared/otlp.js";
import { admin, newTenant, testApp, type Tenant } from "../../helpers.js";

const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const envelope = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" }, "io.modelcontextprotocol/clientCapabilities": {} };
const MODERN = { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "write" };

const post = (t: Tenant, body: BodyInit, headers: Record<string, string> = {}) => t.req(`/v1/workspaces/${t.ws}/mcp`, { method: "POST", headers: { ...HEADERS, ...headers }, body });
const write = (file_path: string, content: string, meta?: object) => ({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "write", arguments: { file_path, content }, ...(meta ? { _meta: meta } : {}) } });

/** A request whose body can be read once, as a stream, and never copied or read whole: a second reader of it throws. */
class ReadOnceRequest extends Request {
  override clone(): never {
    throw new Error("the MCP body was read twice (clone)");
  }
  override json(): never {
    throw new Error("the MCP body was read twice (json)");
  }
  override text(): never {
    throw new Error("the MCP body was read twice (text)");
  }
  override arrayBuffer(): never {
    throw new Error("the MCP body was read twice (arrayBuffer)");
  }
}

async function parseError(res: Response) {
  expect(res.headers.get("content-type")).toContain("application/json");
  const body = (await res.json()) as { jsonrpc: string; id: unknown; error: { code: number; message: string; data?: { details?: Record<string, unknown> } } };
  expect(body).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: expect.any(Number), message: expect.any(String) } });
  return body;
}

describe("the MCP door reads a body once", () => {
  it("a request read once (no clone, no second read) is served, on the 2025 door and the 2026-07-28 door, with tracing and calls_per_minute on (every reader of the body)", async () => {
    const app = testApp({ limits: durableLimits(env.LIMITS), tracer: otlpTracer({ endpoint: "http://collector.test:4318", service: "toolshed-api", fetch: async () => new Response("{}") }) });
    const t = await newTenant(app);
    const send = (body: unknown, headers: Record<string, string> = {}) =>
      app.request(new ReadOnceRequest(`http://127.0.0.1/v1/workspaces/${t.ws}/mcp`, { method: "POST", headers: { ...HEADERS, authorization: `Bearer ${t.key}`, ...headers }, body: JSON.stringify(body) }));
    // A batch (the route counts its tool calls) on the 2025 door.
    const old = await send([write("old.txt", "2025\n"), { ...write("old2.txt", "2025\n"), id: 2 }], { "mcp-protocol-version": "2025-06-18" });
    expect(old.status, await old.clone().text()).toBe(200);
    expect(((await old.json()) as { result: { isError?: boolean } }[]).map((m) => m.result.isError)).toEqual([undefined, undefined]);
    const modern = await send(write("new.txt", "2026\n", envelope), MODERN);
    expect(modern.status, await modern.clone().text()).toBe(200);
    expect(((await modern.json()) as { result: { resultType: string; isError?: boolean } }).result).toMatchObject({ resultType: "complete" });
    expect(await (await t.req(`/v1/workspaces/${t.ws}/files/old.txt`)).text()).toBe("2025\n");
    expect(await (await t.req(`/v1/workspaces/${t.ws}/files/new.txt`)).text()).toBe("2026\n");
  });

  it("a body that is not JSON, or empty: 400, -32700 Parse error, id null (as the SDK answered), saying to send a JSON-RPC request (it said to send the arguments as one JSON object)", async () => {
    const t = await newTenant(testApp());
    for (const body of ['{"jsonrpc":"2.0","id":1,', "not json", ""]) {
      const res = await post(t, body);
      expect(res.status).toBe(400);
      const e = await parseError(res);
      expect(e.error.code).toBe(-32700);
      expect(e.error.message).toMatch(/^Parse error: The request body (is not valid JSON \(.+\)|is empty)\. Send one JSON-RPC 2\.0 request as a JSON object, e\.g\. \{"jsonrpc": "2\.0", "id": 1, "method": "tools\/list"\}, or \(2025 revisions\) a batch of them as a JSON array\.$/);
      expect(e.error.message).not.toContain("arguments");
    }
  });

  it("invalid UTF-8 in a string is refused with the offset of the bad byte (was decoded to U+FFFD and written)", async () => {
    const t = await newTenant(testApp());
    const text = JSON.stringify(write("bad.txt", "ok:XX"));
    const at = text.indexOf("XX");
    const bytes = new TextEncoder().encode(text);
    bytes[at] = 0xc3; // a lead byte followed by "X": no UTF-8
    const res = await post(t, bytes);
    expect(res.status).toBe(400);
    const e = await parseError(res);
    expect(e.error.code).toBe(-32700);
    expect(e.error.message).toContain(`offset ${at}`);
    expect(e.error.data?.details).toEqual({ byte_offset: at });
    expect((await t.req(`/v1/workspaces/${t.ws}/files/bad.txt`)).status).toBe(404);
  });

  it("the bound is MAX_JSON_BODY_BYTES, the HTTP tool routes' (not the SDK's 4 MiB): a 5 MB write is taken, a body over the bound is 413 with a JSON-RPC error", async () => {
    const t = await newTenant(testApp());
    const big = "a".repeat(5 * 1024 * 1024);
    const ok = await post(t, JSON.stringify(write("big.txt", big)));
    expect(ok.status, (await ok.clone().text()).slice(0, 300)).toBe(200);
    expect(((await ok.json()) as { result: { isError?: boolean } }).result.isError).toBeUndefined();
    expect((await (await t.req(`/v1/workspaces/${t.ws}/files/big.txt`)).text()).length).toBe(big.length);
    const over = await post(t, JSON.stringify(write("over.txt", "a".repeat(MAX_JSON_BODY_BYTES))));
    expect(over.status).toBe(413);
    const e = await parseError(over);
    expect(e.error.code).toBe(-32000);
    expect(e.error.message).toContain(String(MAX_JSON_BODY_BYTES));
    // What the model can do itself (it cannot send the app's PUT): parts, one write each, joined with bash.
    expect(e.error.message).toMatch(/write it in parts of at most 25 MB, one write call each, then join them with bash/);
    expect((await t.req(`/v1/workspaces/${t.ws}/files/over.txt`)).status).toBe(404);
  });

  it("with tracing on, only the MCP route's body is read for its traceparent: another POST whose path ends in /mcp keeps its body (an answer to pending call 'mcp': 404, where the read body made it a 500)", async () => {
    const app = testApp({ tracer: otlpTracer({ endpoint: "http://collector.test:4318", service: "toolshed-api", fetch: async () => new Response("{}") }) });
    const t = await newTenant(app);
    const approver = (await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read", "approve"] })).body.key as string;
    const res = await app.request(`/v1/workspaces/${t.ws}/pending/mcp`, { method: "POST", headers: { authorization: `Bearer ${approver}`, "content-type": "application/json" }, body: JSON.stringify({ approved: true }) });
    expect(res.status, await res.clone().text()).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("NOT_FOUND");
  });
});

/**
 * An MCP request over calls_per_minute is answered as MCP answers errors over Streamable HTTP: a
 * JSON-RPC error response (the request's id, code -32000, a message naming the limit and when to
 * retry, data.code RATE_LIMITED with retry_after), with HTTP 429 and Retry-After kept. Before
 * (2026-12-02) the route guard's plain JSON envelope `{ok: false, error}` came back, which an MCP
 * client cannot match to its request.
 */
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { durableLimits } from "../../../lib/limits/durable-object.js";
import { admin, newTenant, testApp, UNGATED } from "../../helpers.js";

const V2025 = { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-03-26" };

it("over calls_per_minute, a tools/list and a batch get a JSON-RPC error (the request's id; null for a batch) with 429 and Retry-After", async () => {
  const app = testApp({ limits: durableLimits(env.LIMITS) });
  const t = await newTenant(app, UNGATED);
  expect((await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, { calls_per_minute: 1 }, "PUT")).status).toBe(200);
  // A key made after the limit: no calls this isolate took ahead for it under the default (lib/limits/call-leases.ts), so each call is decided by the object.
  const key = (await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, {})).body.key as string;
  const send = (body: unknown) => app.request(`/v1/workspaces/${t.ws}/mcp`, { method: "POST", headers: { ...V2025, authorization: `Bearer ${key}` }, body: JSON.stringify(body) });
  expect((await send({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} })).status).toBe(200);
  // Refused by the route guard, before the door reads the body.
  const r = await send({ jsonrpc: "2.0", id: "req-7", method: "tools/list", params: {} });
  expect(r.status).toBe(429);
  const retry = Number(r.headers.get("retry-after"));
  expect(retry).toBeGreaterThan(0);
  const body = (await r.json()) as any;
  expect(body).toMatchObject({ jsonrpc: "2.0", id: "req-7", error: { code: -32000, data: { code: "RATE_LIMITED", details: { limit: "calls_per_minute", retry_after: retry } } } });
  expect(body.error.message).toContain("calls_per_minute");
  expect(body.error.message).toContain(`Retry after ${retry} s`);
  expect(body.ok).toBeUndefined();
  // A batch names no one request: id null.
  const b = await send([{ jsonrpc: "2.0", id: 1, method: "tools/list" }, { jsonrpc: "2.0", id: 2, method: "tools/list" }]);
  expect(b.status).toBe(429);
  expect(b.headers.get("retry-after")).not.toBeNull();
  expect(await b.json()).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32000, data: { code: "RATE_LIMITED" } } });
});

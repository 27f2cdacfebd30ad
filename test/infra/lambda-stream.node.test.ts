/**
 * Lambda response streaming (lib/runtime/lambda-stream.ts), invoked as the Lambda Node.js runtime does
 * through lambda-local: the client has the whole answer when the response stream ends, while the usage
 * record's write (DynamoDB through dynalite, held on purpose by a gate the test opens) is still under
 * way; the handler returns only once it is stored. Errors, SSE answers, status, headers, cookies and
 * binary bodies pass through; deferred work that never settles stops being awaited before the timeout.
 */
import { Hono } from "hono";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { eventV2, invokeStreaming, invokeWhole, readAll } from "../support/lambda-invoke.js";
import { lambdaEnv, type LambdaEnv } from "../support/lambda-env.js";
import type { StoredRecord, UsageStore } from "../../lib/run/metering/store.js";

let aws: LambdaEnv;
let handler: unknown;
let store: UsageStore;
const ADMIN = "lambda-stream-admin";

/** Holds the usage store's writes until released: `reached` settles when a write is waiting. */
class UsageGate {
  private held?: { reached: () => void; opened: Promise<void> };
  hold() {
    let reached!: () => void;
    let release!: () => void;
    const wasReached = new Promise<void>((r) => (reached = r));
    this.held = { reached, opened: new Promise<void>((r) => (release = r)) };
    return { reached: wasReached, release: () => (release(), (this.held = undefined)) };
  }
  wrap(inner: UsageStore): UsageStore {
    return {
      record: async (records: StoredRecord[]) => {
        const held = this.held;
        if (held) {
          held.reached();
          await held.opened;
        }
        await inner.record(records);
      },
      query: (t, q) => inner.query(t, q),
      exportRecords: (t, q) => inner.exportRecords(t, q),
    };
  }
}
const gate = new UsageGate();

beforeAll(async () => {
  aws = await lambdaEnv({ bucket: "toolshed-stream", adminToken: ADMIN });
  // The entry's wiring (infra/lambda.ts), with the usage store behind the gate.
  const { fromAwsEnv, lambdaUsageSink } = await import("../../lib/runtime/aws.js");
  const { streamingHandler } = await import("../../lib/runtime/lambda-stream.js");
  const { createApp } = await import("../../lib/api/app.js");
  const { tools } = await import("../../functions/index.js");
  const deps = fromAwsEnv(process.env);
  store = gate.wrap(deps.usageStore!);
  const sink = lambdaUsageSink(store);
  const app = createApp({ ...deps, usageStore: store, onUsage: sink }, tools);
  handler = streamingHandler((req, env, ctx) => app.fetch(req, env, ctx), { settled: sink.settled });
});

afterAll(async () => {
  await aws?.stop();
});

const call = (method: string, path: string, token: string, json?: unknown, headers?: Record<string, string>) =>
  invokeWhole(handler, eventV2(method, path, { token, ...(json !== undefined ? { json } : {}), ...(headers ? { headers } : {}) }));

/** The tenant's stored records, as the export reads them from DynamoDB. */
async function storedTools(tenant: string): Promise<string[]> {
  const page = await store.exportRecords(tenant, { from: 0, to: Date.now() + 3_600_000 });
  return page.records.map((r) => `${r.tool ?? r.route}:${r.code ?? "ok"}`);
}

async function tenantWithWorkspace(id: string): Promise<string> {
  expect((await call("POST", "/v1/admin/tenants", ADMIN, { id })).status).toBe(201);
  const key = (await call("POST", "/v1/admin/tenants/" + id + "/keys", ADMIN, {})).json.key as string;
  expect((await call("POST", "/v1/workspaces", key, { id: "w" })).status).toBe(201);
  return key;
}

/** Invokes with the usage store held: the answer is read whole, then the held write is seen waiting and the handler not yet returned; then released. */
async function answeredBeforeRecorded(event: unknown) {
  const h = gate.hold();
  const inv = await invokeStreaming(handler, event);
  let returned = false;
  void inv.returned.then(() => (returned = true));
  const raw = await readAll(inv.body); // the stream has ended: the client has its answer
  await h.reached; // the record's write is under way, held by the gate
  const beforeRelease = { returned };
  h.release();
  await inv.returned;
  return { status: inv.status, headers: inv.headers, raw, beforeRelease };
}

it("answers before the usage record is written, and returns only once it is stored", async () => {
  const key = await tenantWithWorkspace("early");
  expect(await storedTools("early")).toEqual(["POST workspaces:ok"]);
  const r = await answeredBeforeRecorded(eventV2("POST", "/v1/workspaces/w/tools/write", { token: key, json: { file_path: "a.txt", content: "hi\n" } }));
  expect(r.status).toBe(200);
  expect(JSON.parse(r.raw.toString())).toMatchObject({ ok: true, tool: "write", data: { created: true } });
  expect(r.beforeRelease.returned).toBe(false);
  expect(await storedTools("early")).toEqual(["POST workspaces:ok", "write:ok"]);
}, 120_000);

it("an error answer streams the same way: its status and envelope first, its record before the handler returns", async () => {
  const key = await tenantWithWorkspace("errs");
  const r = await answeredBeforeRecorded(eventV2("POST", "/v1/workspaces/w/tools/read", { token: key, json: { file_path: "missing.txt" } }));
  expect(r.status).toBe(404);
  expect(r.headers["content-type"]).toMatch(/^application\/json/);
  expect(JSON.parse(r.raw.toString())).toMatchObject({ ok: false, tool: "read", error: { code: "NOT_FOUND" } });
  expect(r.beforeRelease.returned).toBe(false);
  expect(await storedTools("errs")).toEqual(["POST workspaces:ok", "read:NOT_FOUND"]);
}, 120_000);

it("an SSE answer (Accept: text/event-stream) streams its result event, and is metered", async () => {
  const key = await tenantWithWorkspace("sse");
  const r = await answeredBeforeRecorded(eventV2("POST", "/v1/workspaces/w/tools/write", { token: key, json: { file_path: "s.txt", content: "x\n" }, headers: { accept: "text/event-stream" } }));
  expect(r.status).toBe(200);
  expect(r.headers["content-type"]).toMatch(/^text\/event-stream/);
  const text = r.raw.toString();
  const result = text.split("\n\n").find((e) => e.startsWith("event: result"))!;
  expect(JSON.parse(result.split("\n").find((l) => l.startsWith("data: "))!.slice(6))).toMatchObject({ ok: true, tool: "write" });
  expect(r.beforeRelease.returned).toBe(false);
  expect(await storedTools("sse")).toEqual(["POST workspaces:ok", "write:ok"]);
}, 120_000);

it("a binary file round-trips: a base64 request body in, raw bytes out", async () => {
  const key = await tenantWithWorkspace("bytes");
  const bytes = Uint8Array.from({ length: 256 }, (_, i) => 255 - i);
  const put = await invokeWhole(handler, eventV2("PUT", "/v1/workspaces/w/files/b.bin", { token: key, body: bytes }));
  expect(put.status).toBe(201);
  const got = await call("GET", "/v1/workspaces/w/files/b.bin", key);
  expect(got.status).toBe(200);
  expect([...got.raw]).toEqual([...bytes]);
}, 120_000);

it("status, headers, each set-cookie apart, request cookies and query reach their sides unchanged", async () => {
  const { streamingHandler } = await import("../../lib/runtime/lambda-stream.js");
  const app = new Hono();
  app.post("/echo", async (c) => {
    c.header("x-seen-cookie", c.req.header("cookie") ?? "");
    c.header("x-seen-query", c.req.query("q") ?? "");
    c.header("x-many", "a");
    c.header("x-many", "b", { append: true });
    c.header("set-cookie", "one=1; Path=/; HttpOnly", { append: true });
    c.header("set-cookie", "two=2; Path=/; Secure", { append: true });
    return c.body(new Uint8Array(await c.req.arrayBuffer()).reverse(), 207, { "content-type": "application/octet-stream" });
  });
  app.get("/empty", (c) => c.body(null, 204));
  const h = streamingHandler((req, env, ctx) => app.fetch(req, env, ctx));
  const body = Uint8Array.from([0, 1, 2, 0xff, 0xfe, 0]);
  const r = await invokeWhole(h, eventV2("POST", "/echo?q=a%20b", { body, cookies: ["s=1", "t=2"] }));
  expect(r.status).toBe(207);
  expect(r.cookies).toEqual(["one=1; Path=/; HttpOnly", "two=2; Path=/; Secure"]);
  expect(r.headers).toMatchObject({ "x-seen-cookie": "s=1; t=2", "x-seen-query": "a b", "x-many": "a, b", "content-type": "application/octet-stream" });
  expect(r.headers["set-cookie"]).toBeUndefined();
  expect([...r.raw]).toEqual([0, 0xfe, 0xff, 2, 1, 0]);
  const empty = await invokeWhole(h, eventV2("GET", "/empty"));
  expect(empty.status).toBe(204);
  expect(empty.raw.length).toBe(0);
});

it("a fetch that throws answers 500 with the error envelope; deferred work that never settles is left before the timeout, and named", async () => {
  const { streamingHandler, AFTER_ANSWER_MARGIN_MS } = await import("../../lib/runtime/lambda-stream.js");
  const thrown = await invokeWhole(streamingHandler(() => Promise.reject(new Error("boom"))), eventV2("GET", "/x"));
  expect(thrown.status).toBe(500);
  expect(thrown.json).toMatchObject({ ok: false, error: { code: "INTERNAL" } });

  const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
  try {
    const stuck = streamingHandler((_req, _env, ctx) => {
      ctx.waitUntil(new Promise(() => {})); // never settles
      return new Response("answered");
    });
    // lambda-local's context: the function's timeout 500 ms past the margin.
    const inv = await invokeStreaming(stuck, eventV2("GET", "/x"), AFTER_ANSWER_MARGIN_MS + 500);
    expect((await readAll(inv.body)).toString()).toBe("answered");
    await inv.returned;
    expect(warn.mock.calls.map((c) => String(c[0])).some((m) => m.includes("1 deferred promises unfinished"))).toBe(true);
  } finally {
    warn.mockRestore();
  }
});

/**
 * The MCP route's own refusals (the route guard's and the route's, outside any JSON-RPC method) as
 * an MCP client sees them (lib/api/routes/mcp.ts, lib/doors/json-rpc.ts mcpRouteRefusal): a
 * JSON-RPC error response with the request's id, `CODE: message` and data `{code, details}`; the
 * HTTP status kept (401 with WWW-Authenticate, 409 and 429 with Retry-After) but for a 404 on a
 * request with Mcp-Session-Id, which tells a client its session is gone: 400 there. Before
 * 2026-12-02 all but calls_per_minute's came in the HTTP routes' envelope `{ok: false, error}`,
 * which the official SDK 1.x client surfaces as `Error POSTing to endpoint: {"ok":false,...}`.
 * The real app over memory storage, the official 1.x client (Streamable HTTP) and raw requests.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { tools } from "../../../functions/index.js";
import { createApp } from "../../../lib/api/app.js";
import type { AppDeps } from "../../../lib/api/deps.js";
import { scopedKeyHash, KEEP_MS, RUNNING_LEASE_MS } from "../../../lib/api/idempotency.js";
import { mcpRefusalStatus } from "../../../lib/doors/json-rpc.js";
import { idempotencyRecordKey } from "../../../lib/layout/paths.js";
import { ERROR_CODES, ToolError, type ErrorCode } from "../../../lib/shared/errors.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import type { KeyValueStore } from "../../../lib/storage/types.js";

const ADMIN = "mcp-route-refusals-admin";
const TENANT = "refusals";

/** KV whose reads throw `inject.error` while it is set: a refusal of any code where the guard reads a key. */
const inject: { error: unknown } = { error: null };
function failingReads(inner: KeyValueStore): KeyValueStore {
  return { ...inner, get: (key) => (inject.error !== null ? Promise.reject(inject.error) : inner.get(key)), put: inner.put.bind(inner), delete: inner.delete.bind(inner), list: inner.list.bind(inner) };
}

const storage = memoryDriver();
const app = createApp({ storage, kv: failingReads(storageKeyValue(memoryDriver(), "kv/")), adminToken: ADMIN } as AppDeps, tools);
let last: Response | undefined;
const viaApp = (async (url: string | URL | Request, init?: RequestInit) => (last = await app.request(String(url), init))) as typeof fetch;
const json = async (path: string, body: unknown, auth: string, method = "POST") => (await app.request(path, { method, headers: { authorization: `Bearer ${auth}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json() as Promise<any>;
const mcpUrl = (ws: string) => new URL(`http://127.0.0.1/v1/workspaces/${ws}/mcp`);

let key = "";
let keyId = "";
let revoked = "";
let limited = "";
beforeAll(async () => {
  await json("/v1/admin/tenants", { id: TENANT }, ADMIN);
  ({ key, key_id: keyId } = await json(`/v1/admin/tenants/${TENANT}/keys`, {}, ADMIN));
  for (const id of ["main", "gone"]) await json("/v1/workspaces", { id }, key);
  const old = await json(`/v1/admin/tenants/${TENANT}/keys`, {}, ADMIN);
  await app.request(`/v1/admin/tenants/${TENANT}/keys/${old.key_id}`, { method: "DELETE", headers: { authorization: `Bearer ${ADMIN}` } });
  revoked = old.key;
  limited = (await json(`/v1/admin/tenants/${TENANT}/keys`, { workspaces: ["other"] }, ADMIN)).key;
});

type Rpc = { jsonrpc?: string; id?: unknown; ok?: unknown; error?: { code: number; message: string; data?: { code: string; details: Record<string, unknown> } } };
/** What the 1.x client threw: the HTTP status and the body it quotes (`Error POSTing to endpoint: <body>`). */
function thrown(e: unknown): { status: number; rpc: Rpc } {
  expect(e).toBeInstanceOf(StreamableHTTPError);
  const m = (e as Error).message;
  return { status: (e as StreamableHTTPError).code!, rpc: JSON.parse(m.slice(m.indexOf("{"))) as Rpc };
}

/** A 1.x client's connect (initialize, id 0) with `auth` on workspace `ws`: what it threw. */
async function connectRefused(auth: string, ws = "main", headers: Record<string, string> = {}) {
  const client = new Client({ name: "refused", version: "1" });
  const e = await client.connect(new StreamableHTTPClientTransport(mcpUrl(ws), { fetch: viaApp, requestInit: { headers: { authorization: `Bearer ${auth}`, ...headers } } })).then(() => null, (err: unknown) => err);
  return thrown(e);
}

describe("each refusal of the MCP route, through the official 1.x client", () => {
  it("a revoked key: 401 with WWW-Authenticate kept, the JSON-RPC error UNAUTHORIZED (id null: a caller without a valid key gets its body unread)", async () => {
    const { status, rpc } = await connectRefused(revoked);
    expect(status).toBe(401);
    expect(last!.headers.get("www-authenticate")).toMatch(/^Bearer resource_metadata="[^"]+", error="invalid_token"$/);
    expect(rpc).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32000, data: { code: "UNAUTHORIZED" } } });
    expect(rpc.error!.message).toMatch(/^UNAUTHORIZED: Invalid or revoked API key\. Send a current key/);
    expect(rpc.ok).toBeUndefined();
  });

  it("a workspace that does not exist and one the key may not use: the same 404 with the JSON-RPC error NOT_FOUND and the request's id", async () => {
    const notAllowed = await connectRefused(limited, "main"); // exists, outside the key's workspaces
    const missing = await connectRefused(limited, "other"); // within them, never made
    for (const { status, rpc } of [notAllowed, missing]) {
      expect(status).toBe(404);
      expect(rpc).toMatchObject({ jsonrpc: "2.0", id: 0, error: { code: -32000, data: { code: "NOT_FOUND" } } });
      expect(rpc.error!.message).toMatch(/^NOT_FOUND: Workspace not found: (main|other)\. List your workspaces with GET \/v1\/workspaces\./);
    }
    expect(notAllowed.rpc.error!.message.replace("main", "other")).toBe(missing.rpc.error!.message); // no oracle
  });

  it("a request with Mcp-Session-Id whose workspace is gone: 400, not the 404 that tells a client its session ended", async () => {
    // A client that declares form elicitation gets a session id at initialize (lib/doors/mcp-ask.ts).
    const client = new Client({ name: "asks", version: "1" }, { capabilities: { elicitation: {} } });
    const transport = new StreamableHTTPClientTransport(mcpUrl("gone"), { fetch: viaApp, requestInit: { headers: { authorization: `Bearer ${key}` } } });
    await client.connect(transport);
    const session = transport.sessionId;
    expect(session).toMatch(/^ask-/);
    expect((await app.request("/v1/workspaces/gone", { method: "DELETE", headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
    const { status, rpc } = thrown(await client.listTools().then(() => null, (e: unknown) => e));
    expect(status).toBe(400);
    expect(rpc).toMatchObject({ jsonrpc: "2.0", id: 1, error: { code: -32000, data: { code: "NOT_FOUND", details: { workspace: "gone" } } } });
    expect(transport.sessionId).toBe(session);
    await client.close();
  });

  it("an Idempotency-Key whose request still runs: 409 with Retry-After, the JSON-RPC error CONFLICT saying when to retry", async () => {
    // The record a first request with this key holds while it runs (the bucket holds keys where the app has no limits store).
    const t = Date.now();
    const hash = await scopedKeyHash({ tenant: TENANT, keyId }, "held-key");
    await storage.put(idempotencyRecordKey(TENANT, hash), JSON.stringify({ state: "running", started: t, lease_until: t + RUNNING_LEASE_MS, expires: t + KEEP_MS }));
    const keyed = (async (url: string | URL | Request, init?: RequestInit) => {
      const headers = new Headers(init?.headers);
      if (String(init?.body ?? "").includes('"tools/list"')) headers.set("idempotency-key", "held-key");
      return viaApp(url, { ...init, headers });
    }) as typeof fetch;
    const client = new Client({ name: "keyed", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl("main"), { fetch: keyed, requestInit: { headers: { authorization: `Bearer ${key}` } } }));
    const { status, rpc } = thrown(await client.listTools().then(() => null, (e: unknown) => e));
    expect(status).toBe(409);
    expect(Number(last!.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(rpc).toMatchObject({ jsonrpc: "2.0", id: 1, error: { code: -32000, data: { code: "CONFLICT", details: { retry_after: Number(last!.headers.get("retry-after")) } } } });
    expect(rpc.error!.message).toMatch(/^CONFLICT: A request with this Idempotency-Key is still running\. Retry with the same key after Retry-After seconds/);
    await client.close();
  });

  it("a bad X-Session-Id: 400 with the JSON-RPC error INVALID_ARGUMENT naming the header", async () => {
    const { status, rpc } = await connectRefused(key, "main", { "x-session-id": "no spaces allowed" });
    expect(status).toBe(400);
    expect(rpc).toMatchObject({ jsonrpc: "2.0", id: 0, error: { code: -32000, data: { code: "INVALID_ARGUMENT" } } });
    expect(rpc.error!.message).toMatch(/^INVALID_ARGUMENT: Invalid X-Session-Id: use 1-128 characters/);
  });
});

/** One way to make the route refuse with a code, and what a client must get. */
interface Provoked {
  what: string;
  send: () => Response | Promise<Response>;
  status: number;
  rpc: number;
  /** The JSON-RPC id of the answer: the request's (7), or null (no body read, or none to read). */
  id: 7 | null;
  /** How its message opens, where not `CODE: ` (the body reader's answers keep the SDKs' words: lib/api/routes/mcp-body.ts). */
  says?: RegExp;
}

const LIST = { jsonrpc: "2.0", id: 7, method: "tools/list", params: {} };
const post = (ws: string, auth: string | null, headers: Record<string, string> = {}, body: string = JSON.stringify(LIST)) =>
  app.request(`/v1/workspaces/${ws}/mcp`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...(auth ? { authorization: `Bearer ${auth}` } : {}), ...headers }, body });
const TOOL_OUTCOME = "a tool's outcome: an isError result of tools/call (or of a task), never the route's HTTP answer";

/**
 * Every code of the registry: how the MCP route gives it, or why it never does. Typed by ErrorCode,
 * so a new code fails the type check until it has its row. Whatever a row says, the walk after it
 * sends every code through the route (a refusal injected where the guard reads the key).
 */
const ROUTE_REFUSALS: Record<ErrorCode, Provoked[] | string> = {
  UNAUTHORIZED: [
    { what: "no key", send: () => post("main", null), status: 401, rpc: -32000, id: null },
    { what: "a revoked key", send: () => post("main", revoked), status: 401, rpc: -32000, id: null },
    {
      what: "an expired key",
      send: async () => {
        const expiring = (await json(`/v1/admin/tenants/${TENANT}/keys`, { expires_at: new Date(Date.now() + 1000).toISOString() }, ADMIN)).key as string;
        await new Promise((r) => setTimeout(r, 1100));
        const res = await post("main", expiring);
        expect(res.headers.get("www-authenticate")).toMatch(/error="invalid_token"/);
        expect(((await res.clone().json()) as Rpc).error!.message).toMatch(/^UNAUTHORIZED: This API key expired at /);
        return res;
      },
      status: 401, rpc: -32000, id: null,
    },
  ],
  NOT_FOUND: [
    { what: "no such workspace", send: () => post("nowhere", key), status: 404, rpc: -32000, id: 7 },
    { what: "a workspace outside the key's", send: () => post("main", limited), status: 404, rpc: -32000, id: 7 },
    {
      what: "no such workspace, with an Idempotency-Key (answered inside the key's run, no error thrown), then its kept answer replayed",
      send: async () => {
        const first = await post("nowhere", key, { "idempotency-key": "replayed-key" });
        await expectRpcRefusal(first, "NOT_FOUND", { status: 404, rpc: -32000, id: 7 }, "the first answer");
        const replay = await post("nowhere", key, { "idempotency-key": "replayed-key" });
        expect(replay.headers.get("idempotent-replayed")).toBe("true");
        return replay;
      },
      status: 404, rpc: -32000, id: 7,
    },
    { what: "no such workspace, with Mcp-Session-Id", send: () => post("nowhere", key, { "mcp-session-id": "ask-0123456789abcdefghijklmn" }), status: 400, rpc: -32000, id: 7 },
  ],
  PERMISSION_DENIED: [{ what: "a foreign Origin", send: () => post("main", key, { origin: "https://evil.example" }), status: 403, rpc: -32000, id: null }],
  METHOD_NOT_ALLOWED: [
    { what: "GET (no server stream)", send: () => app.request("/v1/workspaces/main/mcp", { headers: { authorization: `Bearer ${key}`, accept: "text/event-stream" } }), status: 405, rpc: -32000, id: null },
    { what: "DELETE (no session to end)", send: () => app.request("/v1/workspaces/main/mcp", { method: "DELETE", headers: { authorization: `Bearer ${key}` } }), status: 405, rpc: -32000, id: null },
  ],
  INVALID_ARGUMENT: [
    { what: "a bad X-Session-Id", send: () => post("main", key, { "x-session-id": "a b" }), status: 400, rpc: -32000, id: 7 },
    { what: "a bad Idempotency-Key", send: () => post("main", key, { "idempotency-key": "" }), status: 400, rpc: -32000, id: 7 },
    { what: "a body that is not JSON", send: () => post("main", key, {}, "{not json"), status: 400, rpc: -32700, id: null, says: /^Parse error: / },
  ],
  PAYLOAD_TOO_LARGE: [{ what: "a body over 40 MiB", send: () => post("main", key, {}, JSON.stringify({ ...LIST, params: { pad: "x".repeat(40 * 1024 * 1024) } })), status: 413, rpc: -32000, id: null, says: /^Payload Too Large: / }],
  CONFLICT: [
    {
      what: "an Idempotency-Key still running",
      send: async () => {
        const t = Date.now();
        await storage.put(idempotencyRecordKey(TENANT, await scopedKeyHash({ tenant: TENANT, keyId }, "table-key")), JSON.stringify({ state: "running", started: t, lease_until: t + RUNNING_LEASE_MS, expires: t + KEEP_MS }));
        return post("main", key, { "idempotency-key": "table-key" });
      },
      status: 409, rpc: -32000, id: 7,
    },
  ],
  RATE_LIMITED: [
    {
      what: "a key id guessed past the backoff's free failures (lib/api/auth/backoff.ts)",
      send: async () => {
        for (let i = 0; i < 11; i++) expect((await post("main", `tsk_guessed_wrong${i}`)).status).toBe(401);
        return post("main", "tsk_guessed_wrong");
      },
      status: 429, rpc: -32000, id: null,
    },
  ],
  INTERNAL: [
    {
      what: "a storage fault reading the key",
      send: async () => {
        inject.error = new Error("kv said: kv/keys/secret-hash");
        try {
          return await post("main", "tsk_internal_secret");
        } finally {
          inject.error = null;
        }
      },
      status: 500, rpc: -32603, id: null,
    },
  ],
  UNAVAILABLE: "an OAuth issuer's keys unreadable (lib/api/auth/oauth-token.ts): the walk below sends it as the guard throws it",
  INVALID_PATH: TOOL_OUTCOME, IS_DIRECTORY: TOOL_OUTCOME, NOT_A_DIRECTORY: TOOL_OUTCOME, SYMLINK_REFUSED: TOOL_OUTCOME,
  NOT_READ: TOOL_OUTCOME, FILE_MODIFIED: TOOL_OUTCOME, ALREADY_EXISTS: TOOL_OUTCOME, NO_MATCH: TOOL_OUTCOME, NOT_UNIQUE: TOOL_OUTCOME,
  NO_CHANGE: TOOL_OUTCOME, BINARY_FILE: TOOL_OUTCOME, FILE_TOO_LARGE: TOOL_OUTCOME, QUOTA_EXCEEDED: TOOL_OUTCOME, TIMEOUT: TOOL_OUTCOME,
  BLOCKED: TOOL_OUTCOME, NEEDS_INPUT: TOOL_OUTCOME, NEEDS_APPROVAL: TOOL_OUTCOME, DENIED: TOOL_OUTCOME, EXPIRED: TOOL_OUTCOME,
  FETCH_FAILED: TOOL_OUTCOME, LLM_ASSIST_REQUIRED: TOOL_OUTCOME, PLUGIN_FAILED: TOOL_OUTCOME, TOOL_REPORTED_ERROR: TOOL_OUTCOME,
  CANCELLED: TOOL_OUTCOME, BUSY: TOOL_OUTCOME,
};

/** The answer is a JSON-RPC error carrying `code`, never the HTTP routes' envelope. */
async function expectRpcRefusal(res: Response, code: ErrorCode, want: { status: number; rpc: number; id: unknown; says?: RegExp }, what: string) {
  const body = (await res.json()) as Rpc;
  expect({ status: res.status, jsonrpc: body.jsonrpc, id: body.id, rpc: body.error?.code, code: body.error?.data?.code ?? null, ok: body.ok }, `${code}: ${what}`).toEqual({ status: want.status, rpc: want.rpc, id: want.id, jsonrpc: "2.0", code: want.rpc === -32700 ? "INVALID_ARGUMENT" : code, ok: undefined });
  expect(body.error!.message, what).toMatch(want.says ?? new RegExp(`^${code}: `));
  if (code === "INTERNAL") expect(body.error!.message).not.toContain("secret-hash");
}

describe("every refusal code of the MCP route", () => {
  it("the table: each code the route gives, provoked through the real app, is a JSON-RPC error with its status", async () => {
    expect(Object.keys(ROUTE_REFUSALS).sort()).toEqual(Object.keys(ERROR_CODES).sort());
    for (const [code, rows] of Object.entries(ROUTE_REFUSALS) as [ErrorCode, Provoked[] | string][]) {
      if (typeof rows === "string") continue;
      for (const row of rows) {
        const res = await row.send();
        if (row.status === 401) expect(res.headers.get("www-authenticate"), row.what).toMatch(/^Bearer resource_metadata=/);
        if (row.status === 409 || row.status === 429) expect(Number(res.headers.get("retry-after")), row.what).toBeGreaterThan(0);
        if (row.status === 405) expect(res.headers.get("allow")).toBe("POST");
        await expectRpcRefusal(res, code, row, row.what);
      }
    }
  }, 60_000);

  it("the walk: every code of the registry, thrown where the guard reads the key, is a JSON-RPC error (404 and a status under 400 become 400 with a session)", async () => {
    for (const code of Object.keys(ERROR_CODES) as ErrorCode[]) {
      for (const session of [false, true]) {
        inject.error = new ToolError(code, `injected ${code}`, { injected: true });
        let res: Response;
        try {
          res = await post("main", `tsk_walk${code.toLowerCase().replace(/_/g, "")}_s`, session ? { "mcp-session-id": "ask-0123456789abcdefghijklmn" } : {});
        } finally {
          inject.error = null;
        }
        const status = mcpRefusalStatus(ERROR_CODES[code].status, session);
        expect(status).toBeGreaterThanOrEqual(400);
        await expectRpcRefusal(res, code, { status, rpc: code === "INTERNAL" ? -32603 : -32000, id: null }, `injected, session ${session}`);
      }
    }
  });
});

describe("the official 2.x client on 2026-07-28 (versionNegotiation auto)", () => {
  /** A 2.x client whose POSTs get `headers` (a tools/list's only, with `listOnly`). */
  const client2026 = async (ws: string, headers: Record<string, string>, listOnly = false) => {
    const { Client: Client2, StreamableHTTPClientTransport: Transport2 } = await import("@modelcontextprotocol/client");
    const client = new Client2({ name: "refused-2026", version: "1" }, { versionNegotiation: { mode: "auto" } });
    const withHeaders = (async (url: string | URL | Request, init?: RequestInit) => {
      const h = new Headers(init?.headers);
      if (!listOnly || String(init?.body ?? "").includes('"tools/list"')) for (const [k, v] of Object.entries(headers)) h.set(k, v);
      return viaApp(url, { ...init, headers: h });
    }) as typeof fetch;
    const transport = new Transport2(mcpUrl(ws), { fetch: withHeaders, requestInit: { headers: { authorization: `Bearer ${key}` } } });
    return { client, connect: () => client.connect(transport).then(() => null, (e: unknown) => e as Error & { code?: unknown; data?: any }) };
  };

  it("on a 2026-07-28 request a 400 refusal reaches the request as its JSON-RPC error; other statuses, and the negotiation's probe, an HTTP error quoting it", async () => {
    const c = await client2026("main", { "idempotency-key": "" }, true);
    expect(await c.connect()).toBeNull();
    const listed = await c.client.listTools().then(() => null, (e: unknown) => e as Error & { code?: unknown; data?: unknown });
    expect(listed).toMatchObject({ code: -32000, data: { code: "INVALID_ARGUMENT" } });
    expect(listed!.message).toMatch(/INVALID_ARGUMENT: Idempotency-Key must be 1 to 255 visible ASCII characters/);
    await c.client.close();
    // The first request (server/discover, the version probe) is not yet the revision's: its refusal is an HTTP error whose text is the JSON-RPC error.
    const probe = await (await client2026("main", { "x-session-id": "a b" })).connect();
    expect(probe).toMatchObject({ name: "SdkHttpError", data: { status: 400 } });
    expect(JSON.parse(probe!.data.text)).toMatchObject({ jsonrpc: "2.0", error: { code: -32000, data: { code: "INVALID_ARGUMENT" } } });
    const missing = await (await client2026("nowhere", {})).connect();
    expect(missing).toMatchObject({ name: "SdkHttpError", data: { status: 404 } });
    expect(JSON.parse(missing!.data.text)).toMatchObject({ jsonrpc: "2.0", error: { code: -32000, message: expect.stringMatching(/^NOT_FOUND: Workspace not found: nowhere\./), data: { code: "NOT_FOUND" } } });
  });
});

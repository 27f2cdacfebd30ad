/**
 * OAuth as a resource server (docs/oauth.md), end to end in Node: the real app (memory storage), the
 * Lambda transport (nodeFetcher: resolves, checks and pins) with the test-only loopback switch, and
 * a real local authorization server on 127.0.0.1 (test/support/oauth-issuer.ts) serving metadata and
 * a JWKS. Tokens over the HTTP routes and MCP (the official client), key rotation, every refusal
 * with its status and WWW-Authenticate, the tenant boundary attacked, and the SSRF guard on the issuer's URLs.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { createApp } from "../../../lib/api/app.js";
import type { AppDeps } from "../../../lib/api/deps.js";
import { JwksCache } from "../../../lib/api/auth/jwks.js";
import { createAuthBackoff } from "../../../lib/api/auth/backoff.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { nodeFetcher } from "../../../lib/tools/web/node-fetcher.js";
import { SCOPES } from "../../../lib/contract/caller.js";
import { startLocalIssuer, newSigningKey, signToken, type LocalIssuer } from "../../support/oauth-issuer.js";

const ADMIN = "admin-oauth-test";
const BASE = "https://api.toolshed.test";
const PRM = `${BASE}/.well-known/oauth-protected-resource`;

let clock = Date.now();
const keys = new JwksCache({ now: () => clock });
function build(extra: Partial<AppDeps> = {}) {
  const deps: AppDeps = {
    storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, syncUrl: BASE,
    webFetch: { fetcher: nodeFetcher(), allowLoopback: true }, oauthKeys: keys, authBackoff: createAuthBackoff({ freeFailures: Infinity }), ...extra,
  };
  return createApp(deps, tools);
}
type App = ReturnType<typeof build>;

const adminCall = async (app: App, path: string, body?: unknown, method = "POST") => {
  const res = await app.request(`${BASE}${path}`, { method, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  return { status: res.status, body: (await res.json()) as any };
};

/** A tenant with one workspace (`ws`) holding hello.txt, made with an API key. */
async function tenantWith(app: App, id: string, ws: string) {
  expect((await adminCall(app, "/v1/admin/tenants", { id })).status).toBe(201);
  const key = (await adminCall(app, `/v1/admin/tenants/${id}/keys`, {})).body.key as string;
  const h = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  expect((await app.request(`${BASE}/v1/workspaces`, { method: "POST", headers: h, body: JSON.stringify({ id: ws }) })).status).toBe(201);
  const body = `hello from ${id}\n`;
  const put = await app.request(`${BASE}/v1/workspaces/${ws}/files/hello.txt`, { method: "PUT", headers: { authorization: h.authorization, "content-length": String(body.length) }, body });
  expect(put.status, await put.clone().text()).toBe(201);
  return key;
}

const as = (app: App, token: string) => async (path: string, init: RequestInit = {}) => {
  const res = await app.request(`${BASE}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, ...(init.body ? { "content-type": "application/json" } : {}), ...(init.headers as Record<string, string> | undefined) } });
  const text = await res.text();
  return { status: res.status, body: text.startsWith("{") ? (JSON.parse(text) as any) : text, challenge: res.headers.get("www-authenticate") };
};

let issuer: LocalIssuer;
let app: App;

beforeAll(async () => {
  issuer = await startLocalIssuer({ audience: BASE });
  app = build();
  await tenantWith(app, "acme", "main");
  await tenantWith(app, "bravo", "bonly");
  // acme trusts the local issuer; its jwks_uri is discovered from the issuer's metadata.
  const put = await adminCall(app, "/v1/admin/tenants/acme/oauth", { issuers: [{ issuer: issuer.issuer }] }, "PUT");
  expect(put.status, JSON.stringify(put.body)).toBe(200);
  expect(put.body).toMatchObject({ tenant: "acme", resource: BASE, issuers: [{ issuer: issuer.issuer, audience: BASE, jwks_uri: issuer.jwksUri }] });
});
afterAll(async () => {
  await issuer?.close();
});

describe("Protected Resource Metadata (RFC 9728) and the Bearer challenge", () => {
  it("names the resource, our scopes and the header method; with ?tenant= the tenant's authorization servers; per MCP URL too", async () => {
    const root = (await (await app.request(`${BASE}/.well-known/oauth-protected-resource`)).json()) as any;
    expect(root).toMatchObject({ resource: BASE, scopes_supported: [...SCOPES], bearer_methods_supported: ["header"] });
    expect(root.authorization_servers).toBeUndefined();
    const acme = (await (await app.request(`${BASE}/.well-known/oauth-protected-resource?tenant=acme`)).json()) as any;
    expect(acme).toMatchObject({ resource: `${BASE}?tenant=acme`, authorization_servers: [issuer.issuer] });
    const mcp = (await (await app.request(`${BASE}/.well-known/oauth-protected-resource/v1/workspaces/main/mcp?tenant=acme`)).json()) as any;
    expect(mcp).toMatchObject({ resource: `${BASE}/v1/workspaces/main/mcp?tenant=acme`, authorization_servers: [issuer.issuer] });
    // A tenant that trusts no issuer (or does not exist) is answered alike: no servers.
    for (const t of ["bravo", "nobody"]) expect(((await (await app.request(`${PRM}?tenant=${t}`)).json()) as any).authorization_servers).toBeUndefined();
    expect((await app.request(`${PRM}/v1/workspaces/main/files/x`)).status).toBe(404);
  });

  it("401 without a credential points at the metadata of the resource asked for (the MCP URL's own, with its ?tenant=)", async () => {
    const plain = await app.request(`${BASE}/v1/workspaces`);
    expect(plain.status).toBe(401);
    expect(plain.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${PRM}"`);
    const mcp = await app.request(`${BASE}/v1/workspaces/main/mcp?tenant=acme`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(mcp.status).toBe(401);
    expect(mcp.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${PRM}/v1/workspaces/main/mcp?tenant=acme"`);
    // A bad API key: the same, with invalid_token.
    const bad = await as(app, "tsk_nope_nope")("/v1/workspaces");
    expect(bad.challenge).toBe(`Bearer resource_metadata="${PRM}", error="invalid_token"`);
  });
});

describe("a valid access token acts as its tenant", () => {
  it("on the HTTP routes: lists, reads and writes the tenant's workspace with the token's scopes", async () => {
    const call = as(app, await issuer.token({ aud: BASE }));
    const list = await call("/v1/workspaces");
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    expect(list.body.workspaces.map((w: { id: string }) => w.id)).toEqual(["main"]);
    const read = await call("/v1/workspaces/main/tools/read", { method: "POST", body: JSON.stringify({ file_path: "hello.txt" }) });
    expect(read.status).toBe(200);
    expect(read.body.output).toContain("hello from acme");
    const write = await call("/v1/workspaces/main/tools/write", { method: "POST", body: JSON.stringify({ file_path: "by-token.txt", content: "x\n" }) });
    expect(write.status, JSON.stringify(write.body)).toBe(200);
    // API keys keep working beside tokens.
    const keyList = await as(app, (await adminCall(app, "/v1/admin/tenants/acme/keys", {})).body.key)("/v1/workspaces");
    expect(keyList.status).toBe(200);
  });

  it("on MCP, through the official client: tools/list by the token's scopes, tools/call", async () => {
    const connect = async (token: string) => {
      const client = new Client({ name: "oauth-test", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${BASE}/v1/workspaces/main/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } }, fetch: async (input, init) => app.request(String(input), init as RequestInit) }));
      return client;
    };
    const client = await connect(await issuer.token());
    const r = await client.callTool({ name: "read", arguments: { file_path: "hello.txt" } });
    expect(JSON.stringify(r.content)).toContain("hello from acme");
    await client.close();
    // A read-only token lists no writing tool.
    const ro = await connect(await issuer.token({ scope: "read" }));
    const names = (await ro.listTools()).tools.map((t) => t.name);
    expect(names).toContain("read");
    expect(names).not.toContain("write");
    await ro.close();
  });

  it("a token for the MCP URL itself (RFC 8707 resource) works there and nowhere else", async () => {
    const mcpUrl = `${BASE}/v1/workspaces/main/mcp`;
    const token = await issuer.token({ aud: mcpUrl });
    const init = { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }) };
    expect((await app.request(mcpUrl, init)).status).toBe(200);
    const other = await as(app, token)("/v1/workspaces");
    expect(other.status).toBe(401);
    expect(other.challenge).toContain('error="invalid_token"');
  });
});

describe("refused tokens: status, code and WWW-Authenticate", () => {
  const refused = async (token: string, path = "/v1/workspaces") => {
    const r = await as(app, token)(path);
    expect(r.status, JSON.stringify(r.body)).toBe(401);
    expect(r.body.error.code).toBe("UNAUTHORIZED");
    expect(r.challenge).toBe(`Bearer resource_metadata="${PRM}", error="invalid_token"`);
    return r.body.error.message as string;
  };

  it("wrong audience, wrong issuer, expired, not yet valid, malformed", async () => {
    expect(await refused(await issuer.token({ aud: "https://someone-else.example" }))).toMatch(/audience/);
    expect(await refused(await issuer.token({ iss: "https://unknown-issuer.example/" }))).toMatch(/No tenant trusts the issuer/);
    const now = Math.floor(Date.now() / 1000);
    expect(await refused(await issuer.token({ exp: now - 120 }))).toMatch(/expired/);
    // Within the clock skew (60 s) an expiry is not yet enforced; nbf likewise.
    expect((await as(app, await issuer.token({ exp: now - 20 }))("/v1/workspaces")).status).toBe(200);
    expect(await refused(await issuer.token({ nbf: now + 600 }))).toMatch(/"nbf"/);
    expect(await refused("eyJhbGciOiJSUzI1NiJ9.bm90IGpzb24.c2ln")).toMatch(/Malformed/);
    // A token without exp is refused: it would never end.
    expect(await refused(await issuer.token({ exp: undefined }))).toMatch(/"exp"/);
  });

  it("alg none, and HS256 keyed with the issuer's public key, are refused; so is a key the issuer does not hold", async () => {
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: issuer.issuer, aud: BASE, sub: "x", scope: "read write", exp: now + 300 };
    expect(await refused(`${b64({ alg: "none", typ: "JWT" })}.${b64(claims)}.`)).toMatch(/"none"/);
    const { createHmac } = await import("node:crypto");
    const head = `${b64({ alg: "HS256", kid: issuer.current.kid })}.${b64(claims)}`;
    const hs = createHmac("sha256", JSON.stringify(issuer.current.publicJwk)).update(head).digest("base64url");
    expect(await refused(`${head}.${hs}`)).toMatch(/HS256/);
    // Signed by a key of our own making with the issuer's kid: the signature does not verify.
    const forged = await signToken(await newSigningKey(), claims, issuer.current.kid);
    expect(await refused(forged)).toMatch(/signature/);
  });

  it("a missing scope: 403 with error=\"insufficient_scope\" and the scope needed", async () => {
    const r = await as(app, await issuer.token({ scope: "read" }))("/v1/workspaces/main/tools/write", { method: "POST", body: JSON.stringify({ file_path: "no.txt", content: "x" }) });
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe("PERMISSION_DENIED");
    expect(r.challenge).toBe(`Bearer resource_metadata="${PRM}", error="insufficient_scope", scope="write"`);
  });

  it("rotated keys: an unknown kid refetches the JWKS, at most once per cooldown", async () => {
    const rotating = await startLocalIssuer();
    try {
      const a = build();
      await tenantWith(a, "rot", "main");
      expect((await adminCall(a, "/v1/admin/tenants/rot/oauth", { issuers: [{ issuer: rotating.issuer, jwks_uri: rotating.jwksUri }] }, "PUT")).status).toBe(200);
      expect((await as(a, await rotating.token({ aud: BASE }))("/v1/workspaces")).status).toBe(200);
      const before = rotating.fetches;
      expect((await as(a, await rotating.token({ aud: BASE }))("/v1/workspaces")).status).toBe(200);
      expect(rotating.fetches).toBe(before); // cached
      await rotating.rotate();
      const fresh = await rotating.token({ aud: BASE });
      // Within the cooldown of the last fetch: no refetch, refused.
      expect((await as(a, fresh)("/v1/workspaces")).status).toBe(401);
      expect(rotating.fetches).toBe(before);
      clock += 31_000;
      expect((await as(a, fresh)("/v1/workspaces")).status).toBe(200);
      expect(rotating.fetches).toBe(before + 1);
      // A stream of made-up key ids costs at most one fetch per cooldown.
      for (let i = 0; i < 5; i++) expect((await as(a, await rotating.token({ aud: BASE }, { kid: `made-up-${i}` }))("/v1/workspaces")).status).toBe(401);
      expect(rotating.fetches).toBe(before + 1);
    } finally {
      await rotating.close();
    }
  });
});

describe("a token never reaches another tenant's data", () => {
  it("tenant A's token against B's workspace: not found; its listing shows only A's", async () => {
    const call = as(app, await issuer.token());
    expect((await call("/v1/workspaces/bonly/files/hello.txt")).status).toBe(404);
    expect((await call("/v1/workspaces/bonly/tools/read", { method: "POST", body: JSON.stringify({ file_path: "hello.txt" }) })).status).toBe(404);
    // ?tenant= naming another tenant does not move the token there.
    expect((await call("/v1/workspaces?tenant=bravo")).status).toBe(401);
  });

  it("an issuer trusted by two tenants: one audience each, tokens go by aud, and an ambiguous token is refused", async () => {
    const same = await adminCall(app, "/v1/admin/tenants/bravo/oauth", { issuers: [{ issuer: issuer.issuer, jwks_uri: issuer.jwksUri }] }, "PUT");
    expect(same.status).toBe(409);
    expect(same.body.error.code).toBe("ALREADY_EXISTS");
    const own = `${BASE}/tenants/bravo`;
    expect((await adminCall(app, "/v1/admin/tenants/bravo/oauth", { issuers: [{ issuer: issuer.issuer, audience: own, jwks_uri: issuer.jwksUri }] }, "PUT")).status).toBe(200);
    try {
      const bravo = await as(app, await issuer.token({ aud: own }))("/v1/workspaces");
      expect(bravo.body.workspaces.map((w: { id: string }) => w.id)).toEqual(["bonly"]);
      const acme = await as(app, await issuer.token({ aud: BASE }))("/v1/workspaces");
      expect(acme.body.workspaces.map((w: { id: string }) => w.id)).toEqual(["main"]);
      // Both audiences in one token: it names no single tenant.
      expect((await as(app, await issuer.token({ aud: [BASE, own] }))("/v1/workspaces")).status).toBe(401);
      // A token for an MCP URL matches both tenants' trust of the issuer: refused, unless ?tenant= picks one.
      const mcpUrl = `${BASE}/v1/workspaces/main/mcp`;
      const list = (url: string, token: string) => app.request(url, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }) });
      expect((await list(mcpUrl, await issuer.token({ aud: mcpUrl }))).status).toBe(401);
      expect((await list(`${mcpUrl}?tenant=acme`, await issuer.token({ aud: `${mcpUrl}?tenant=acme` }))).status).toBe(200);
    } finally {
      expect((await adminCall(app, "/v1/admin/tenants/bravo/oauth", undefined, "DELETE")).body).toEqual({ deleted: true });
    }
    // Deleting bravo's trust leaves acme's claim alone.
    expect((await as(app, await issuer.token({ aud: BASE }))("/v1/workspaces")).status).toBe(200);
  });
});

describe("the issuer's URLs go through the SSRF guard", () => {
  it("without the test-only loopback switch: http refused, loopback and metadata addresses BLOCKED", async () => {
    const strict = build({ webFetch: { fetcher: nodeFetcher() } });
    expect((await adminCall(strict, "/v1/admin/tenants", { id: "strict" })).status).toBe(201);
    const put = (body: unknown) => adminCall(strict, "/v1/admin/tenants/strict/oauth", body, "PUT");
    const http = await put({ issuers: [{ issuer: "http://login.example.com/", jwks_uri: "https://login.example.com/jwks" }] });
    expect(http.status).toBe(400);
    expect(http.body.error.message).toMatch(/not https/);
    for (const jwks of ["https://127.0.0.1/jwks.json", "https://169.254.169.254/latest/meta-data", "https://[::1]/jwks"]) {
      const r = await put({ issuers: [{ issuer: "https://login.example.com/", jwks_uri: jwks }] });
      expect(r.status, jwks).toBe(403);
      expect(r.body.error.code).toBe("BLOCKED");
    }
    // Discovery reaches only public hosts too.
    expect((await put({ issuers: [{ issuer: "https://127.0.0.1:9/" }] })).body.error.code).toBe("BLOCKED");
    // The loopback switch lets 127.0.0.1 through, never the metadata service.
    const r = await adminCall(app, "/v1/admin/tenants/bravo/oauth", { issuers: [{ issuer: issuer.issuer, audience: "x", jwks_uri: "http://169.254.169.254/jwks" }] }, "PUT");
    expect(r.body.error.code).toBe("BLOCKED");
  });

  it("a jwks_uri that redirects to the metadata service: refused at the hop, the token answered 503 (never fetched)", async () => {
    const moved = await startLocalIssuer();
    try {
      expect((await adminCall(app, "/v1/admin/tenants", { id: "moved" })).status).toBe(201);
      const jwks = `${moved.issuer}/redirect?to=${encodeURIComponent("http://169.254.169.254/latest/meta-data/")}`;
      expect((await adminCall(app, "/v1/admin/tenants/moved/oauth", { issuers: [{ issuer: moved.issuer, jwks_uri: jwks }] }, "PUT")).status).toBe(200);
      const r = await as(app, await moved.token({ aud: BASE }))("/v1/workspaces");
      expect(r.status).toBe(503);
      expect(r.body.error).toMatchObject({ code: "UNAVAILABLE", details: { reason: "jwks_unavailable", cause: "BLOCKED" } });
      expect(r.body.error.message).toMatch(/169\.254\.169\.254/);
      // A failed read is not retried within the cooldown: the issuer's host sees no second request.
      const hits = moved.requests;
      expect((await as(app, await moved.token({ aud: BASE }))("/v1/workspaces")).status).toBe(503);
      expect(moved.requests).toBe(hits);
    } finally {
      await moved.close();
    }
  });

  it("discovery checks the metadata names the issuer; deleting the trust stops its tokens", async () => {
    const other = await startLocalIssuer({ path: "/realm" });
    try {
      expect((await adminCall(app, "/v1/admin/tenants", { id: "disc" })).status).toBe(201);
      const wrong = await adminCall(app, "/v1/admin/tenants/disc/oauth", { issuers: [{ issuer: `${other.issuer}/` }] }, "PUT");
      expect(wrong.status).toBe(400);
      expect(wrong.body.error.message).toMatch(/names the issuer/);
      const ok = await adminCall(app, "/v1/admin/tenants/disc/oauth", { issuers: [{ issuer: other.issuer, scope_map: { "toolshed.read": ["read"] } }] }, "PUT");
      expect(ok.status, JSON.stringify(ok.body)).toBe(200);
      expect(ok.body.issuers[0].jwks_uri).toBe(other.jwksUri);
      // Mapped scopes: only the mapped names count.
      const mapped = as(app, await other.token({ aud: BASE, scope: "toolshed.read write" }));
      expect((await mapped("/v1/workspaces")).status).toBe(200);
      expect((await mapped("/v1/workspaces", { method: "POST", body: JSON.stringify({ id: "nope" }) })).status).toBe(403);
      const prm = (await (await app.request(`${PRM}?tenant=disc`)).json()) as any;
      expect(prm.scopes_supported).toEqual(["toolshed.read"]);
      expect((await adminCall(app, "/v1/admin/tenants/disc/oauth", undefined, "DELETE")).body).toEqual({ deleted: true });
      expect((await as(app, await other.token({ aud: BASE }))("/v1/workspaces")).status).toBe(401);
    } finally {
      await other.close();
    }
  });
});

/**
 * OAuth as a resource server inside workerd (docs/oauth.md), where it runs in production: jose's
 * WebCrypto verification (RS256 and ES256), the JWKS cache (refetch on an unknown key id, at most
 * once per cooldown), the refusals, the Protected Resource Metadata and the Bearer challenge, over the
 * real app with local R2 and KV. A Worker test cannot start an HTTP server, so the issuer's documents
 * come from a WebFetcher that serves them from memory (the transport the JWKS cache is given); the same
 * code over real HTTP, against a local issuer on 127.0.0.1, is test/lib/api/oauth.node.test.ts.
 */
import { describe, expect, it } from "vitest";
import { exportJWK, generateKeyPair, SignJWT, type JWK, type CryptoKey } from "jose";
import { JwksCache } from "../../../../lib/api/auth/jwks.js";
import { mappedScopes } from "../../../../lib/api/auth/oauth-config.js";
import { metadataUrl, resourceBase, resourcePath, resourceUrl } from "../../../../lib/api/auth/resource.js";
import type { WebFetcher } from "../../../../lib/tools/web/transport.js";
import { admin, testApp } from "../../../helpers.js";
import { randomId } from "../../../../lib/shared/hash.js";

const BASE = "https://tools.example";
const ISSUER = "http://127.0.0.1:9/realm";
const JWKS = "http://127.0.0.1:9/realm/jwks.json";

interface Key {
  kid: string;
  alg: "RS256" | "ES256";
  priv: CryptoKey;
  jwk: JWK;
}
async function newKey(alg: "RS256" | "ES256"): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const kid = `${alg}-${randomId(6)}`;
  return { kid, alg, priv: privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg } };
}

/** The issuer's JWKS, served from memory: `keys` is what it publishes now; `fetches` counts reads. */
function issuerTransport() {
  const state = { keys: [] as JWK[], fetches: 0 };
  const fetcher: WebFetcher = {
    check: async () => {},
    fetch: async (url) => {
      if (url.href !== JWKS) return new Response("not found", { status: 404 });
      state.fetches++;
      return new Response(JSON.stringify({ keys: state.keys }), { headers: { "content-type": "application/json" } });
    },
  };
  return { state, fetcher };
}

const sign = (key: Key, claims: Record<string, unknown>, kid = key.kid) => {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: ISSUER, aud: BASE, sub: "u1", scope: "read", iat: now, exp: now + 300, ...claims }).setProtectedHeader({ alg: key.alg, kid }).sign(key.priv);
};

async function setup() {
  let clock = Date.now();
  const { state, fetcher } = issuerTransport();
  const app = testApp({ syncUrl: BASE, webFetch: { fetcher, allowLoopback: true }, oauthKeys: new JwksCache({ now: () => clock }) });
  const tenant = `t-oauth-${randomId(6)}`;
  expect((await admin(app, "/v1/admin/tenants", { id: tenant })).status).toBe(201);
  // One issuer per deployment's tenant here: its audience is this tenant's own.
  const audience = `${BASE}/tenants/${tenant}`;
  const put = await admin(app, `/v1/admin/tenants/${tenant}/oauth`, { issuers: [{ issuer: ISSUER, audience, jwks_uri: JWKS }] }, "PUT");
  expect(put.status, JSON.stringify(put.body)).toBe(200);
  const list = async (token: string) => {
    const res = await app.request(`${BASE}/v1/workspaces`, { headers: { authorization: `Bearer ${token}` } });
    return { status: res.status, body: (await res.json()) as any, challenge: res.headers.get("www-authenticate") };
  };
  return { app, tenant, audience, state, list, tick: (ms: number) => void (clock += ms) };
}

describe("resource URLs (RFC 9728)", () => {
  it("the API's and each MCP URL's, with ?tenant=, on the public URL when one is set", () => {
    const u = new URL("http://evil.example/v1/workspaces/main/mcp?tenant=acme&x=1");
    expect(resourceBase(BASE + "/", u)).toBe(BASE);
    expect(resourceBase(undefined, u)).toBe("http://evil.example");
    expect(resourcePath("/v1/workspaces/main/mcp")).toBe("/v1/workspaces/main/mcp");
    expect(resourcePath("/v1/workspaces/main/files/mcp/x")).toBe("");
    expect(resourcePath("/v1/workspaces")).toBe("");
    expect(resourceUrl(BASE, u)).toBe(`${BASE}/v1/workspaces/main/mcp?tenant=acme`);
    expect(metadataUrl(BASE, u)).toBe(`${BASE}/.well-known/oauth-protected-resource/v1/workspaces/main/mcp?tenant=acme`);
    expect(metadataUrl(BASE, new URL("http://x/v1/workspaces"))).toBe(`${BASE}/.well-known/oauth-protected-resource`);
  });

  it("scopes: ours by name without a map; only mapped names with one", () => {
    expect(mappedScopes(["read", "openid", "write", "admin"], undefined)).toEqual(["read", "write"]);
    expect(mappedScopes(["tools:rw", "read"], { "tools:rw": ["read", "write"] })).toEqual(["read", "write"]);
    expect(mappedScopes(["read"], { "tools:rw": ["read", "write"] })).toEqual([]);
  });
});

describe("access tokens in workerd", () => {
  it("RS256 and ES256 tokens of the trusted issuer act as its tenant; the JWKS is read once", async () => {
    const s = await setup();
    const rs = await newKey("RS256");
    const es = await newKey("ES256");
    s.state.keys = [rs.jwk, es.jwk];
    for (const k of [rs, es]) {
      const r = await s.list(await sign(k, { aud: s.audience }));
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.workspaces).toEqual([]);
    }
    expect(s.state.fetches).toBe(1);
  });

  it("a rotated key: refetched on its unknown kid once the cooldown (30 s) has passed, not before", async () => {
    const s = await setup();
    const old = await newKey("ES256");
    s.state.keys = [old.jwk];
    expect((await s.list(await sign(old, { aud: s.audience }))).status).toBe(200);
    const next = await newKey("ES256");
    s.state.keys = [next.jwk];
    const token = await sign(next, { aud: s.audience });
    const early = await s.list(token);
    expect(early.status).toBe(401);
    expect(early.body.error.details.reason).toBe("unknown_key");
    expect(s.state.fetches).toBe(1);
    s.tick(30_001);
    expect((await s.list(token)).status).toBe(200);
    expect(s.state.fetches).toBe(2);
    // The old key left the set: its tokens stop.
    expect((await s.list(await sign(old, { aud: s.audience }))).status).toBe(401);
    // After max age (10 min) the set is read again whatever the kid.
    s.tick(10 * 60_000);
    expect((await s.list(token)).status).toBe(200);
    expect(s.state.fetches).toBe(3);
  });

  it("refusals: alg none, wrong audience, expired, another tenant named, and the challenge on each", async () => {
    const s = await setup();
    const k = await newKey("RS256");
    s.state.keys = [k.jwk];
    const b64 = (o: unknown) => btoa(JSON.stringify(o)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
    const none = `${b64({ alg: "none" })}.${b64({ iss: ISSUER, aud: s.audience, exp: Math.floor(Date.now() / 1000) + 60 })}.`;
    const cases: [string, RegExp][] = [
      [none, /"none"/],
      [await sign(k, { aud: BASE }), /audience/],
      [await sign(k, { aud: s.audience, exp: Math.floor(Date.now() / 1000) - 3600 }), /expired/],
    ];
    for (const [token, message] of cases) {
      const r = await s.list(token);
      expect(r.status).toBe(401);
      expect(r.body.error.message).toMatch(message);
      expect(r.challenge).toBe(`Bearer resource_metadata="${BASE}/.well-known/oauth-protected-resource", error="invalid_token"`);
    }
    const elsewhere = await s.app.request(`${BASE}/v1/workspaces?tenant=someone-else`, { headers: { authorization: `Bearer ${await sign(k, { aud: s.audience })}` } });
    expect(elsewhere.status).toBe(401);
  });

  it("a token without the scope a route needs: 403 insufficient_scope naming it", async () => {
    const s = await setup();
    const k = await newKey("ES256");
    s.state.keys = [k.jwk];
    const res = await s.app.request(`${BASE}/v1/workspaces`, { method: "POST", headers: { authorization: `Bearer ${await sign(k, { aud: s.audience, scope: "read" })}`, "content-type": "application/json" }, body: JSON.stringify({ id: "w1" }) });
    expect(res.status).toBe(403);
    expect(res.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${BASE}/.well-known/oauth-protected-resource", error="insufficient_scope", scope="write"`);
  });

  it("a 403 the handler itself answers (a tenant-wide route, a key limited to some workspaces) carries the challenge too", async () => {
    const s = await setup();
    const limited = await admin(s.app, `/v1/admin/tenants/${s.tenant}/keys`, { scopes: ["read", "manage"], workspaces: ["w-*"] });
    const res = await s.app.request(`${BASE}/v1/audit`, { headers: { authorization: `Bearer ${limited.body.key}` } });
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error.details.refused_by).toBe("key_workspaces");
    expect(res.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${BASE}/.well-known/oauth-protected-resource"`);
  });

  it("the metadata of the tenant's MCP URL names its issuer", async () => {
    const s = await setup();
    const res = await s.app.request(`${BASE}/.well-known/oauth-protected-resource/v1/workspaces/main/mcp?tenant=${s.tenant}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(await res.json()).toMatchObject({ resource: `${BASE}/v1/workspaces/main/mcp?tenant=${s.tenant}`, authorization_servers: [ISSUER], bearer_methods_supported: ["header"] });
  });
});

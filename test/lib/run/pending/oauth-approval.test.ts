/**
 * A held call made with an OAuth access token (docs/oauth.md: a valid token acts like an API key of
 * its tenant, on every route and every door) runs once a human approves it. An OAuth principal has no
 * key record to look up again (lib/api/auth/keys.ts callerNow): the approved call runs with the
 * scopes its token had when the call was held, and the principal still never approves its own call.
 * Before, the lookup by key id found no record and every such approval ran nothing, telling the agent
 * its key "was revoked". Real local R2/KV; the issuer's key set is served from memory, as in
 * test/lib/api/auth/oauth.test.ts.
 */
import { describe, expect, it } from "vitest";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { JwksCache } from "../../../../lib/api/auth/jwks.js";
import type { WebFetcher } from "../../../../lib/tools/web/transport.js";
import { randomId } from "../../../../lib/shared/hash.js";
import { admin, testApp, testDeps, type TestApp } from "../../../helpers.js";
import { keyStands } from "../../../../lib/api/auth/keys.js";
import { approverKey } from "./approval-helpers.js";

const BASE = "https://tools.example";
const ISSUER = "http://127.0.0.1:9/realm";
const JWKS = "http://127.0.0.1:9/realm/jwks.json";

async function oauthTenant(policy: unknown) {
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256" };
  const fetcher: WebFetcher = { check: async () => {}, fetch: async () => new Response(JSON.stringify({ keys: [jwk] }), { headers: { "content-type": "application/json" } }) };
  const app: TestApp = testApp({ syncUrl: BASE, webFetch: { fetcher, allowLoopback: true }, oauthKeys: new JwksCache() });
  const tenant = `t-oa-${randomId(6)}`;
  expect((await admin(app, "/v1/admin/tenants", { id: tenant })).status).toBe(201);
  const audience = `${BASE}/tenants/${tenant}`;
  expect((await admin(app, `/v1/admin/tenants/${tenant}/oauth`, { issuers: [{ issuer: ISSUER, audience, jwks_uri: JWKS }] }, "PUT")).status).toBe(200);
  expect((await admin(app, `/v1/admin/tenants/${tenant}/policy`, policy, "PUT")).status).toBe(200);
  const token = (sub: string, scope: string) => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ iss: ISSUER, aud: audience, sub, scope, iat: now, exp: now + 300 }).setProtectedHeader({ alg: "ES256", kid: "k1" }).sign(privateKey);
  };
  const call = async (bearer: string, path: string, body: unknown) => {
    const res = await app.request(`${BASE}${path}`, { method: "POST", headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as any };
  };
  return { app, tenant, audience, token, call };
}

describe("a call held for an OAuth principal", () => {
  it("runs when an approver approves it, with the scopes the token had; the agent reads the outcome with pending_result", async () => {
    const t = await oauthTenant({ gate: [{ tool: "write" }] });
    const agent = await t.token("agent", "read write");
    expect((await t.call(agent, "/v1/workspaces", { id: "w1" })).status).toBe(201);
    const held = await t.call(agent, "/v1/workspaces/w1/tools/write", { file_path: "a.txt", content: "hi" });
    expect(held.status, JSON.stringify(held.body)).toBe(202);
    const id = held.body.error.details.pending_id as string;

    const approver = await approverKey(t.app, t.tenant);
    const a = await t.call(approver, `/v1/workspaces/w1/pending/${id}`, { approved: true, note: "fine" });
    expect(a.status).toBe(200);
    expect(a.body.outcome, JSON.stringify(a.body.outcome)).toMatchObject({ ok: true });
    expect(JSON.stringify(a.body)).not.toContain("revoked");

    // A new token of the same principal (the first one may have expired by the time a human answers) reads the outcome.
    const later = await t.token("agent", "read");
    const r = await t.call(later, "/v1/workspaces/w1/tools/pending_result", { pending_id: id });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.output).toContain("A human approved this write call as you asked it. Their note: fine");
    const file = await t.app.request(`${BASE}/v1/workspaces/w1/files/a.txt`, { headers: { authorization: `Bearer ${later}` } });
    expect(await file.text()).toBe("hi");
  });

  it("another token of the same principal cannot approve it (the same caller); another principal holding approve can, and it runs", async () => {
    const t = await oauthTenant({ gate: [{ tool: "write" }] });
    const agent = await t.token("agent", "read write approve");
    expect((await t.call(agent, "/v1/workspaces", { id: "w1" })).status).toBe(201);
    const id = (await t.call(agent, "/v1/workspaces/w1/tools/write", { file_path: "a.txt", content: "one" })).body.error.details.pending_id as string;
    const again = await t.token("agent", "read write approve");
    const self = await t.call(again, `/v1/workspaces/w1/pending/${id}`, { approved: true });
    expect(self.status).toBe(403);
    expect(self.body.error.details.reason).toBe("self_approval");
    const human = await t.token("human", "read approve");
    const a = await t.call(human, `/v1/workspaces/w1/pending/${id}`, { approved: true });
    expect(a.status, JSON.stringify(a.body)).toBe(200);
    expect(a.body.outcome, JSON.stringify(a.body.outcome)).toMatchObject({ ok: true, data: { file_path: "a.txt" } });
  });

  it("runs nothing once approved when the tenant stopped trusting the token's issuer meanwhile (config changed or deleted), and says why", async () => {
    for (const change of ["replaced", "deleted"] as const) {
      const t = await oauthTenant({ gate: [{ tool: "write" }] });
      const agent = await t.token("agent", "read write");
      expect((await t.call(agent, "/v1/workspaces", { id: "w1" })).status).toBe(201);
      const id = (await t.call(agent, "/v1/workspaces/w1/tools/write", { file_path: "a.txt", content: "hi" })).body.error.details.pending_id as string;
      const approver = await approverKey(t.app, t.tenant);
      const other = { issuers: [{ issuer: "http://127.0.0.1:9/other", audience: t.audience, jwks_uri: "http://127.0.0.1:9/other/jwks.json" }] };
      const gone = change === "replaced" ? await admin(t.app, `/v1/admin/tenants/${t.tenant}/oauth`, other, "PUT") : await admin(t.app, `/v1/admin/tenants/${t.tenant}/oauth`, undefined, "DELETE");
      expect(gone.status, JSON.stringify(gone.body)).toBe(200);

      const a = await t.call(approver, `/v1/workspaces/w1/pending/${id}`, { approved: true });
      expect(a.status, JSON.stringify(a.body)).toBe(200);
      expect(a.body.outcome, change).toMatchObject({ ok: false, code: "PERMISSION_DENIED", details: { reason: "key_revoked" } });
      expect(a.body.outcome.message).toContain("OAuth principal");
      expect(a.body.outcome.message).toContain("no longer trusted");
      const file = await t.app.request(`${BASE}/v1/workspaces/w1/files/a.txt`, { headers: { authorization: `Bearer ${approver}` } });
      expect(file.status, change).toBe(404);
    }
  });
});

describe("whether an OAuth principal stands (a live sandbox's polls, a background subagent's calls)", () => {
  it("stands while its tenant trusts its issuer, and no longer once the issuer is removed; an id of another shape never does", async () => {
    const t = await oauthTenant({});
    const agent = await t.token("agent", "read write");
    expect((await t.call(agent, "/v1/workspaces", { id: "w1" })).status).toBe(201);
    const manager = (await admin(t.app, `/v1/admin/tenants/${t.tenant}/keys`, { name: "ops", scopes: ["read", "manage"] })).body.key as string;
    const audit = (await (await t.app.request(`${BASE}/v1/audit`, { headers: { authorization: `Bearer ${manager}` } })).json()) as any;
    const keyId = audit.entries.find((e: any) => String(e.key_id).startsWith("oauth_"))?.key_id as string; // the workspace's create, by the token
    expect(keyId, JSON.stringify(audit)).toMatch(/^oauth_[0-9a-f]{8}_[0-9a-f]{20}$/);
    const stands = keyStands(testDeps());
    expect(await stands(t.tenant, keyId)).toBe(true);
    expect(await stands(`${t.tenant}x`, keyId)).toBe(false); // another tenant trusts nothing under that id
    expect(await stands(t.tenant, "oauth_0123456789abcdef0123")).toBe(false); // an id without its issuer's tag
    expect((await admin(t.app, `/v1/admin/tenants/${t.tenant}/oauth`, undefined, "DELETE")).status).toBe(200);
    expect(await stands(t.tenant, keyId)).toBe(false);
  });
});

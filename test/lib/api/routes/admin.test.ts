/** Admin API: the bearer token, tenants, API keys (shown once, hashed, revocable). */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { KEY_PREFIX } from "../../../../lib/api/auth/keys.js";
import { randomId, sha256Hex } from "../../../../lib/shared/hash.js";
import { ID_PATTERN } from "../../../../lib/layout/paths.js";
import { ADMIN, admin, newTenant, testApp, type TestApp } from "../../../helpers.js";

const tenantId = () => `t-${randomId(8)}`;

async function raw(app: TestApp, path: string, init: RequestInit = {}) {
  const res = await app.request(path, init);
  return { status: res.status, body: (await res.json()) as any };
}

async function newTenantWithKey(app: TestApp, keyBody: unknown = {}) {
  const id = tenantId();
  expect((await admin(app, "/v1/admin/tenants", { id })).status).toBe(201);
  const k = await admin(app, `/v1/admin/tenants/${id}/keys`, keyBody);
  expect(k.status).toBe(201);
  return { id, key: k.body.key as string, keyId: k.body.key_id as string, body: k.body };
}

const listWorkspaces = (app: TestApp, key: string) => app.request("/v1/workspaces", { headers: { authorization: `Bearer ${key}` } });

describe("admin token", () => {
  const app = testApp();
  const routes: [string, string][] = [
    ["POST", "/v1/admin/tenants"],
    ["GET", "/v1/admin/tenants/acme"],
    ["POST", "/v1/admin/tenants/acme/keys"],
    ["DELETE", "/v1/admin/tenants/acme/keys/abc"],
  ];

  it("no token → 401 UNAUTHORIZED on every admin route", async () => {
    for (const [method, path] of routes) {
      const r = await raw(app, path, { method, headers: { "content-type": "application/json" }, ...(method === "POST" ? { body: "{}" } : {}) });
      expect(r.status, `${method} ${path}`).toBe(401);
      expect(r.body).toMatchObject({ ok: false, error: { code: "UNAUTHORIZED" } });
      expect(r.body.error.message).toMatch(/admin token/i);
    }
  });

  it("a wrong token → 401, whatever it looks like", async () => {
    const tenant = await newTenant(app);
    const wrong = ["nope", `${ADMIN}x`, ADMIN.slice(0, -1), ADMIN.toUpperCase(), tenant.key, " ", `${ADMIN} ${ADMIN}`];
    let n = 0;
    for (const token of wrong) {
      for (const [method, path] of routes) {
        // Each attempt from its own client: repeated failures from one client back off (429, tested in access.test.ts).
        const client = { "cf-connecting-ip": `192.0.2.${n++}` };
        const r = await raw(app, path, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...client }, ...(method === "POST" ? { body: "{}" } : {}) });
        expect(r.status, `${method} ${path} with ${JSON.stringify(token)}`).toBe(401);
        expect(r.body.error.code).toBe("UNAUTHORIZED");
      }
    }
    // Not a bearer token at all.
    for (const header of [ADMIN, `Basic ${btoa(`admin:${ADMIN}`)}`, `Token ${ADMIN}`]) {
      const r = await raw(app, "/v1/admin/tenants", { method: "POST", headers: { authorization: header, "content-type": "application/json" }, body: "{}" });
      expect(r.status, header).toBe(401);
    }
  });

  it("the scheme is case-insensitive", async () => {
    const r = await raw(app, "/v1/admin/tenants", { method: "POST", headers: { authorization: `bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify({ id: tenantId() }) });
    expect(r.status).toBe(201);
  });

  it("without a configured admin token the admin API is off: 403 PERMISSION_DENIED", async () => {
    for (const adminToken of [undefined, ""]) {
      const off = testApp({ adminToken });
      for (const token of [ADMIN, "", "anything"]) {
        for (const [method, path] of routes) {
          const r = await raw(off, path, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, ...(method === "POST" ? { body: "{}" } : {}) });
          expect(r.status, `${method} ${path}`).toBe(403);
          expect(r.body.error.code).toBe("PERMISSION_DENIED");
          expect(r.body.error.message).toMatch(/TOOLSHED_ADMIN_TOKEN/);
        }
      }
    }
  });
});

describe("tenants", () => {
  const app = testApp();

  it("creates a tenant, reads it back, and refuses a duplicate with 409 ALREADY_EXISTS", async () => {
    const id = tenantId();
    const c = await admin(app, "/v1/admin/tenants", { id, name: "Acme Inc." });
    expect(c.status).toBe(201);
    expect(c.body).toMatchObject({ id, name: "Acme Inc." });
    expect(Number.isNaN(Date.parse(c.body.created_at))).toBe(false);

    const g = await admin(app, `/v1/admin/tenants/${id}`, undefined, "GET");
    expect(g.status).toBe(200);
    expect(g.body).toEqual(c.body);

    const dup = await admin(app, "/v1/admin/tenants", { id, name: "other" });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ ok: false, error: { code: "ALREADY_EXISTS" } });
    // The first one is untouched.
    expect((await admin(app, `/v1/admin/tenants/${id}`, undefined, "GET")).body.name).toBe("Acme Inc.");
  });

  it("names the tenant after its id by default, and makes up an id when none is given", async () => {
    const id = tenantId();
    expect((await admin(app, "/v1/admin/tenants", { id })).body.name).toBe(id);
    const anon = await admin(app, "/v1/admin/tenants", {});
    expect(anon.status).toBe(201);
    expect(anon.body.id).toMatch(ID_PATTERN);
    expect(anon.body.id).toMatch(/^tn_/);
    const other = await admin(app, "/v1/admin/tenants", {});
    expect(other.body.id).not.toBe(anon.body.id);
  });

  it("refuses a bad id with 400 INVALID_ARGUMENT", async () => {
    for (const id of ["Acme", "../x", "a/b", "", "-x", "_x", "x".repeat(64), "é", "a b", "a.b", "a\nb"]) {
      const r = await admin(app, "/v1/admin/tenants", { id });
      expect(r.status, JSON.stringify(id)).toBe(400);
      expect(r.body.error.code).toBe("INVALID_ARGUMENT");
    }
    for (const id of [42, null, ["a"], { a: 1 }]) {
      const r = await admin(app, "/v1/admin/tenants", { id });
      expect(r.status, JSON.stringify(id)).toBe(400);
      expect(r.body.error.code).toBe("INVALID_ARGUMENT");
    }
    expect((await admin(app, "/v1/admin/tenants", { id: tenantId(), name: "n".repeat(201) })).status).toBe(400);
  });

  it("names a wrong or missing field, query parameter or body value in plain words", async () => {
    const id = tenantId();
    const wrong = await admin(app, "/v1/admin/tenants", { id: 42 });
    expect(wrong.body.error.message).toMatch(/^Field 'id' must be a string, got 42\. Fix the request and retry/);
    const page = await admin(app, "/v1/admin/tenants?limit=lots", undefined, "GET");
    expect(page.status).toBe(400);
    expect(page.body.error.message).toContain(`Query parameter 'limit' must be a number, got "lots"`);
    await admin(app, "/v1/admin/tenants", { id });
    const scopes = await admin(app, `/v1/admin/tenants/${id}/keys`, { scopes: ["root"] });
    expect(scopes.body.error.message).toMatch(/^Field 'scopes\.0' must be one of "read", .*, got "root"\./);
    const policy = await admin(app, `/v1/admin/tenants/${id}/model`, {}, "PUT");
    expect(policy.status).toBe(400);
    expect(policy.body.error.message).toMatch(/Missing required field '\w+'/);
    expect(policy.body.error.message).not.toMatch(/undefined/);
  });

  it("a loopback model endpoint is refused, naming the model endpoint's base_url (not web_fetch)", async () => {
    const id = tenantId();
    await admin(app, "/v1/admin/tenants", { id });
    for (const base_url of ["http://127.0.0.1:11434/v1", "http://localhost:8000/v1"]) {
      const r = await admin(app, `/v1/admin/tenants/${id}/model`, { base_url, api_key: "sk-test-0123456789abcdef", model: "m" }, "PUT");
      expect(r.status, base_url).toBe(403);
      expect(r.body.error.code).toBe("BLOCKED");
      expect(r.body.error.message).toMatch(/^Refused to use the model endpoint's base_url http:\/\/(127\.0\.0\.1|localhost):\d+\/v1: .*loopback.*\. The model endpoint's base_url must be on the public internet; use the provider's public API URL/);
      expect(r.body.error.message).not.toContain("web_fetch");
      expect(r.body.error.details.subject).toBe("model_endpoint");
    }
    expect((await admin(app, `/v1/admin/tenants/${id}/model`, undefined, "GET")).status).toBe(404);
  });

  it("refuses a malformed JSON body with 400 INVALID_ARGUMENT", async () => {
    const r = await raw(app, "/v1/admin/tenants", { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: "{not json" });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("INVALID_ARGUMENT");
  });

  it("GET of an unknown or malformed tenant → 404 NOT_FOUND", async () => {
    for (const id of [tenantId(), "NOPE", "a..b"]) {
      const r = await admin(app, `/v1/admin/tenants/${id}`, undefined, "GET");
      expect(r.status, id).toBe(404);
      expect(r.body.error.code).toBe("NOT_FOUND");
    }
  });

  it("an unknown tenant's 404 says how to list tenants and create one, on every admin route of a tenant", async () => {
    const id = tenantId();
    for (const [method, path, body] of [
      ["GET", `/v1/admin/tenants/${id}`, undefined],
      ["POST", `/v1/admin/tenants/${id}/keys`, { name: "k" }],
      ["PUT", `/v1/admin/tenants/${id}/model`, { base_url: "https://203.0.113.7/v1", api_key: "sk-test", model: "m" }],
    ] as const) {
      const r = await admin(app, path, body, method);
      expect(r.status, path).toBe(404);
      expect(r.body.error.message, path).toBe(`Tenant not found: ${id}. GET /v1/admin/tenants lists the tenants; POST /v1/admin/tenants {"id":"${id}"} creates it.`);
    }
  });
});

describe("API keys", () => {
  const app = testApp();

  it("creates a key shown once with the tsk_ prefix, default scopes, stored only as a hash", async () => {
    const { id, key, keyId, body } = await newTenantWithKey(app, { name: "ci" });
    expect(key.startsWith(KEY_PREFIX)).toBe(true);
    expect(KEY_PREFIX).toBe("tsk_");
    expect(key).toMatch(/^tsk_[a-z0-9]+_[a-z0-9]{32}$/);
    expect(key).toContain(keyId);
    expect(body).toMatchObject({ tenant: id, name: "ci", scopes: ["read", "write", "execute"] });
    expect(Number.isNaN(Date.parse(body.created_at))).toBe(false);

    // Only the hash is a KV key; no value anywhere in the tenant's key records holds the secret.
    expect(await env.KV.get(`apikey/${await sha256Hex(key)}`)).not.toBeNull();
    const secret = key.slice(key.lastIndexOf("_") + 1);
    for (const prefix of ["apikey/", `keyid/${id}/`, `tenant/${id}`]) {
      let cursor: string | undefined;
      do {
        const page = await env.KV.list({ prefix, ...(cursor ? { cursor } : {}) });
        for (const k of page.keys) {
          expect(k.name).not.toContain(secret);
          const v = (await env.KV.get(k.name)) ?? "";
          expect(v).not.toContain(secret);
        }
        cursor = page.list_complete ? undefined : page.cursor;
      } while (cursor);
    }

    // Nothing shows it again.
    const t = await admin(app, `/v1/admin/tenants/${id}`, undefined, "GET");
    expect(JSON.stringify(t.body)).not.toContain(secret);

    // It works.
    expect((await listWorkspaces(app, key)).status).toBe(200);
  });

  it("each key is different, and each works", async () => {
    const { id, key } = await newTenantWithKey(app);
    const k2 = await admin(app, `/v1/admin/tenants/${id}/keys`, {});
    expect(k2.body.key).not.toBe(key);
    expect(k2.body.key_id).not.toBe((await admin(app, `/v1/admin/tenants/${id}/keys`, {})).body.key_id);
    expect((await listWorkspaces(app, key)).status).toBe(200);
    expect((await listWorkspaces(app, k2.body.key)).status).toBe(200);
  });

  it("a key body is optional", async () => {
    const id = tenantId();
    await admin(app, "/v1/admin/tenants", { id });
    const r = await raw(app, `/v1/admin/tenants/${id}/keys`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}` } });
    expect(r.status).toBe(201);
    expect(r.body.scopes).toEqual(["read", "write", "execute"]);
  });

  it("validates scopes: 400 INVALID_ARGUMENT for unknown, empty or mistyped", async () => {
    const id = tenantId();
    await admin(app, "/v1/admin/tenants", { id });
    for (const scopes of [["root"], [], "read", ["read", "admin"], [1], null]) {
      const r = await admin(app, `/v1/admin/tenants/${id}/keys`, { scopes });
      expect(r.status, JSON.stringify(scopes)).toBe(400);
      expect(r.body.error.code).toBe("INVALID_ARGUMENT");
    }
  });

  it("validates scopes also when the body is sent without a JSON content type (not a 500)", async () => {
    const id = tenantId();
    await admin(app, "/v1/admin/tenants", { id });
    const r = await raw(app, `/v1/admin/tenants/${id}/keys`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}` }, body: JSON.stringify({ scopes: ["root"] }) });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("INVALID_ARGUMENT");
  });

  it("accepts the four scopes and enforces them", async () => {
    const all = await newTenantWithKey(app, { scopes: ["read", "write", "execute", "network"] });
    expect(all.body.scopes).toEqual(["read", "write", "execute", "network"]);

    const ro = await newTenant(app, { scopes: ["read"] });
    expect((await ro.req("/v1/workspaces")).status).toBe(200);
    // A read-only key may not write, by tool or by the raw route.
    const w = await ro.call("write", { file_path: "a.txt", content: "x" });
    expect(w.status).toBe(403);
    expect(w.body).toMatchObject({ ok: false, tool: "write", error: { code: "PERMISSION_DENIED", details: { needed: "write" } } });
    const put = await ro.req(`/v1/workspaces/${ro.ws}/files/a.txt`, { method: "PUT", headers: { "content-length": "1" }, body: "x" });
    expect(put.status).toBe(403);
    expect(((await put.json()) as any).error.code).toBe("PERMISSION_DENIED");
    // It can read.
    expect((await ro.call("read", { file_path: "missing.txt" })).body.error.code).toBe("NOT_FOUND");
  });

  it("a write-only key may not read", async () => {
    const wo = await newTenant(app, { scopes: ["write"] });
    const r = await wo.call("read", { file_path: "a.txt" });
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe("PERMISSION_DENIED");
    const g = await wo.req(`/v1/workspaces/${wo.ws}/files/a.txt`);
    expect(g.status).toBe(403);
  });

  it("a key for an unknown tenant → 404", async () => {
    const r = await admin(app, `/v1/admin/tenants/${tenantId()}/keys`, {});
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe("NOT_FOUND");
  });

  it("revoke → the key stops working (401), other keys go on", async () => {
    const { id, key, keyId } = await newTenantWithKey(app);
    const other = await admin(app, `/v1/admin/tenants/${id}/keys`, {});
    expect((await listWorkspaces(app, key)).status).toBe(200);

    const r = await admin(app, `/v1/admin/tenants/${id}/keys/${keyId}`, undefined, "DELETE");
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ revoked: true, key_id: keyId });

    const after = await listWorkspaces(app, key);
    expect(after.status).toBe(401);
    expect(((await after.json()) as any).error.code).toBe("UNAUTHORIZED");
    expect((await app.request("/v1/workspaces/main/tools/read", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ file_path: "a" }) })).status).toBe(401);
    expect((await listWorkspaces(app, other.body.key)).status).toBe(200);

    // Revoking again → 404.
    const again = await admin(app, `/v1/admin/tenants/${id}/keys/${keyId}`, undefined, "DELETE");
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe("NOT_FOUND");
  });

  it("revoke of an unknown key → 404; of another tenant's key → 404 and the key keeps working", async () => {
    const a = await newTenantWithKey(app);
    const b = await newTenantWithKey(app);
    for (const keyId of ["nope", "0000000000", "x".repeat(40), "A-B", b.keyId.toUpperCase()]) {
      const r = await admin(app, `/v1/admin/tenants/${a.id}/keys/${keyId}`, undefined, "DELETE");
      expect(r.status, keyId).toBe(404);
      expect(r.body.error.code).toBe("NOT_FOUND");
    }
    const cross = await admin(app, `/v1/admin/tenants/${a.id}/keys/${b.keyId}`, undefined, "DELETE");
    expect(cross.status).toBe(404);
    expect((await listWorkspaces(app, b.key)).status).toBe(200);
    // Unknown tenant too.
    expect((await admin(app, `/v1/admin/tenants/${tenantId()}/keys/${a.keyId}`, undefined, "DELETE")).status).toBe(404);
    expect((await listWorkspaces(app, a.key)).status).toBe(200);
  });
});

describe("tenant authentication", () => {
  const app = testApp();

  it("refuses a missing, malformed, unknown or admin key with 401 UNAUTHORIZED", async () => {
    const t = await newTenant(app);
    const headers: (Record<string, string> | undefined)[] = [
      undefined,
      { authorization: "" },
      { authorization: "Bearer" },
      { authorization: `Bearer ${ADMIN}` },
      { authorization: `Bearer ${t.key}x` },
      { authorization: `Bearer ${t.key.slice(0, -1)}` },
      { authorization: `Bearer tsk_${"a".repeat(200)}` },
      { authorization: `Basic ${t.key}` },
      { authorization: t.key },
      { "x-api-key": t.key },
    ];
    for (const h of headers) {
      const r = await app.request("/v1/workspaces", { ...(h ? { headers: h } : {}) });
      expect(r.status, JSON.stringify(h)).toBe(401);
      const body = (await r.json()) as any;
      expect(body).toMatchObject({ ok: false, error: { code: "UNAUTHORIZED" } });
    }
    expect((await app.request("/v1/workspaces", { headers: { authorization: `Bearer ${t.key}` } })).status).toBe(200);
  });
});

describe("unknown routes and malformed bodies", () => {
  const app = testApp();

  it("an unknown route → 404 NOT_FOUND in the JSON envelope", async () => {
    for (const [method, path] of [
      ["GET", "/nope"],
      ["GET", "/v1"],
      ["GET", "/v2/workspaces"],
      ["POST", "/v1/admin"],
      ["GET", "/v1/workspaces/main/tools"],
    ] as const) {
      const r = await app.request(path, { method });
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.headers.get("content-type")).toMatch(/application\/json/);
      const body = (await r.json()) as any;
      expect(body).toMatchObject({ ok: false, error: { code: "NOT_FOUND" } });
      expect(body.error.message).toMatch(/openapi\.json/);
    }
  });

  it("an unknown tool → 404", async () => {
    const t = await newTenant(app);
    const r = await t.call("no_such_tool", {});
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe("NOT_FOUND");
  });

  it("a malformed JSON body to a tool → 400 INVALID_ARGUMENT (not 500)", async () => {
    const t = await newTenant(app);
    for (const body of ["{not json", "", "[", "{\"file_path\":", "null", "42", "\"a.txt\"", "[]"]) {
      const res = await t.req(`/v1/workspaces/${t.ws}/tools/read`, { method: "POST", headers: { "content-type": "application/json" }, body });
      const json = (await res.json()) as any;
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(json.ok).toBe(false);
      expect(json.error.code, JSON.stringify(body)).toBe("INVALID_ARGUMENT");
    }
  });

  it("a body of the wrong shape → 400 INVALID_ARGUMENT naming the field", async () => {
    const t = await newTenant(app);
    const r = await t.call("read", { file_path: 42 });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ ok: false, tool: "read", error: { code: "INVALID_ARGUMENT" } });
    expect(r.body.error.message).toContain("file_path");
  });

  it("GET / and /healthz answer", async () => {
    expect(await (await app.request("/")).json()).toMatchObject({ name: "toolshed", openapi: "/openapi.json" });
    expect(await (await app.request("/healthz")).json()).toEqual({ ok: true });
  });
});

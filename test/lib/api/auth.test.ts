/** lib/api/auth: tenants (object storage) and API keys in KV (hash only), and the two bearer middlewares. */
import { env } from "cloudflare:workers";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { KEY_PREFIX, createApiKey, createTenant, getTenant, resolveApiKey, revokeApiKey } from "../../../lib/api/auth/keys.js";
import { DEFAULT_SCOPES } from "../../../lib/contract/caller.js";
import { ToolError } from "../../../lib/shared/errors.js";
import { randomId, safeEqual, sha256Hex } from "../../../lib/shared/hash.js";
import { onError, type AppEnv } from "../../../lib/api/http.js";
import { guard } from "../../../lib/api/routes/access.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { workersKeyValue } from "../../../lib/storage/kv-workers.js";
import { testDeps } from "../../helpers.js";

const kv = workersKeyValue(env.KV);
const storage = r2Driver(env.FILES);
const tid = () => `t-${randomId(8)}`;

async function codeOf(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (e) {
    if (e instanceof ToolError) return e.code;
    throw e;
  }
}

describe("tenants", () => {
  it("of 10 concurrent creates of one id, exactly one wins (create-only write)", async () => {
    const id = tid();
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => createTenant(storage, { id, name: `n${i}` }).then(() => "ok", (e: ToolError) => e.code)));
    expect(results.filter((r) => r === "ok")).toHaveLength(1);
    expect(results.filter((r) => r === "ALREADY_EXISTS")).toHaveLength(9);
  });

  it("creates, reads, refuses duplicates and bad ids", async () => {
    const id = tid();
    const t = await createTenant(storage, { id, name: "Acme" });
    expect(t).toMatchObject({ id, name: "Acme" });
    expect(await getTenant(storage, id)).toEqual(t);
    expect(await codeOf(createTenant(storage, { id }))).toBe("ALREADY_EXISTS");
    for (const bad of ["", "A", "../x", "a/b", "x".repeat(64), "-a"]) expect(await codeOf(createTenant(storage, { id: bad })), bad).toBe("INVALID_ARGUMENT");
    expect(await codeOf(getTenant(storage, tid()))).toBe("NOT_FOUND");
    expect(await codeOf(getTenant(storage, "../x"))).toBe("NOT_FOUND");
    const anon = await createTenant(storage, {});
    expect(anon.id).toMatch(/^tn_[a-z2-7]{12}$/);
    expect(anon.name).toBe(anon.id);
  });
});

describe("API keys", () => {
  it("a key is tsk_<id>_<secret>, stored only as its SHA-256 hash, resolving to its tenant and scopes", async () => {
    const tenant = (await createTenant(storage, { id: tid() })).id;
    const { key, record } = await createApiKey(kv, storage, tenant, { name: "ci", scopes: ["read"] });
    expect(key.startsWith(KEY_PREFIX)).toBe(true);
    expect(key).toBe(`${KEY_PREFIX}${record.key_id}_${key.split("_").at(-1)}`);
    expect(key.split("_").at(-1)).toMatch(/^[a-z2-7]{32}$/);
    expect(record).toMatchObject({ tenant, name: "ci", scopes: ["read"] });

    const hash = await sha256Hex(key);
    const stored = await env.KV.get(`apikey/${hash}`);
    expect(stored).not.toBeNull();
    expect(stored).not.toContain(key.split("_").at(-1));
    expect(await env.KV.get(`keyid/${tenant}/${record.key_id}`)).toBe(hash);
    expect(await env.KV.get(`apikey/${key}`)).toBeNull();

    expect(await resolveApiKey(kv, key)).toEqual({ tenant, key_id: record.key_id, scopes: ["read"] });
  });

  it("default scopes are read, write, execute", async () => {
    const tenant = (await createTenant(storage, { id: tid() })).id;
    const { record } = await createApiKey(kv, storage, tenant, {});
    expect(record.scopes).toEqual(DEFAULT_SCOPES);
    expect(DEFAULT_SCOPES).toEqual(["read", "write", "execute"]);
    expect(record.name).toBe("default");
  });

  it("no key for an unknown tenant", async () => {
    expect(await codeOf(createApiKey(kv, storage, tid(), {}))).toBe("NOT_FOUND");
  });

  it("resolves nothing for a wrong, altered, overlong or foreign-looking key", async () => {
    const tenant = (await createTenant(storage, { id: tid() })).id;
    const { key } = await createApiKey(kv, storage, tenant, {});
    const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === "a" ? "b" : "a") + s.slice(i + 1);
    for (const k of ["", "tsk_", key.slice(4), `x${key}`, `${key}x`, key.slice(0, -1), flip(key, key.length - 1), flip(key, 5), key.toUpperCase(), `${key}${"a".repeat(100)}`, `sk_${key.slice(4)}`]) {
      expect(await resolveApiKey(kv, k), k).toBeNull();
    }
    expect(await resolveApiKey(kv, key)).not.toBeNull();
  });

  it("revoking removes both records; unknown, malformed or foreign key ids → NOT_FOUND", async () => {
    const a = (await createTenant(storage, { id: tid() })).id;
    const b = (await createTenant(storage, { id: tid() })).id;
    const ka = await createApiKey(kv, storage, a, {});
    const kb = await createApiKey(kv, storage, b, {});
    expect(await codeOf(revokeApiKey(kv, a, kb.record.key_id))).toBe("NOT_FOUND");
    expect(await resolveApiKey(kv, kb.key)).not.toBeNull();
    for (const id of ["", "nope", "../x", "A", "x".repeat(33), `${ka.record.key_id}/`]) expect(await codeOf(revokeApiKey(kv, a, id)), id).toBe("NOT_FOUND");

    await revokeApiKey(kv, a, ka.record.key_id);
    expect(await resolveApiKey(kv, ka.key)).toBeNull();
    expect(await env.KV.get(`apikey/${await sha256Hex(ka.key)}`)).toBeNull();
    expect(await env.KV.get(`keyid/${a}/${ka.record.key_id}`)).toBeNull();
    expect(await codeOf(revokeApiKey(kv, a, ka.record.key_id))).toBe("NOT_FOUND");
    expect(await resolveApiKey(kv, kb.key)).not.toBeNull();
  });
});

describe("middleware", () => {
  const app = (deps = testDeps()) => {
    const h = new Hono<AppEnv>();
    h.onError(onError);
    h.get("/tenant", guard(deps, { access: { auth: "tenant", scope: "any" } }), (c) => c.json(c.get("auth")));
    h.get("/admin", guard(deps, { access: { auth: "admin" } }), (c) => c.json({ admin: true }));
    return h;
  };

  it("the tenant guard sets the caller's tenant and scopes, or answers 401", async () => {
    const tenant = (await createTenant(storage, { id: tid() })).id;
    const { key, record } = await createApiKey(kv, storage, tenant, { scopes: ["read", "network"] });
    const ok = await app().request("/tenant", { headers: { authorization: `Bearer ${key}` } });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ tenant, key_id: record.key_id, scopes: ["read", "network"] });
    // Extra whitespace around the token is tolerated; the scheme is case-insensitive.
    expect((await app().request("/tenant", { headers: { authorization: `bearer   ${key}  ` } })).status).toBe(200);

    for (const h of [undefined, "", "Bearer", `Bearer ${key} extra`, `Bearer ${key}x`, `Basic ${key}`]) {
      const r = await app().request("/tenant", h === undefined ? {} : { headers: { authorization: h } });
      expect(r.status, JSON.stringify(h)).toBe(401);
      const body = (await r.json()) as any;
      expect(body).toMatchObject({ ok: false, error: { code: "UNAUTHORIZED" } });
    }
    const missing = (await (await app().request("/tenant")).json()) as any;
    expect(missing.error.message).toMatch(/Missing API key/);
    // A header of another form says what is wrong with it (never echoing the key), then what to send.
    const said = async (h: string) => ((await (await app().request("/tenant", { headers: { authorization: h } })).json()) as any).error.message as string;
    expect(await said(key)).toBe("The Authorization header holds no 'Bearer ' before the token. Send 'Authorization: Bearer <api key>' (or an OAuth access token: docs/oauth.md).");
    expect(await said(`Basic ${key}`)).toMatch(/^The Authorization header uses the 'Basic' scheme; Toolshed takes Bearer\. Send 'Authorization: Bearer <api key>'/);
    expect(await said("Bearer")).toMatch(/^The Authorization header says Bearer but holds no token after it\. Send /);
    expect(await said(`Bearer ${key} extra`)).toMatch(/^The Authorization header holds more than one word after Bearer\. Send /);
    for (const h of [key, `Basic ${key}`, `${key} ${key}`, `Bearer ${key} extra`]) expect(await said(h), h).not.toContain(key.slice(4));
  });

  it("the admin guard: 403 when off, 401 on a wrong token, through on the right one", async () => {
    expect((await app(testDeps({ adminToken: undefined })).request("/admin", { headers: { authorization: "Bearer x" } })).status).toBe(403);
    const on = app(testDeps({ adminToken: "s3cret-token" }));
    expect((await on.request("/admin")).status).toBe(401);
    expect((await on.request("/admin", { headers: { authorization: "Bearer s3cret-toke" } })).status).toBe(401);
    expect((await on.request("/admin", { headers: { authorization: "Bearer s3cret-token!" } })).status).toBe(401);
    expect((await on.request("/admin", { headers: { authorization: "Bearer s3cret-token" } })).status).toBe(200);
  });

  it("a refused credential is told what to send instead: where the admin token is, an API key on an admin route, the admin token on a tenant route", async () => {
    const on = app(testDeps({ adminToken: "s3cret-token" }));
    const message = async (path: string, token?: string) => {
      const r = await on.request(path, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
      expect(r.status).toBe(401);
      return ((await r.json()) as any).error.message as string;
    };
    const where = "the deployment's secret TOOLSHED_ADMIN_TOKEN (npm start keeps it in .dev.vars)";
    expect(await message("/admin")).toContain(where);
    expect(await message("/admin", "s3cret-toke")).toContain(where);
    expect(await message("/admin", "tsk_abcdefghij_abcdefghijklmnopqrstuvwxyz234567")).toBe(`This is an API key; the admin routes take the admin token instead: ${where}.`);
    expect(await message("/tenant", "s3cret-token")).toBe("This is the admin token, which only the admin routes (/v1/admin/...) take. Send an API key as 'Authorization: Bearer <api key>'; an admin creates keys with POST /v1/admin/tenants/{tenant}/keys.");
    expect(await message("/tenant", "s3cret-toke")).toMatch(/^Invalid or revoked API key/);
  });

  it("safeEqual compares whole strings", () => {
    expect(safeEqual("abc", "abc")).toBe(true);
    expect(safeEqual("abc", "abd")).toBe(false);
    expect(safeEqual("abc", "ab")).toBe(false);
    expect(safeEqual("ab", "abc")).toBe(false);
    expect(safeEqual("", "")).toBe(true);
    expect(safeEqual("é", "e\u0301")).toBe(false);
  });
});

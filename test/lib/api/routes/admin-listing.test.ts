/** Admin listings: GET /v1/admin/tenants and GET /v1/admin/tenants/{t}/keys, paged, never a secret. */
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../../../lib/shared/hash.js";
import { admin, testApp } from "../../../helpers.js";

const app = testApp();
const get = (path: string) => admin(app, path, undefined, "GET");

/** Every page of a listing, following cursors. */
async function all(path: string, field: string, limit: number): Promise<{ items: any[]; pages: number }> {
  const items: any[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const r = await get(`${path}?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body[field].length).toBeLessThanOrEqual(limit);
    items.push(...r.body[field]);
    cursor = r.body.cursor;
    pages++;
  } while (cursor && pages < 100);
  return { items, pages };
}

describe("GET /v1/admin/tenants", () => {
  it("pages through every tenant once, in id order", async () => {
    const ids = Array.from({ length: 5 }, (_, i) => `list-${crypto.randomUUID().slice(0, 6)}-${i}`);
    for (const id of ids) expect((await admin(app, "/v1/admin/tenants", { id, name: `Name ${id}` })).status).toBe(201);
    const { items, pages } = await all("/v1/admin/tenants", "tenants", 2);
    expect(pages).toBeGreaterThanOrEqual(3);
    const seen = items.map((t) => t.id);
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of ids) expect(items.find((t) => t.id === id)).toMatchObject({ id, name: `Name ${id}`, created_at: expect.any(String) });
    expect([...seen].sort()).toEqual(seen);
    for (const t of items) expect(Object.keys(t).sort()).toEqual(["created_at", "id", "name"]);
  });

  it("refuses a bad limit", async () => {
    for (const limit of ["0", "101", "x", "-1"]) expect((await get(`/v1/admin/tenants?limit=${limit}`)).status, limit).toBe(400);
  });
});

describe("GET /v1/admin/tenants/{tenant}/keys", () => {
  it("lists key id, name, scopes, tools and creation time of each live key; never the key or its hash", async () => {
    const tenant = `keys-${crypto.randomUUID().slice(0, 8)}`;
    expect((await admin(app, "/v1/admin/tenants", { id: tenant })).status).toBe(201);
    const made: any[] = [];
    for (const [name, scopes] of [["ci", ["read"]], ["agent", undefined], ["ops", ["read", "network"]]] as const) {
      const k = await admin(app, `/v1/admin/tenants/${tenant}/keys`, { name, ...(scopes ? { scopes } : {}) });
      expect(k.status).toBe(201);
      made.push(k.body);
    }
    expect((await admin(app, `/v1/admin/tenants/${tenant}/keys/${made[1].key_id}`, undefined, "DELETE")).status).toBe(200);

    const { items } = await all(`/v1/admin/tenants/${tenant}/keys`, "keys", 1);
    expect(items.map((k) => k.key_id).sort()).toEqual([made[0].key_id, made[2].key_id].sort());
    const ci = items.find((k) => k.key_id === made[0].key_id);
    expect(ci).toEqual({ key_id: made[0].key_id, tenant, name: "ci", scopes: ["read"], tools: "all", created_at: made[0].created_at });
    expect(items.find((k) => k.key_id === made[2].key_id).scopes).toEqual(["read", "network"]);

    const text = JSON.stringify((await get(`/v1/admin/tenants/${tenant}/keys`)).body);
    for (const m of made) {
      expect(text).not.toContain(m.key);
      expect(text).not.toContain(m.key.split("_").at(-1));
      expect(text).not.toContain(await sha256Hex(m.key));
    }
  });

  it("an unknown tenant → 404; a tenant without keys → an empty list", async () => {
    const r = await get(`/v1/admin/tenants/no-such-${crypto.randomUUID().slice(0, 6)}/keys`);
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe("NOT_FOUND");
    const tenant = `bare-${crypto.randomUUID().slice(0, 8)}`;
    await admin(app, "/v1/admin/tenants", { id: tenant });
    expect((await get(`/v1/admin/tenants/${tenant}/keys`)).body).toEqual({ keys: [] });
  });

  it("keys of one tenant are not listed under another", async () => {
    const a = `iso-a-${crypto.randomUUID().slice(0, 6)}`;
    const ab = `${a}b`; // a prefix of the other's id must not matter
    for (const id of [a, ab]) await admin(app, "/v1/admin/tenants", { id });
    const ka = await admin(app, `/v1/admin/tenants/${a}/keys`, {});
    const kb = await admin(app, `/v1/admin/tenants/${ab}/keys`, {});
    expect((await get(`/v1/admin/tenants/${a}/keys`)).body.keys.map((k: any) => k.key_id)).toEqual([ka.body.key_id]);
    expect((await get(`/v1/admin/tenants/${ab}/keys`)).body.keys.map((k: any) => k.key_id)).toEqual([kb.body.key_id]);
  });
});

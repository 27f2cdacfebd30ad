/**
 * GET /v1/keys for a manage key that may not see every key of its tenant (lib/api/auth/key-listing.ts):
 * its cursors name no key it is not shown (nor its tenant), decoded every way, and its pages are as
 * long as the keys it is shown make them, wherever the others sit (before, between, after its own).
 * A cursor of another tenant, of another listing, or changed, is INVALID_ARGUMENT ("list again").
 * The real app over memory storage and the KV over storage (whose own cursor is the page's last key id).
 */
import { describe, expect, it } from "vitest";
import { tools } from "../../../../functions/index.js";
import { createApp } from "../../../../lib/api/app.js";
import type { AppDeps } from "../../../../lib/api/deps.js";
import { memoryDriver } from "../../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../../lib/storage/kv-over-storage.js";
import type { KeyValueStore } from "../../../../lib/storage/types.js";
import { sha256Hex } from "../../../../lib/shared/hash.js";
import { MAX_LISTS, MAX_READS } from "../../../../lib/api/auth/key-listing.js";

/** The most keys one round reads past MAX_READS (a round starts below it: the page's limit at most). */
const ROUND_MOST = 100;

const ADMIN = "keys-hidden-admin";
const TENANT = "t-keyshidden";
const OTHER = "t-keyselse";

/** Hidden keys (all workspaces: beyond the limited manager) before, between and after the visible ones (u42-x: within it), in KV order. */
const HIDDEN = ["0hiddenaa", "0hiddenbb", "3hiddencc", "3hiddendd", "3hiddenee", "8hiddenff", "8hiddengg"];
const VISIBLE = ["1visiblea", "5visibleb", "5visiblec"];

async function plant(kv: KeyValueStore, tenant: string, id: string, bounds: object) {
  const hash = await sha256Hex(`planted ${tenant} ${id}`);
  await kv.put(`apikey/${hash}`, JSON.stringify({ key_id: id, tenant, name: id, scopes: ["read"], created_at: "2026-11-30T00:00:00.000Z", ...bounds }));
  await kv.put(`keyid/${tenant}/${id}`, hash);
}

/** The KV, counting its list and get requests. */
function countedKv() {
  const inner = storageKeyValue(memoryDriver(), "kv/");
  const ops = { lists: 0, gets: 0 };
  const kv: KeyValueStore = { ...inner, get: (k) => (ops.gets++, inner.get(k)), list: (o) => (ops.lists++, inner.list(o)) };
  return { kv, ops };
}

async function setup(hidden = HIDDEN) {
  const { kv, ops } = countedKv();
  const app = createApp({ storage: memoryDriver(), kv, adminToken: ADMIN, syncSecret: "keys-hidden-sync-secret-0123456789" } as AppDeps, tools);
  const req = async (path: string, key: string, body?: unknown) => {
    const r = await app.request(path, { method: body === undefined ? "GET" : "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    return { status: r.status, json: (await r.json()) as any };
  };
  const make = async (t: string, body: object) => {
    const r = await req(`/v1/admin/tenants/${t}/keys`, ADMIN, body);
    expect(r.status, JSON.stringify(r.json)).toBe(201);
    return r.json as { key: string; key_id: string };
  };
  for (const t of [TENANT, OTHER]) expect((await req("/v1/admin/tenants", ADMIN, { id: t })).status).toBe(201);
  const limited = await make(TENANT, { scopes: ["read", "manage"], workspaces: ["u42-*"] });
  const wide = await make(TENANT, { scopes: ["read", "write", "execute", "manage"] });
  const other = await make(OTHER, { scopes: ["read", "manage"] });
  for (const id of hidden) await plant(kv, TENANT, id, { scopes: ["read", "write"] });
  for (const id of VISIBLE) await plant(kv, TENANT, id, { workspaces: ["u42-x"] });
  for (const id of ["0otheraaa", "0otherbbb"]) await plant(kv, OTHER, id, {});
  return { req, ops, kv, make, limited, wide, other, hidden: [...hidden, wide.key_id] };
}
type Setup = Awaited<ReturnType<typeof setup>>;

/** Every page of `path` at `limit` (as `key`): each page's key ids and every cursor handed out. */
async function pages(s: Setup, path: string, key: string, limit: number) {
  const lengths: number[] = [];
  const costs: { lists: number; gets: number }[] = [];
  const ids: string[] = [];
  const cursors: string[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 100; i++) {
    const before = { ...s.ops };
    const r = await s.req(`${path}?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, key);
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    costs.push({ lists: s.ops.lists - before.lists, gets: s.ops.gets - before.gets });
    lengths.push(r.json.keys.length);
    ids.push(...r.json.keys.map((k: any) => k.key_id));
    cursor = r.json.cursor;
    if (!cursor) break;
    cursors.push(cursor);
  }
  return { lengths, costs, ids, cursors };
}

/** A cursor read every way one could: as given, base64url and base64 decoded (as UTF-8 and as bytes), percent-decoded, twice over. */
function readings(cursor: string): string[] {
  const out = new Set<string>([cursor]);
  const decode = (s: string) => {
    for (const enc of ["base64url", "base64"] as const) {
      const bytes = Buffer.from(s, enc);
      out.add(bytes.toString("latin1"));
      out.add(bytes.toString("utf8"));
    }
    try {
      out.add(decodeURIComponent(s));
    } catch {
      /* not percent-encoded */
    }
  };
  decode(cursor);
  for (const s of [...out]) decode(s);
  return [...out];
}

/** The page lengths a listing of `n` keys gives at `limit`: full pages, then the rest (never an empty page). */
const lengthsOf = (n: number, limit: number) => Array.from({ length: Math.max(1, Math.ceil(n / limit)) }, (_, i) => Math.min(limit, n - i * limit));

describe("GET /v1/keys for a manage key that may not see every key", () => {
  it("names no hidden key (nor the tenant) in any cursor, and pages as long as its own keys make them", async () => {
    const s = await setup();
    const shown = [...VISIBLE, s.limited.key_id].sort();
    for (const limit of [1, 2]) {
      const p = await pages(s, "/v1/keys", s.limited.key, limit);
      expect([...p.ids].sort(), `limit=${limit}`).toEqual(shown);
      expect(p.lengths, `limit=${limit}: page lengths`).toEqual(lengthsOf(shown.length, limit));
      for (const c of p.cursors) {
        for (const text of readings(c)) {
          for (const id of [...s.hidden, TENANT, "keyid/"]) expect(text, `limit=${limit}, cursor ${c}`).not.toContain(id);
        }
      }
    }
    // The keys it is not shown are still there: the wider key and the admin list them all, in as many pages.
    const all = [...HIDDEN, ...VISIBLE, s.limited.key_id, s.wide.key_id].sort();
    const wide = await pages(s, "/v1/keys", s.wide.key, 2);
    expect([...wide.ids].sort()).toEqual(all);
    expect(wide.lengths).toEqual(lengthsOf(all.length, 2));
    const admin = await pages(s, `/v1/admin/tenants/${TENANT}/keys`, ADMIN, 3);
    expect([...admin.ids].sort()).toEqual(all);
    // The admin is shown every key: a page costs 1 KV list and 2 reads a key, as before (no look past a full page).
    expect(admin.costs).toEqual(admin.lengths.map((n) => ({ lists: 1, gets: 2 * n })));
  });

  it("a long run of keys it is not shown costs bounded pages, never a hidden id, and paging still reaches every key it is shown", async () => {
    const many = Array.from({ length: 450 }, (_, i) => `2hidden${String(i).padStart(3, "0")}`);
    const s = await setup(many);
    const p = await pages(s, "/v1/keys", s.limited.key, 1);
    expect([...p.ids].sort()).toEqual([...VISIBLE, s.limited.key_id].sort());
    for (const c of p.cursors) for (const text of readings(c)) for (const id of [...many, TENANT]) expect(text).not.toContain(id);
    // Every request is bounded (the caller's own key read for its authentication aside: 2 GETs at most).
    for (const c of p.costs) {
      expect(c.lists).toBeLessThanOrEqual(MAX_LISTS);
      expect(c.gets).toBeLessThanOrEqual(2 * (MAX_READS + ROUND_MOST) + 2);
    }
    expect(p.costs.length).toBeLessThanOrEqual(Math.ceil(many.length / MAX_READS) + 5);
  });

  it("a manage key limited to one workspace, among 450 keys of other workspaces in a row: full pages, no hidden key read, none named", async () => {
    const s = await setup([]);
    // Planted ids sort around the made ones' random ids, so the 450 made form one run between them.
    const manager = { id: "0000mgr", key: "tsk_0000mgr_limitedmanagersecret" };
    await s.kv.put(`apikey/${await sha256Hex(manager.key)}`, JSON.stringify({ key_id: manager.id, tenant: TENANT, name: "m", scopes: ["read", "manage"], workspaces: ["u7-x"], created_at: "2026-11-30T00:00:00.000Z" }));
    await s.kv.put(`keyid/${TENANT}/${manager.id}`, await sha256Hex(manager.key));
    const own = ["0000own1", "0000own2", "zzzzown3", "zzzzown4"];
    for (const id of own) await plant(s.kv, TENANT, id, { workspaces: ["u7-x"] });
    const made: string[] = [];
    for (let i = 0; i < 450; i++) made.push((await s.make(TENANT, { scopes: ["read"], workspaces: [`u${i % 9}-x`, `other-${i}`] })).key_id);
    const p = await pages(s, "/v1/keys", manager.key, 2);
    const shown = [manager.id, ...own].sort();
    expect(p.ids).toEqual(shown);
    expect(p.lengths).toEqual(lengthsOf(shown.length, 2));
    // A key it is not shown is passed on its id entry's bounds, never read: a page reads its own keys and one past them (2 GETs each),
    // its caller's key, and the setup's 3 planted keys of u42-x (entries without bounds, as keys made before them: read to decide).
    for (const c of p.costs) expect(c.gets).toBeLessThanOrEqual(2 * 3 + 2 + 2 * VISIBLE.length);
    // The run is listed in rounds twice as long each time (10, 20, 40 … up to 1,000 keys a KV list).
    for (const c of p.costs) expect(c.lists).toBeLessThanOrEqual(8);
    for (const c of p.cursors) for (const text of readings(c)) for (const id of [...made, TENANT]) expect(text).not.toContain(id);
    // The keys of other workspaces are there: the admin lists them all.
    const admin = await pages(s, `/v1/admin/tenants/${TENANT}/keys`, ADMIN, 100);
    expect(admin.ids.length).toBe(shown.length + made.length + VISIBLE.length + 2);
  });

  it("a cursor of another tenant, of another listing, or changed, is INVALID_ARGUMENT saying to list again", async () => {
    const s = await setup();
    const own = (await s.req("/v1/keys?limit=1", s.limited.key)).json.cursor as string;
    const ofOther = (await s.req("/v1/keys?limit=1", s.other.key)).json.cursor as string;
    const ofAdminOther = (await s.req(`/v1/admin/tenants/${OTHER}/keys?limit=1`, ADMIN)).json.cursor as string;
    const ofWorkspaces = await (async () => {
      for (const id of ["u42-a", "u42-b"]) expect((await s.req("/v1/workspaces", s.wide.key, { id })).status).toBe(201);
      return (await s.req("/v1/workspaces?limit=1", s.limited.key)).json.cursor as string;
    })();
    for (const c of [own, ofOther, ofAdminOther, ofWorkspaces]) expect(typeof c).toBe("string");
    const flip = (c: string, at: number) => c.slice(0, at) + (c[at] === "A" ? "B" : "A") + c.slice(at + 1);
    const refused = [ofOther, ofAdminOther, ofWorkspaces, flip(own, 1), flip(own, Math.floor(own.length / 2)), flip(own, own.length - 2), own.slice(0, -4), `${own}AAAA`];
    for (const c of refused) {
      const r = await s.req(`/v1/keys?limit=1&cursor=${encodeURIComponent(c)}`, s.limited.key);
      expect(r.status, `${c}: ${JSON.stringify(r.json)}`).toBe(400);
      expect(r.json.error.code).toBe("INVALID_ARGUMENT");
      expect(r.json.error.message).toMatch(/pass back the cursor of the previous page of this same listing .* or leave cursor out to list from the first page/);
    }
    // Its own, unchanged, still pages.
    expect((await s.req(`/v1/keys?limit=1&cursor=${encodeURIComponent(own)}`, s.limited.key)).status).toBe(200);
  });
});

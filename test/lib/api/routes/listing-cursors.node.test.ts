/**
 * Listing cursors are opaque and relative (lib/layout/page-cursor.ts): no paging route hands out a
 * cursor that holds the caller's tenant id (plainly or base64url-decoded), paging with them still
 * gives every entry once, and a cursor of another listing, an old store cursor or a forged one is
 * INVALID_ARGUMENT, never a listing outside the prefix. The real app over memory storage (whose store
 * cursor was the storage key itself: t/<tenant>/w/<ws>/f/<path>), plain and layered (after a checkpoint).
 */
import { describe, expect, it } from "vitest";
import { tools } from "../../../../functions/index.js";
import { createApp } from "../../../../lib/api/app.js";
import type { AppDeps } from "../../../../lib/api/deps.js";
import { boundCursor } from "../../../../lib/layout/page-cursor.js";
import { filesPrefix, tenantWorkspacesPrefix } from "../../../../lib/layout/paths.js";
import { memoryDriver } from "../../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../../lib/storage/kv-over-storage.js";
import { fromBase64Url } from "../../../../lib/shared/text.js";

const ADMIN = "listing-cursors-admin";
const TENANT = "t-cursorsown";
const OTHER = "t-cursorsother";

async function setup() {
  // Every list request of the storage, by prefix: what a page costs.
  const lists: string[] = [];
  const store = memoryDriver();
  const storage = { ...store, list: (opts: Parameters<typeof store.list>[0]) => (lists.push(opts.prefix), store.list(opts)) };
  const app = createApp({ storage, kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN } as AppDeps, tools);
  const req = async (path: string, key: string, body?: unknown) => {
    const r = await app.request(path, { method: body === undefined ? "GET" : "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    return { status: r.status, json: (await r.json()) as any };
  };
  const keys: Record<string, string> = {};
  for (const t of [TENANT, OTHER]) {
    expect((await req("/v1/admin/tenants", ADMIN, { id: t })).status).toBe(201);
    keys[t] = (await req(`/v1/admin/tenants/${t}/keys`, ADMIN, { scopes: ["read", "write", "execute", "manage"] })).json.key;
    for (const ws of ["a", "b"]) expect((await req("/v1/workspaces", keys[t]!, { id: ws })).status).toBe(201);
  }
  for (let i = 0; i < 2; i++) await req(`/v1/admin/tenants/${TENANT}/keys`, ADMIN, {});
  const write = async (t: string, ws: string, path: string) => expect((await req(`/v1/workspaces/${ws}/tools/write`, keys[t]!, { file_path: path, content: "x\n" })).status).toBe(200);
  for (const p of ["x1", "x2", "d/y", "d/z/w", "x3"]) await write(TENANT, "a", p);
  await write(OTHER, "a", "secret.txt");
  return { app, req, keys, write, lists };
}

type Setup = Awaited<ReturnType<typeof setup>>;

/** Every page of `path` at limit=1 (as `key`): the entries' names and every cursor handed out. */
async function pages(s: Setup, path: string, key: string, pick: (body: any) => string[]) {
  const names: string[] = [];
  const cursors: string[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 50; i++) {
    const r = await s.req(`${path}${path.includes("?") ? "&" : "?"}limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, key);
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    names.push(...pick(r.json));
    cursor = r.json.cursor ?? r.json.next_cursor;
    if (!cursor) break;
    cursors.push(cursor);
  }
  return { names, cursors };
}

const decoded = (c: string) => {
  try {
    return fromBase64Url(c);
  } catch {
    return "";
  }
};

function expectNoTenant(cursors: string[], where: string) {
  expect(cursors.length, where).toBeGreaterThan(0);
  for (const c of cursors) {
    expect(c, where).not.toContain(TENANT);
    expect(decoded(c), where).not.toContain(TENANT);
    expect(c, where).not.toMatch(/^(t\/|m:|kv\/)/);
  }
}

describe("listing cursors", () => {
  it("no paging route hands out a cursor holding the tenant id; paging still gives every entry once (plain, then layered)", async () => {
    const s = await setup();
    const key = s.keys[TENANT]!;
    const files = (b: any) => b.entries.map((e: any) => e.path);
    for (const layered of [false, true]) {
      if (layered) {
        expect((await s.req("/v1/workspaces/a/checkpoints", key, {})).status).toBe(201);
        await s.write(TENANT, "a", "x4"); // one file in the upper layer, over the manifest
      }
      const flat = await pages(s, "/v1/workspaces/a/files/", key, files);
      expect(flat.names.sort()).toEqual(["d", "x1", "x2", "x3", ...(layered ? ["x4"] : [])]);
      expectNoTenant(flat.cursors, `files, layered: ${layered}`);
      const deep = await pages(s, "/v1/workspaces/a/files/?recursive=true", key, files);
      expect(new Set(deep.names)).toEqual(new Set(["d", "d/y", "d/z", "d/z/w", "x1", "x2", "x3", ...(layered ? ["x4"] : [])]));
      expect(deep.names.filter((n) => n.includes("/w") || n.startsWith("x")).length).toBe(layered ? 5 : 4); // each file once
      expectNoTenant(deep.cursors, `files recursive, layered: ${layered}`);
    }
    const workspaces = await pages(s, "/v1/workspaces", key, (b) => b.workspaces.map((w: any) => w.id));
    expect(workspaces.names).toEqual(["a", "b"]);
    expectNoTenant(workspaces.cursors, "workspaces");
    const apiKeys = await pages(s, "/v1/keys", key, (b) => b.keys.map((k: any) => k.key_id));
    expect(new Set(apiKeys.names).size).toBe(3);
    expectNoTenant(apiKeys.cursors, "keys");
    const adminKeys = await pages(s, `/v1/admin/tenants/${TENANT}/keys`, ADMIN, (b) => b.keys.map((k: any) => k.key_id));
    expect(new Set(adminKeys.names)).toEqual(new Set(apiKeys.names));
    expectNoTenant(adminKeys.cursors, "admin keys");
    const audit = await pages(s, "/v1/workspaces/a/audit", key, (b) => b.entries.map((e: any) => e.id));
    expectNoTenant(audit.cursors, "audit");
    // The admin's listing of tenants: its positions are tenant ids by nature (the admin sees them all); still opaque and bound.
    const tenants = await pages(s, "/v1/admin/tenants", ADMIN, (b) => b.tenants.map((t: any) => t.id));
    expect(tenants.names).toEqual(expect.arrayContaining([TENANT, OTHER]));
    for (const c of tenants.cursors) expect(c).not.toContain("tenants/");
  });

  it("a cursor of another listing, a store's cursor or a forged one is INVALID_ARGUMENT; none lists outside the prefix", async () => {
    const s = await setup();
    const key = s.keys[TENANT]!;
    const first = await s.req("/v1/workspaces/a/files/?limit=1", key);
    const cursor = first.json.cursor as string;
    const refused = async (path: string, c: string, why: RegExp) => {
      const r = await s.req(`${path}${path.includes("?") ? "&" : "?"}limit=1&cursor=${encodeURIComponent(c)}`, key);
      expect(r.status, `${path} ${c}: ${JSON.stringify(r.json)}`).toBe(400);
      expect(r.json.error.code).toBe("INVALID_ARGUMENT");
      expect(r.json.error.message).toMatch(why);
      expect(r.json.error.message).toMatch(/pass back the cursor of the previous page of this same listing .* or leave cursor out/);
    };
    await refused("/v1/workspaces/b/files/", cursor, /belongs to another listing/);
    await refused("/v1/workspaces/a/files/d/", cursor, /belongs to another listing/);
    await refused("/v1/workspaces/a/files/?recursive=true", cursor, /belongs to another listing/);
    await refused("/v1/workspaces", cursor, /belongs to another listing/);
    await refused("/v1/keys", cursor, /belongs to another listing/);
    // What the store's cursor was (the storage key, the merged view's "m:" + key), of this tenant or another: refused.
    for (const forged of [`${filesPrefix(TENANT, "a")}x1`, `m:${filesPrefix(OTHER, "a")}`, `t/${OTHER}/w/`, "not base64url!", "MQ", ""]) {
      if (forged) await refused("/v1/workspaces/a/files/", forged, /is not one a listing gave|belongs to another listing/);
    }
    await refused("/v1/workspaces", `t/${TENANT}/w/a/`, /is not one a listing gave|belongs to another listing/);
    await refused("/v1/keys", `kv/keyid%2F${OTHER}%2F`, /is not one a listing gave|belongs to another listing/);
    // A forged cursor with the right binding that points "outside" (../) only moves within this workspace's own files.
    for (const escape of [`../../../${OTHER}/w/a/f/`, "../b/f/", "\u0000"]) {
      const forged = boundCursor("files, recursive", filesPrefix(TENANT, "a"), escape);
      const r = await s.req(`/v1/workspaces/a/files/?recursive=true&cursor=${encodeURIComponent(forged)}`, key);
      expect(r.status).toBe(200);
      for (const e of r.json.entries) expect(["d", "d/y", "d/z", "d/z/w", "x1", "x2", "x3"]).toContain(e.path);
      expect(JSON.stringify(r.json)).not.toContain("secret");
    }
  });
  it("a key limited to some workspaces learns nothing of the others from GET /v1/workspaces: no cursor names one, no page is shortened by one", async () => {
    const s = await setup();
    const full = s.keys[TENANT]!;
    // Around the covered ids, ids it does not cover in every place of the storage order: before, between, after, beside a prefix.
    for (const ws of ["0hidden", "proj", "proj-x", "proj-y", "proj0", "projz", "zhidden"]) expect((await s.req("/v1/workspaces", full, { id: ws })).status).toBe(201);
    const limited = (await s.req(`/v1/admin/tenants/${TENANT}/keys`, ADMIN, { scopes: ["read"], workspaces: ["b", "proj-*", "nothere", "proj-x"] })).json.key as string;
    const covered = ["b", "proj-x", "proj-y"];
    const hidden = ["0hidden", "a", "proj", "proj0", "projz", "zhidden"];
    const ids = (b: any) => b.workspaces.map((w: any) => w.id);
    const leaks = (text: string) => hidden.filter((h) => new RegExp(`(^|[^a-z0-9_-])${h}([^a-z0-9_-]|$)`).test(text));
    for (const limit of [1, 2, 1000]) {
      const names: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 20; page++) {
        const r = await s.req(`/v1/workspaces?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, limited);
        expect(r.status, JSON.stringify(r.json)).toBe(200);
        // A page is as long as the covered ids make it (an uncovered workspace neither fills nor empties one).
        expect(ids(r.json).length, `limit ${limit}, page ${page}: ${JSON.stringify(r.json)}`).toBe(Math.min(limit, covered.length - names.length));
        names.push(...ids(r.json));
        cursor = r.json.cursor;
        if (!cursor) break;
        expect(leaks(decoded(cursor)), `limit ${limit}: cursor ${decoded(cursor)}`).toEqual([]);
      }
      expect(names, `limit ${limit}`).toEqual(covered);
    }
    // Its page costs one list request per prefix range it reaches ("proj-*"; "b" and "nothere" are record reads), none of the tenant's whole listing.
    s.lists.length = 0;
    expect(ids((await s.req("/v1/workspaces?limit=1000", limited)).json)).toEqual(covered);
    expect(s.lists.filter((p) => p.startsWith(tenantWorkspacesPrefix(TENANT)))).toEqual([`${tenantWorkspacesPrefix(TENANT)}proj-`]);
    // A position it was never given (an unlimited key's cursor at an uncovered id, a forged one) moves only among the covered ids.
    const theirs = await s.req("/v1/workspaces?limit=1", full);
    expect(ids(theirs.json)).toEqual(["0hidden"]);
    const from = async (cursor: string) => {
      const r = await s.req(`/v1/workspaces?limit=1000&cursor=${encodeURIComponent(cursor)}`, limited);
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      expect(leaks(JSON.stringify(r.json))).toEqual([]);
      return ids(r.json);
    };
    expect(await from(theirs.json.cursor)).toEqual(covered);
    const at = (position: string) => boundCursor("workspaces", tenantWorkspacesPrefix(TENANT), position);
    expect(await from(at("proj"))).toEqual(["proj-x", "proj-y"]);
    expect(await from(at("proj-x/\u{10ffff}"))).toEqual(["proj-y"]);
    expect(await from(at("proj-y/\u{10ffff}"))).toEqual([]);
    expect(await from(at("../"))).toEqual(covered);
    // The unlimited key still pages through every workspace.
    const all = await pages(s, "/v1/workspaces", full, ids);
    expect(new Set(all.names)).toEqual(new Set([...hidden, ...covered]));
    expect(all.names.length).toBe(hidden.length + covered.length);
  });
});

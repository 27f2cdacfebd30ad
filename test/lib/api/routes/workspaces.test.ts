/** Tenant API: create, list (paged), get and delete workspaces. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { randomId } from "../../../../lib/shared/hash.js";
import { ID_PATTERN, workspacePrefix } from "../../../../lib/layout/paths.js";
import { newTenant, testApp, upload, type Tenant } from "../../../helpers.js";
import { r2Keys } from "../../../support/local-storage-keys.js";
import { tar } from "../../archive/archives.js";

const app = testApp();

async function json(t: Tenant, path: string, init: RequestInit = {}) {
  const res = await t.req(path, init);
  return { status: res.status, body: (await res.json()) as any };
}
const create = (t: Tenant, body?: unknown) =>
  json(t, "/v1/workspaces", { method: "POST", ...(body !== undefined ? { headers: { "content-type": "application/json" }, body: JSON.stringify(body) } : {}) });

const storageKeys = r2Keys;

describe("POST /v1/workspaces", () => {
  it("creates a workspace with an id, named after it unless a name is given", async () => {
    const t = await newTenant(app);
    const a = await create(t, { id: "proj-1" });
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({ id: "proj-1", name: "proj-1" });
    expect(Number.isNaN(Date.parse(a.body.created_at))).toBe(false);
    const b = await create(t, { id: "proj_2", name: "Project two" });
    expect(b.status).toBe(201);
    expect(b.body).toMatchObject({ id: "proj_2", name: "Project two" });
    // The record lives under the tenant's prefix.
    expect(await env.FILES.head(`${workspacePrefix(t.tenant, "proj-1")}meta.json`)).not.toBeNull();
  });

  it("creates a workspace without an id (random ws_ id), with or without a body", async () => {
    const t = await newTenant(app);
    const ids = new Set<string>();
    for (const body of [undefined, {}, { name: "unnamed" }]) {
      const r = await create(t, body);
      expect(r.status, JSON.stringify(body)).toBe(201);
      expect(r.body.id).toMatch(/^ws_/);
      expect(r.body.id).toMatch(ID_PATTERN);
      ids.add(r.body.id);
    }
    expect(ids.size).toBe(3);
  });

  it("a duplicate id → 409 ALREADY_EXISTS, and the first is untouched", async () => {
    const t = await newTenant(app);
    await create(t, { id: "dup", name: "first" });
    await upload({ ...t, ws: "dup" }, "keep.txt", "keep");
    const r = await create(t, { id: "dup", name: "second" });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ ok: false, error: { code: "ALREADY_EXISTS", details: { id: "dup" } } });
    expect((await json(t, "/v1/workspaces/dup")).body.name).toBe("first");
    expect((await t.req("/v1/workspaces/dup/files/keep.txt")).status).toBe(200);
    // "main" (made by newTenant) too.
    expect((await create(t, { id: t.ws })).status).toBe(409);
  });

  it("a body without a JSON content type is refused, saying to send JSON; nothing is created", async () => {
    const t = await newTenant(app);
    for (const type of ["text/plain", "application/x-www-form-urlencoded", undefined]) {
      const r = await json(t, "/v1/workspaces", { method: "POST", ...(type ? { headers: { "content-type": type } } : {}), body: new TextEncoder().encode('{"id":"typed"}') });
      expect(r.status, type).toBe(400);
      expect(r.body.error.code).toBe("INVALID_ARGUMENT");
      expect(r.body.error.message).toMatch(/Content-Type: application\/json/);
    }
    expect((await json(t, "/v1/workspaces/typed")).status).toBe(404);
    expect((await json(t, "/v1/workspaces", { method: "POST", headers: { "content-type": "application/json; charset=utf-8" }, body: '{"id":"typed"}' })).status).toBe(201);
  });

  it("an invalid id → 400 INVALID_ARGUMENT", async () => {
    const t = await newTenant(app);
    for (const id of ["My-WS", "../x", "a/b", "", "x".repeat(64), "ws evil", "-ws", "_ws", "ws.", "é", "..", "ws\n", "%2e%2e"]) {
      const r = await create(t, { id });
      expect(r.status, JSON.stringify(id)).toBe(400);
      expect(r.body.error.code).toBe("INVALID_ARGUMENT");
    }
    for (const id of [42, null, true, ["a"]]) {
      const r = await create(t, { id });
      expect(r.status, JSON.stringify(id)).toBe(400);
      expect(r.body.error.code).toBe("INVALID_ARGUMENT");
    }
    expect((await create(t, { id: "ok-name", name: "n".repeat(201) })).status).toBe(400);
    // A malformed JSON body.
    const bad = await json(t, "/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: "{oops" });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("INVALID_ARGUMENT");
    // Nothing was created by the refusals.
    const list = await json(t, "/v1/workspaces");
    expect(list.body.workspaces.map((w: any) => w.id)).toEqual([t.ws]);
  });
});

describe("GET /v1/workspaces", () => {
  it("lists the tenant's workspaces, page by page with cursor and limit", async () => {
    const t = await newTenant(app);
    const ids = [t.ws];
    for (let i = 0; i < 7; i++) {
      const id = `w${i}-${randomId(4)}`;
      expect((await create(t, { id })).status).toBe(201);
      ids.push(id);
    }
    // Files in a workspace must not show as extra entries.
    await upload(t, "a/b/c.txt", "x");

    const all = await json(t, "/v1/workspaces");
    expect(all.status).toBe(200);
    expect(all.body.workspaces.map((w: any) => w.id).sort()).toEqual([...ids].sort());
    expect(all.body.cursor).toBeUndefined();

    for (const limit of [1, 2, 3, 5]) {
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const r = await json(t, `/v1/workspaces?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
        expect(r.status).toBe(200);
        expect(r.body.workspaces.length).toBeLessThanOrEqual(limit);
        seen.push(...r.body.workspaces.map((w: any) => w.id));
        cursor = r.body.cursor;
        if (++pages > 50) throw new Error("paging does not end");
      } while (cursor);
      expect(seen.sort(), `limit ${limit}`).toEqual([...ids].sort());
      expect(pages).toBeGreaterThanOrEqual(Math.ceil(ids.length / limit));
    }
  });

  it("refuses a bad limit with 400", async () => {
    const t = await newTenant(app);
    for (const limit of ["0", "1001", "abc", "-1", "1.5"]) {
      const r = await json(t, `/v1/workspaces?limit=${limit}`);
      expect(r.status, limit).toBe(400);
      expect(r.body.error.code).toBe("INVALID_ARGUMENT");
    }
  });

  it("a deleted workspace is no longer listed", async () => {
    const t = await newTenant(app);
    await create(t, { id: "gone" });
    await json(t, "/v1/workspaces/gone", { method: "DELETE" });
    const r = await json(t, "/v1/workspaces");
    expect(r.body.workspaces.map((w: any) => w.id)).toEqual([t.ws]);
  });
});

describe("GET /v1/workspaces/{ws}", () => {
  it("returns the record, or 404 for an unknown or malformed id", async () => {
    const t = await newTenant(app);
    await create(t, { id: "one", name: "One" });
    const r = await json(t, "/v1/workspaces/one");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: "one", name: "One" });
    for (const id of ["two", "ONE", "o..ne", "%2e%2e", "x".repeat(64)]) {
      const g = await json(t, `/v1/workspaces/${id}`);
      expect(g.status, id).toBe(404);
      expect(g.body.error.code).toBe("NOT_FOUND");
    }
  });
});

describe("DELETE /v1/workspaces/{ws}", () => {
  it("removes the record and every file; raw GETs afterwards are 404", async () => {
    const t = await newTenant(app);
    await create(t, { id: "doomed" });
    const d = { ...t, ws: "doomed" };
    const paths = ["a.txt", "dir/b.txt", "dir/sub/c.bin", "deep/er/and/deeper/d.txt", "café/é.txt"];
    for (const p of paths) await upload(d, p, `content of ${p}`);
    // A file written by a tool too (session records in KV, file in R2).
    const w = await d.req("/v1/workspaces/doomed/tools/write", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ file_path: "tool.txt", content: "by tool" }) });
    expect(w.status).toBe(200);
    const prefix = workspacePrefix(t.tenant, "doomed");
    // The record, the files, and the search index's internal objects (under x/).
    const keys = await storageKeys(prefix);
    expect(keys.filter((k) => k.startsWith(`${prefix}f/`)).length).toBe(paths.length + 1);
    expect(keys).toContain(`${prefix}meta.json`);

    const del = await json(t, "/v1/workspaces/doomed", { method: "DELETE" });
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ deleted: true, id: "doomed" });
    expect(del.body.deleted_objects).toBeGreaterThanOrEqual(paths.length + 1);

    expect(await storageKeys(prefix)).toEqual([]);
    expect((await json(t, "/v1/workspaces/doomed")).status).toBe(404);
    for (const p of [...paths, "tool.txt"]) {
      const r = await t.req(`/v1/workspaces/doomed/files/${p.split("/").map(encodeURIComponent).join("/")}`);
      expect(r.status, p).toBe(404);
      expect(((await r.json()) as any).error.code).toBe("NOT_FOUND");
    }
    // Tools on the deleted workspace: 404.
    const read = await d.req("/v1/workspaces/doomed/tools/read", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ file_path: "a.txt" }) });
    expect(read.status).toBe(404);
    // Deleting again: 404.
    expect((await json(t, "/v1/workspaces/doomed", { method: "DELETE" })).status).toBe(404);
    // The other workspace is untouched.
    expect((await json(t, `/v1/workspaces/${t.ws}`)).status).toBe(200);

    // The id can be used again, and starts empty.
    expect((await create(t, { id: "doomed" })).status).toBe(201);
    expect((await t.req("/v1/workspaces/doomed/files/a.txt")).status).toBe(404);
  });

  it("deletes a workspace of more than one listing page", async () => {
    const t = await newTenant(app);
    await create(t, { id: "big" });
    const prefix = `${workspacePrefix(t.tenant, "big")}f/`;
    // Straight into R2: 1,100 objects (more than one page of 1,000).
    const n = 1100;
    for (let i = 0; i < n; i += 100) await Promise.all(Array.from({ length: 100 }, (_, j) => env.FILES.put(`${prefix}d${(i + j) % 7}/f${i + j}.txt`, "x")));
    const del = await json(t, "/v1/workspaces/big", { method: "DELETE" });
    expect(del.status).toBe(200);
    expect(del.body.deleted_objects).toBe(n);
    expect(await storageKeys(workspacePrefix(t.tenant, "big"))).toEqual([]);
  });

  it("404 for an unknown workspace", async () => {
    const t = await newTenant(app);
    const r = await json(t, "/v1/workspaces/never", { method: "DELETE" });
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe("NOT_FOUND");
  });
});

describe("authentication", () => {
  it("every workspace route → 401 without a key", async () => {
    const t = await newTenant(app);
    for (const [method, path] of [
      ["POST", "/v1/workspaces"],
      ["GET", "/v1/workspaces"],
      ["GET", `/v1/workspaces/${t.ws}`],
      ["DELETE", `/v1/workspaces/${t.ws}`],
    ] as const) {
      const r = await app.request(path, { method, headers: { "content-type": "application/json" }, ...(method === "POST" ? { body: "{}" } : {}) });
      expect(r.status, `${method} ${path}`).toBe(401);
      expect(((await r.json()) as any).error.code).toBe("UNAUTHORIZED");
    }
    // And nothing happened.
    expect((await json(t, `/v1/workspaces/${t.ws}`)).status).toBe(200);
    expect((await json(t, "/v1/workspaces")).body.workspaces).toHaveLength(1);
  });
});

describe("POST /v1/workspaces: the bodies it declares", () => {
  it("JSON is read by the guard, a declared archive type (with parameters) is left to the handler, anything else is refused and creates nothing", async () => {
    const t = await newTenant(app);
    const wrong = await json(t, "/v1/workspaces?id=plain", { method: "POST", headers: { "content-type": "text/plain" }, body: '{"id":"plain"}' });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.code).toBe("INVALID_ARGUMENT");
    expect(wrong.body.error.message).toMatch(/Content-Type: application\/json/);
    expect((await t.req("/v1/workspaces/plain")).status).toBe(404);
    const archive = await json(t, "/v1/workspaces?id=packed", { method: "POST", headers: { "content-type": "application/x-tar; foo=bar" }, body: tar([{ name: "a.txt", body: "packed" }]) });
    expect(archive.status, JSON.stringify(archive.body)).toBe(201);
    expect(archive.body.import).toMatchObject({ format: "tar", files: 1 });
    expect(await (await t.req("/v1/workspaces/packed/files/a.txt")).text()).toBe("packed");
    const fromJson = await json(t, "/v1/workspaces", { method: "POST", headers: { "content-type": "application/json; charset=utf-8" }, body: '{"id":"typed"}' });
    expect(fromJson.status).toBe(201);
    expect(fromJson.body.id).toBe("typed");
  });
});

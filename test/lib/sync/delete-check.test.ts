/**
 * POST /v1/sync/delete/check (lib/sync/delete-check.ts): where each file a write-back deletes stands
 * against the version its run started from, through the real app on the real (local) R2: the etag
 * the runner's manifest lists is `current` for a file in the upper layer and for one sealed into a
 * pack; nothing is written; the token's workspace only.
 */
import { describe, expect, it } from "vitest";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import { newTenant, testApp } from "../../helpers.js";
import { r2Keys } from "../../support/local-storage-keys.js";

const SECRET = "delete-check-secret-0123456789abc";
const app = testApp({ syncSecret: SECRET });
const bytes = (s: string) => new TextEncoder().encode(s);
const client = async (t: string, w: string) => httpSyncClient({ url: "http://api.test", token: await mintSyncToken(SECRET, { t, w, r: "run1" }, 60), fetch: ((i: RequestInfo | URL, init?: RequestInit) => app.request(new Request(i, init))) as typeof fetch });

describe("a write-back's deletes checked before any is applied", () => {
  it("current (upper layer or sealed in a pack), changed, gone; nothing written; another workspace's file of the same path is not seen", async () => {
    const t = await newTenant(app);
    const c = await client(t.tenant, t.ws);
    for (const p of ["packed.txt", "changed.txt", "gone.txt"]) expect((await c.put(p, bytes("v1"), { ifNoneMatch: "*" })).ok).toBe(true);
    const cp = await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "base" }) });
    expect(cp.status).toBe(201);
    expect((await c.put("upper.txt", bytes("v1"), { ifNoneMatch: "*" })).ok).toBe(true);
    // The versions a run starts from: as its manifest lists them.
    const base = new Map((await c.manifest()).map((e) => [e.path, e.etag]));
    expect((await c.put("changed.txt", bytes("theirs"), { ifMatch: base.get("changed.txt")! })).ok).toBe(true);
    expect((await c.delete("gone.txt", { ifMatch: base.get("gone.txt")! })).ok).toBe(true);

    const before = (await r2Keys(`t/${t.tenant}/`)).sort();
    const asked = ["packed.txt", "upper.txt", "changed.txt", "gone.txt"].map((path) => ({ path, ifMatch: base.get(path)! }));
    expect(await c.checkDeletes!(asked)).toEqual(["current", "current", "changed", "gone"]);
    expect((await r2Keys(`t/${t.tenant}/`)).sort()).toEqual(before);

    // Another workspace of the tenant with none of these files: its token sees its own workspace only.
    expect((await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "other" }) })).status).toBe(201);
    expect(await (await client(t.tenant, "other")).checkDeletes!(asked)).toEqual(["gone", "gone", "gone", "gone"]);
  });

  it("a malformed check is refused with what to send", async () => {
    const t = await newTenant(app);
    const token = await mintSyncToken(SECRET, { t: t.tenant, w: t.ws, r: "run1" }, 60);
    const send = async (body: unknown) => {
      const r = await app.request("/v1/sync/delete/check", { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(body) });
      return { status: r.status, body: (await r.json()) as { error: { code: string; message: string } } };
    };
    expect(await send({ files: [] })).toMatchObject({ status: 400, body: { error: { code: "INVALID_ARGUMENT", message: expect.stringContaining("files must be an array of 1 to 256") } } });
    expect(await send({ files: [{ path: "a.txt" }] })).toMatchObject({ status: 400, body: { error: { code: "INVALID_ARGUMENT", message: expect.stringContaining("needs its etag") } } });
    expect(await send({ files: [{ path: "../x", etag: "e" }] })).toMatchObject({ status: 400, body: { error: { code: "INVALID_PATH" } } });
  });
});

/**
 * The storage quotas on a run's write-back (lib/sync put and stage/commit, server side) through the
 * real app, the LIMITS Durable Object and local R2: a stage request past a quota is refused before it
 * writes (stage-quota.test.ts), a packed commit that would cross a quota is refused whole (no file of it lands), a per-file batch refuses the files past it and writes the others.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { durableLimits } from "../../../lib/limits/durable-object.js";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import type { PutManyItem } from "../../../lib/sync/put-batch.js";
import { admin, newTenant, testApp, upload, type Tenant } from "../../helpers.js";

const SECRET = "quota-writeback-secret-0123456789abcdef";
const app = testApp({ syncSecret: SECRET, limits: durableLimits(env.LIMITS) });
const enc = new TextEncoder();
const item = (path: string, content: string): PutManyItem => ({ path, bytes: enc.encode(content), ifNoneMatch: "*" });

async function client(t: Tenant) {
  const fetchFn = ((input: RequestInfo | URL, init?: RequestInit) => app.request(new Request(input, init))) as typeof fetch;
  return httpSyncClient({ url: "http://api.test", token: await mintSyncToken(SECRET, { t: t.tenant, w: t.ws, r: "run1" }, 60), fetch: fetchFn });
}

const listed = async (t: Tenant) => ((await (await t.req(`/v1/workspaces/${t.ws}/files/?recursive=true`)).json()) as any).entries.map((e: any) => e.path).sort();

describe("write-back and the storage quotas", () => {
  it("a packed commit past files_per_workspace is refused whole; one within it lands; a put batch writes the files within it and refuses the rest", async () => {
    const t = await newTenant(app);
    expect((await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, { files_per_workspace: 4 }, "PUT")).status).toBe(200);
    await upload(t, "a.txt", "a");
    const sync = await client(t);
    // Four new files where three are free: the stage request is refused before it writes (stage-quota.test.ts).
    const four = ["p1", "p2", "p3", "p4"].map((p) => item(`${p}.txt`, p));
    expect(await sync.stage!(four).catch((e: unknown) => e)).toMatchObject({ code: "QUOTA_EXCEEDED", details: { quota: "files_per_workspace" } });
    // Three staged within the bound, then a tool's write takes a place: the commit is refused, none lands.
    const staged = (await sync.stage!(four.slice(0, 3)))!;
    await upload(t, "b.txt", "b");
    const refused = await sync.commit!([staged.receipt], four.slice(0, 3).map((i) => i.path)).catch((e: unknown) => e);
    // The runner's client reports the API's QUOTA_EXCEEDED itself (its message is what the model reads; the runner leaves those files unwritten).
    expect(refused).toMatchObject({ code: "QUOTA_EXCEEDED", details: { status: 413, quota: "files_per_workspace", usage: 2, limit: 4 } });
    expect((refused as Error).message).toContain("the files_per_workspace quota is 4");
    expect(await listed(t)).toEqual(["a.txt", "b.txt"]);
    expect((await t.req(`/v1/workspaces/${t.ws}/files/b.txt`, { method: "DELETE" })).status).toBe(200);
    const three = ["q1", "q2", "q3"].map((p) => item(`${p}.txt`, p));
    const ok = (await sync.commit!([(await sync.stage!(three))!.receipt], three.map((i) => i.path)))!;
    expect(ok.every((r) => r.ok), JSON.stringify(ok)).toBe(true);
    expect(await listed(t)).toEqual(["a.txt", "q1.txt", "q2.txt", "q3.txt"]);
    // Full: a put batch of two new files writes none; after a delete, one of two.
    const batch = (await sync.putMany!([item("r1.txt", "r"), item("r2.txt", "r")]))!;
    expect(batch.map((r) => (r.ok ? "ok" : "error" in r ? r.error : "conflict"))).toEqual([expect.stringContaining("QUOTA_EXCEEDED"), expect.stringContaining("QUOTA_EXCEEDED")]);
    expect((await t.req(`/v1/workspaces/${t.ws}/files/q1.txt`, { method: "DELETE" })).status).toBe(200);
    const again = (await sync.putMany!([item("r1.txt", "r"), item("r2.txt", "r")]))!;
    expect(again.filter((r) => r.ok).length).toBe(1);
    expect((await listed(t)).length).toBe(4);
  }, 120_000);
});

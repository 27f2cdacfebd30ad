/**
 * The stage route bounded by the storage quotas (issue #28 §2; lib/sync/writeback-bound.ts), through the
 * real app, the LIMITS Durable Object and local R2, every pack PUT counted (as import-quota.test.ts):
 * a stage request whose plan passes what the quotas could accept is refused before its body is read;
 * a runner that under-declares is stopped by its running count before the pack that would pass;
 * an older runner (no plan) is bounded per request; what fits, and a rewrite that replaces as much
 * as it writes, pass. Refused: QUOTA_EXCEEDED naming quota, usage, limit and how far it got; the
 * tenant's storage as it was. Before the bound every stage request below wrote its pack.
 */
import { describe, expect, it } from "vitest";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import type { PutManyItem } from "../../../lib/sync/put-batch.js";
import type { WriteBackPlan } from "../../../lib/sync/writeback-bound.js";
import { packCountingApp } from "../../support/pack-counting-app.js";
import { admin, newTenant, testApp, type Tenant } from "../../helpers.js";
import { snapshot } from "../archive/helpers.js";

const SECRET = "stage-quota-secret-0123456789abcdef";
const KiB = 1024;

const countingApp = () => packCountingApp({ syncSecret: SECRET });

async function client(app: ReturnType<typeof testApp>, t: Tenant, run = "run1") {
  const fetchFn = ((input: RequestInfo | URL, init?: RequestInit) => app.request(new Request(input, init))) as typeof fetch;
  return httpSyncClient({ url: "http://api.test", token: await mintSyncToken(SECRET, { t: t.tenant, w: t.ws, r: run }, 60), fetch: fetchFn });
}

const bytes = (n: number, fill = 120) => new Uint8Array(n).fill(fill);
const items = (prefix: string, n: number, size: number, ifMatch?: Record<string, string>): PutManyItem[] =>
  Array.from({ length: n }, (_, i) => ({ path: `${prefix}${i}.bin`, bytes: bytes(size), ...(ifMatch ? { ifMatch: ifMatch[`${prefix}${i}.bin`]! } : { ifNoneMatch: "*" as const }) }));
const plan = (p: Partial<WriteBackPlan>): WriteBackPlan => ({ bytes: 0, files: 0, replaces: 0, before: { bytes: 0, files: 0 }, ...p });

async function refusal(p: Promise<unknown>, quota: string, usage: number, limit: number) {
  const e = (await p.then(() => null, (x: unknown) => x)) as { code: string; message: string; details: Record<string, unknown> } | null;
  expect(e, "the stage request passed").not.toBeNull();
  expect(e).toMatchObject({ code: "QUOTA_EXCEEDED", details: { quota, usage, limit, status: 413 } });
  expect(e!.message).toContain(`the ${quota} quota is ${limit}`);
  expect(e!.message).toContain("Delete what is not needed");
  return e!;
}

describe("stage requests bounded by the storage quotas", () => {
  it("a plan past storage_bytes: refused before the body is read, no pack; the same files within the quota stage and commit", async () => {
    const { app, packs } = countingApp();
    const t = await newTenant(app);
    expect((await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, { storage_bytes: 100 * KiB }, "PUT")).status).toBe(200);
    const before = await snapshot(t.tenant);
    const sync = await client(app, t);
    const four = items("a", 4, 16 * KiB); // 64 KiB in this request, 3 × that in the plan
    const e = await refusal(sync.stage!(four, plan({ bytes: 192 * KiB, files: 12 })), "storage_bytes", 0, 100 * KiB);
    expect(e.details).toMatchObject({ declared_bytes: 192 * KiB, declared_files: 12, bytes_allowed: 100 * KiB });
    expect(e.message).toContain(`The write-back's ${192 * KiB} bytes of files are more than the ${100 * KiB} the storage quota could take (${100 * KiB} bytes free, plus the 0 bytes of the files it replaces)`);
    expect(packs.puts).toBe(0);
    expect(await snapshot(t.tenant)).toEqual(before);
    // The same request with a plan that fits: staged (one pack) and committed, as before.
    const s = (await sync.stage!(four, plan({ bytes: 64 * KiB, files: 4 })))!;
    expect(packs).toEqual({ puts: 1, bytes: 64 * KiB });
    const c = (await sync.commit!([s.receipt], four.map((i) => i.path)))!;
    expect(c.every((r) => r.ok), JSON.stringify(c)).toBe(true);
  }, 60_000);

  it("a runner that under-declares is stopped by its running count before the pack that would pass; an older runner (no plan) is bounded per request", async () => {
    const { app, packs } = countingApp();
    const t = await newTenant(app);
    expect((await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, { storage_bytes: 100 * KiB }, "PUT")).status).toBe(200);
    const before = await snapshot(t.tenant);
    const sync = await client(app, t);
    // Declares 1 KiB; its first request (64 KiB) stages, the second's third file would pass 100 KiB with the 64 KiB before it.
    const lie = plan({ bytes: 1024, files: 1 });
    expect((await sync.stage!(items("a", 4, 16 * KiB), lie))!.files.every((f) => f.ok)).toBe(true);
    expect(packs.puts).toBe(1);
    const e = await refusal(sync.stage!(items("b", 4, 16 * KiB), { ...lie, before: { bytes: 64 * KiB, files: 4 } }), "storage_bytes", 0, 100 * KiB);
    expect(e.details).toMatchObject({ path: "b2.bin", staged_bytes: 96 * KiB, staged_files: 6, bytes_allowed: 100 * KiB });
    expect(e.message).toContain(`The write-back stopped before "b2.bin" (${16 * KiB} bytes): with the ${96 * KiB} bytes staged before it`);
    expect(packs.puts).toBe(1); // the refused request wrote none
    // No plan (a runner before the bound): one request past the quota is refused, one within it stages.
    await refusal(sync.stage!(items("c", 7, 16 * KiB)), "storage_bytes", 0, 100 * KiB);
    expect(packs.puts).toBe(1);
    expect((await sync.stage!(items("d", 6, 16 * KiB)))!.files.every((f) => f.ok)).toBe(true);
    expect(packs.puts).toBe(2);
    // Nothing committed: the files are as they were (the two staged packs and their search segments are unreferenced: GC's, as for any staged file never committed).
    const after = await snapshot(t.tenant);
    expect(after.filter((k) => !/\/packs?\/|\/x\/search\//.test(k)), after.join("\n")).toEqual(before);
  }, 60_000);

  it("what the run replaces counts: a same-size rewrite at a full quota stages and commits; new files past files_per_workspace are refused on the plan", async () => {
    const { app, packs } = countingApp();
    const t = await newTenant(app);
    const sync = await client(app, t);
    const first = items("r", 4, 16 * KiB);
    const s = (await sync.stage!(first, plan({ bytes: 64 * KiB, files: 4 })))!;
    const etags = Object.fromEntries((await sync.commit!([s.receipt], first.map((i) => i.path)))!.map((r) => [r.path, r.ok ? r.etag : ""]));
    expect((await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, { storage_bytes: 64 * KiB, files_per_workspace: 5 }, "PUT")).status).toBe(200);
    packs.puts = 0;
    const rewrite = items("r", 4, 16 * KiB, etags).map((i) => ({ ...i, bytes: bytes(16 * KiB, 121) }));
    const again = (await sync.stage!(rewrite, plan({ bytes: 64 * KiB, replaces: 64 * KiB })))!;
    const c = (await sync.commit!([again.receipt], rewrite.map((i) => i.path)))!;
    expect(c.every((r) => r.ok), JSON.stringify(c)).toBe(true);
    expect(packs.puts).toBe(1);
    const e = await refusal(sync.stage!(items("n", 2, 10), plan({ bytes: 20, files: 2 })), "files_per_workspace", 4, 5);
    expect(e.message).toContain("The write-back's 2 new entries (files, and empty directories: each counts as a file) are more than the 1 this workspace has room for");
    expect(packs.puts).toBe(1);
  }, 60_000);
});

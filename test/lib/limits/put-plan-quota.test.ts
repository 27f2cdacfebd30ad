/**
 * The put route bounded by the write-back's plan (lib/sync/writeback-bound.ts, put-server.ts),
 * through the real app, the LIMITS Durable Object and local R2 (as stage-quota.test.ts): a plan past
 * the quotas is refused before any file is written, also carried by a batch of no file; a batch
 * with a plan that fits charges its files at once and gives back what the plan declared too much;
 * a runner that under-declares is charged exactly, per file, and the quota holds. A write-back's
 * hold (lib/sync/writeback-hold.ts) through the same: its deletes credited, racers refused.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { durableLimits } from "../../../lib/limits/durable-object.js";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import type { PutManyItem } from "../../../lib/sync/put-batch.js";
import type { WriteBackPlan } from "../../../lib/sync/writeback-bound.js";
import { admin, newTenant, testApp, upload, type Tenant } from "../../helpers.js";
import { snapshot } from "../archive/helpers.js";

const SECRET = "put-plan-quota-secret-0123456789abcdef";
const KiB = 1024;

async function client(app: ReturnType<typeof testApp>, t: Tenant) {
  const fetchFn = ((input: RequestInfo | URL, init?: RequestInit) => app.request(new Request(input, init))) as typeof fetch;
  return httpSyncClient({ url: "http://api.test", token: await mintSyncToken(SECRET, { t: t.tenant, w: t.ws, r: "run1" }, 60), fetch: fetchFn });
}
const items = (prefix: string, n: number, size: number): PutManyItem[] => Array.from({ length: n }, (_, i) => ({ path: `${prefix}${i}.bin`, bytes: new Uint8Array(size).fill(120), ifNoneMatch: "*" as const }));
const plan = (p: Partial<WriteBackPlan>): WriteBackPlan => ({ bytes: 0, files: 0, replaces: 0, before: { bytes: 0, files: 0 }, ...p });
/** The room the quota has left, as the plan's bound sees it: the largest plan a batch of no file passes (asked at `n` and `n + 1`). */
const roomIs = async (sync: Awaited<ReturnType<typeof client>>, n: number) => {
  const fits = (bytes: number) => sync.putMany!([], plan({ bytes })).then(() => true, () => false);
  expect(await fits(n)).toBe(true);
  expect(await fits(n + 1)).toBe(false);
};

describe("put batches bounded by the write-back's plan", () => {
  it("a plan past storage_bytes: refused (413 QUOTA_EXCEEDED, the bound's message) before any file is written, with files or none; within it the batch lands", async () => {
    const app = testApp({ syncSecret: SECRET, limits: durableLimits(env.LIMITS) });
    const t = await newTenant(app);
    expect((await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, { storage_bytes: 100 * KiB }, "PUT")).status).toBe(200);
    const before = await snapshot(t.tenant);
    const sync = await client(app, t);
    for (const files of [items("a", 4, 16 * KiB), []]) {
      const e = (await sync.putMany!(files, plan({ bytes: 192 * KiB, files: 12 })).then(() => null, (x: unknown) => x)) as { code: string; message: string; details: Record<string, unknown> } | null;
      expect(e).toMatchObject({ code: "QUOTA_EXCEEDED", details: { quota: "storage_bytes", limit: 100 * KiB, declared_bytes: 192 * KiB, bytes_allowed: 100 * KiB, status: 413 } });
      expect(e!.message).toContain(`The write-back's ${192 * KiB} bytes of files are more than the ${100 * KiB} the storage quota could take`);
      expect(await snapshot(t.tenant)).toEqual(before);
    }
    expect(await sync.putMany!([], plan({ bytes: 64 * KiB, files: 4 }))).toEqual([]); // the plan alone, accepted: nothing written, nothing charged
    const r = (await sync.putMany!(items("a", 4, 16 * KiB), plan({ bytes: 96 * KiB, files: 6 })))!; // declares 32 KiB more than it writes
    expect(r.every((x) => x.ok), JSON.stringify(r)).toBe(true);
    await roomIs(sync, 36 * KiB); // 64 KiB in use: the rest of the plan's charge was given back
  }, 60_000);

  it("a runner that under-declares is charged per file: the files past the quota are refused, the quota holds", async () => {
    const app = testApp({ syncSecret: SECRET, limits: durableLimits(env.LIMITS) });
    const t = await newTenant(app);
    expect((await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, { storage_bytes: 100 * KiB }, "PUT")).status).toBe(200);
    const sync = await client(app, t);
    const r = (await sync.putMany!(items("b", 8, 16 * KiB), plan({ bytes: 1024, files: 1 })))!;
    expect(r.filter((x) => x.ok)).toHaveLength(6);
    expect(r.filter((x) => !x.ok).every((x) => "error" in x && x.error.startsWith("QUOTA_EXCEEDED"))).toBe(true);
    await roomIs(sync, 4 * KiB); // 96 KiB in use
  }, 60_000);

  it("a hold (writeback-hold.ts): refused before anything is written; taken, an upload racing it is refused, its delete's room goes into it, its batches draw their shares and the last releases it", async () => {
    const app = testApp({ syncSecret: SECRET, limits: durableLimits(env.LIMITS) });
    const t = await newTenant(app);
    const oldEtag = await upload(t, "old.bin", new Uint8Array(40 * KiB));
    expect((await admin(app, `/v1/admin/tenants/${t.tenant}/limits`, { storage_bytes: 60 * KiB }, "PUT")).status).toBe(200);
    const sync = await client(app, t);
    const before = await snapshot(t.tenant);
    // 64 KiB written, 40 KiB deleted, 20 KiB free: 4 KiB past.
    const refused = await sync.hold!(plan({ bytes: 64 * KiB, files: 4, deletes: { bytes: 40 * KiB, files: 1 } })).then(() => null, (e: unknown) => e);
    expect(refused).toMatchObject({ code: "QUOTA_EXCEEDED", details: { quota: "storage_bytes", bytes_allowed: 60 * KiB } });
    expect((refused as Error).message).toContain(`plus the 0 bytes of the files it replaces and the ${40 * KiB} bytes of the files it deletes`);
    expect(await snapshot(t.tenant)).toEqual(before);
    // 56 KiB written, the same delete: fits once the delete is applied. Held: 16 KiB now, 40 KiB awaited from the delete.
    const hold = await sync.hold!(plan({ bytes: 56 * KiB, files: 4, deletes: { bytes: 40 * KiB, files: 1 } }));
    expect(hold).toMatch(/^h/);
    await expect(upload(t, "racer.bin", new Uint8Array(5 * KiB))).rejects.toThrow(/413/);
    expect(await sync.deleteMany!([{ path: "old.bin", ifMatch: oldEtag }], { hold: hold! })).toEqual([{ path: "old.bin", ok: true }]);
    await expect(upload(t, "racer.bin", new Uint8Array(5 * KiB))).rejects.toThrow(/413/); // the room the delete freed is the hold's
    const one = (await sync.putMany!(items("h", 2, 14 * KiB), plan({ bytes: 28 * KiB, files: 2 }), { hold: hold! }))!;
    const two = (await sync.putMany!(items("i", 2, 14 * KiB), plan({ bytes: 28 * KiB, files: 2 }), { hold: hold!, release: true }))!;
    expect([...one, ...two].every((x) => x.ok), JSON.stringify([one, two])).toBe(true);
    await roomIs(sync, 4 * KiB); // 56 KiB in use, nothing held any more
  }, 60_000);
});

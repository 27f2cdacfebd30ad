/**
 * Sealing off the call path (lib/layers/background-seal.ts, #31 §2): raw uploads are folded into
 * packs after the PUT's answer (waitUntil), so the first run's manifest has nothing to seal; a
 * run's own seal is bounded (SEAL_MAX_ON_CALL). Pinned by what each call does (which storage
 * operations, what is in storage when it answers), not by timing. workerd, local R2.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { executionContext, newTenant, testApp, type Tenant } from "../../helpers.js";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { handleSync } from "../../../lib/sync/server.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import { Manifest, ManifestCache } from "../../../lib/layers/manifest.js";
import { readMeta } from "../../../lib/layers/open.js";
import { autoSeal, SEAL_MAX_ON_CALL } from "../../../lib/layers/auto-seal.js";
import { BackgroundSealer, CHECK_EVERY } from "../../../lib/layers/background-seal.js";
import { listUpper } from "../../../lib/layers/seal.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import type { StorageDriver } from "../../../lib/storage/types.js";

const raw = r2Driver(env.FILES);
const SECRET = "a-test-secret-of-some-length";
const app = testApp();

/** The real driver, each get and list noted in `ops`. */
const noted = (ops: string[]): StorageDriver => ({
  ...raw,
  name: "noted",
  async get(key, opts) {
    ops.push(`get ${key}`);
    return raw.get(key, opts);
  },
  async list(opts) {
    ops.push(`list ${opts.prefix}`);
    return raw.list(opts);
  },
});

async function runner(t: Tenant, storage: StorageDriver) {
  const fetchFn = ((input: RequestInfo | URL, init?: RequestInit) =>
    handleSync(new Request(input, init), { driver: storage, manifests: new ManifestCache(), kv: storageKeyValue(memoryDriver(), "kv/"), secret: SECRET })) as typeof fetch;
  return httpSyncClient({ url: "https://api.example", token: await mintSyncToken(SECRET, { t: t.tenant, w: t.ws, r: "run1" }, 60), fetch: fetchFn });
}

const fp = (t: Tenant) => `t/${t.tenant}/w/${t.ws}/f/`;
const body = (i: number) => `file ${i}\n`.repeat(1 + (i % 5));

/** n files as raw uploads leave them: one object each, a plain workspace (written straight to R2, quicker than n PUTs; 500 in flight, ~2x 32 at a time). */
async function rawFiles(t: Tenant, n: number): Promise<void> {
  for (let i = 0; i < n; i += 500) await Promise.all(Array.from({ length: Math.min(500, n - i) }, (_, j) => raw.put(`${fp(t)}src/f${String(i + j).padStart(4, "0")}.txt`, body(i + j))));
}

const put = (t: Tenant, path: string, text: string, ctx?: ExecutionContext) =>
  t.app.request(`/v1/workspaces/${t.ws}/files/${path}`, { method: "PUT", headers: { authorization: `Bearer ${t.key}`, "content-length": String(text.length) }, body: text }, {}, ctx);

const text = async (t: Tenant, p: string) => {
  const r = await t.req(`/v1/workspaces/${t.ws}/files/${p}`);
  return r.status === 200 ? await r.text() : null;
};

describe("raw uploads are sealed after the answer", () => {
  it("the PUT answers before any seal (plain workspace, its upper objects all there); after the answer the upload is folded into packs; the first run's manifest then reads no file and switches nothing", async () => {
    const t = await newTenant(app);
    await rawFiles(t, 300);
    const { ctx, later, settle } = executionContext();
    const res = await put(t, "new.txt", "new\n", ctx);
    expect(res.status).toBe(201);
    // When the call answered: nothing sealed yet, the work waits for after the answer.
    expect((await readMeta(raw, t.tenant, t.ws))!.meta.base ?? null).toBeNull();
    expect((await listUpper(raw, t.tenant, t.ws)).length).toBe(301);
    expect(later.length).toBeGreaterThan(0);
    await settle();
    const rec = (await readMeta(raw, t.tenant, t.ws))!;
    expect(rec.meta.base).toBeTruthy();
    const m = await new ManifestCache().load(raw, t.tenant, rec.meta.base!);
    expect(m.entries.length).toBe(301);
    expect(await listUpper(raw, t.tenant, t.ws)).toEqual([]);
    expect(await text(t, "new.txt")).toBe("new\n");
    expect(await text(t, "src/f0123.txt")).toBe(body(123));
    // The first run: one listing of a now empty upper layer, no file read, no switch.
    const ops: string[] = [];
    const a = (await (await runner(t, noted(ops))).manifestSince({ buckets: 4 }))!;
    expect(a.count).toBe(301);
    expect(ops.filter((o) => o.startsWith(`get ${fp(t)}`))).toEqual([]);
    expect((await readMeta(raw, t.tenant, t.ws))!.etag).toBe(rec.etag);
  });

  it("the route tells the sealer nothing without after-the-answer work (Lambda), nor on a replace", async () => {
    const t = await newTenant(app);
    await rawFiles(t, 300);
    expect((await put(t, "a.txt", "a")).status).toBe(201); // no waitUntil
    const { ctx, settle } = executionContext();
    expect((await put(t, "a.txt", "a2", ctx)).status).toBe(200); // a replace
    await settle();
    expect((await readMeta(raw, t.tenant, t.ws))!.meta.base ?? null).toBeNull();
    expect((await listUpper(raw, t.tenant, t.ws)).length).toBe(301);
  });

  it(`the sealer checks on the 1st and every ${CHECK_EVERY}th create of a workspace, one check at a time; a check below SEAL_MIN_UPPER reads no file`, async () => {
    const t = await newTenant(app);
    await rawFiles(t, 300);
    const ops: string[] = [];
    const sealer = new BackgroundSealer({ storage: noted(ops), manifests: new ManifestCache() });
    const handed: Promise<unknown>[] = [];
    const background = (p: Promise<unknown>) => void handed.push(p);
    let checks = 0;
    const drain = async () => {
      checks = handed.length; // what a create handed on (a seal hands on its removals too: drained here)
      while (handed.length) await Promise.all(handed.splice(0));
    };
    sealer.created(t.tenant, t.ws, background);
    sealer.created(t.tenant, t.ws, background); // the 2nd, while the 1st check runs
    await drain();
    expect(checks).toBe(1);
    expect((await readMeta(raw, t.tenant, t.ws))!.meta.base).toBeTruthy();
    expect(await listUpper(raw, t.tenant, t.ws)).toEqual([]);
    for (let i = 3; i <= CHECK_EVERY; i++) sealer.created(t.tenant, t.ws, background);
    await drain();
    expect(checks).toBe(0);
    sealer.created("other-tenant", t.ws, background); // counted per workspace
    await drain();
    expect(checks).toBe(1);
    ops.length = 0;
    sealer.created(t.tenant, t.ws, background); // the (CHECK_EVERY + 1)th
    await drain();
    expect(checks).toBe(1);
    expect(ops.filter((o) => o.startsWith(`get ${fp(t)}`))).toEqual([]);
    expect(ops.filter((o) => o.startsWith("list"))).toEqual([`list ${fp(t)}`]);
  });
});

describe("a run's own seal is bounded", () => {
  it(`seals at most SEAL_MAX_ON_CALL (${SEAL_MAX_ON_CALL}) objects by default, \`max\` when given; the rest stays upper and every file reads the same`, async () => {
    const t = await newTenant(app);
    await rawFiles(t, 400);
    const rec = (await readMeta(raw, t.tenant, t.ws))!;
    const listed = await listUpper(raw, t.tenant, t.ws);
    const ops: string[] = [];
    const s = (await autoSeal({ storage: noted(ops), manifests: new ManifestCache() }, t.tenant, t.ws, rec, null, listed, undefined, { max: 100 }))!;
    expect(s.sealed).toBe(100);
    expect(ops.filter((o) => o.startsWith(`get ${fp(t)}`)).length).toBe(100);
    expect(s.layer!.manifest).toBeInstanceOf(Manifest);
    expect(s.layer!.manifest.entries.length).toBe(100);
    expect((await listUpper(raw, t.tenant, t.ws)).length).toBe(300);
    for (const i of [0, 99, 100, 399]) expect(await text(t, `src/f${String(i).padStart(4, "0")}.txt`)).toBe(body(i));
    // The next run's manifest lists all 400 and takes the rest (300: fewer than SEAL_MAX_ON_CALL, at least an eighth of 100).
    const a = (await (await runner(t, raw)).manifestSince({ buckets: 4 }))!;
    expect(a.count).toBe(400);
    expect((await listUpper(raw, t.tenant, t.ws)).length).toBe(0);
  }, 120_000);
});

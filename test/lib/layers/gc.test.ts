/**
 * GC of unreachable packs and manifests (lib/layers/gc.ts, POST /v1/admin/tenants/{tenant}/gc),
 * in workerd over local R2. "Old" is simulated by running the collector with `now` past the grace.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, ADMIN, newTenant, testApp, upload, type Tenant } from "../../helpers.js";
import { tar } from "../archive/archives.js";
import { importReq } from "../archive/helpers.js";
import { collectGarbage } from "../../../lib/layers/gc.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";

const app = testApp();
const storage = r2Driver(env.FILES);
const LATER = () => Date.now() + 2 * 3600 * 1000;
const gc = (t: Tenant, opts: { dryRun?: boolean; maxDeletions?: number } = {}) => collectGarbage(storage, t.tenant, { now: LATER(), ...opts });

async function keys(prefix: string): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.FILES.list({ prefix, ...(cursor ? { cursor } : {}) });
    // The admin's GC call is itself an audit entry of the tenant (docs/audit.md); GC touches nothing else.
    out.push(...page.objects.filter((o) => !/\/audit\//.test(o.key)).map((o) => `${o.key} ${o.etag}`));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return out.sort();
}
const layers = async (t: Tenant) => ({ manifests: await keys(`t/${t.tenant}/manifests/`), packs: await keys(`t/${t.tenant}/packs/`) });
const post = (t: Tenant, path: string, body: unknown = {}) =>
  t.req(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
const text = async (t: Tenant, ws: string, p: string) => {
  const r = await t.req(`/v1/workspaces/${ws}/files/${p}`);
  return r.status === 200 ? await r.text() : `(${r.status})`;
};
const meta = async (t: Tenant, ws: string) => JSON.parse(await (await env.FILES.get(`t/${t.tenant}/w/${ws}/meta.json`))!.text()) as { base?: string };
const imp = async (t: Tenant, files: Record<string, string>, ws = t.ws) => {
  const r = await importReq(t, tar(Object.entries(files).map(([name, body]) => ({ name, body }))), "?mode=replace", {}, ws);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
};

describe("GC of packs and manifests", () => {
  it("a fork keeps its origin's packs alive after the origin is deleted; once the fork goes too, they go", async () => {
    const t = await newTenant(app);
    await imp(t, { "a.txt": "from origin\n", "b.txt": "bee\n" });
    const f = await post(t, "/v1/workspaces", { id: "fork", from_workspace: t.ws });
    expect(f.status, JSON.stringify(f.body)).toBe(201);
    const before = await layers(t);
    expect((await t.req(`/v1/workspaces/${t.ws}`, { method: "DELETE" })).status).toBe(200);
    const r = await gc(t);
    expect(r).toMatchObject({ manifests_deleted: 0, packs_deleted: 0, more: false, missing_manifests: [] });
    expect(await layers(t)).toEqual(before);
    expect(await text(t, "fork", "a.txt")).toBe("from origin\n");

    expect((await t.req(`/v1/workspaces/fork`, { method: "DELETE" })).status).toBe(200);
    const r2 = await gc(t);
    expect(r2.manifests_deleted).toBe(before.manifests.length);
    expect(r2.packs_deleted).toBe(before.packs.length);
    expect(r2.bytes_freed).toBeGreaterThan(0);
    expect(await layers(t)).toEqual({ manifests: [], packs: [] });
  });

  it("a deleted workspace's packs and manifests go; a live workspace's stay", async () => {
    const t = await newTenant(app);
    await imp(t, { "keep.txt": "kept\n" });
    const live = await layers(t);
    expect((await post(t, "/v1/workspaces", { id: "gone" })).status).toBe(201);
    await imp(t, { "x.txt": "doomed\n" }, "gone");
    await upload({ ...t, ws: "gone" }, "y.txt", "upper\n");
    expect((await post(t, "/v1/workspaces/gone/checkpoints", { name: "c" })).status).toBe(201);
    expect((await t.req(`/v1/workspaces/gone`, { method: "DELETE" })).status).toBe(200);
    const r = await gc(t);
    expect(r.manifests_deleted).toBe(2); // the import's and the checkpoint's
    expect(r.packs_deleted).toBe(2);
    expect(await layers(t)).toEqual(live);
    expect(await text(t, t.ws, "keep.txt")).toBe("kept\n");
  });

  it("a replaced base (import over import) goes when no checkpoint names it; a checkpoint's manifest stays", async () => {
    const t = await newTenant(app);
    await imp(t, { "v.txt": "one\n" });
    const m1 = (await meta(t, t.ws)).base!;
    const first = await layers(t);
    await imp(t, { "v.txt": "two\n" });
    const r = await gc(t);
    expect(r).toMatchObject({ manifests_deleted: 1, packs_deleted: first.packs.length });
    expect((await layers(t)).manifests.some((k) => k.includes(m1))).toBe(false);
    expect(await text(t, t.ws, "v.txt")).toBe("two\n");

    // Now with a checkpoint naming the base before the next import: it stays, and restores.
    const cp = await post(t, `/v1/workspaces/${t.ws}/checkpoints`, { name: "two" });
    expect(cp.status).toBe(201);
    const m2 = (await meta(t, t.ws)).base!;
    expect(cp.body.manifest ?? m2).toBe(m2);
    await imp(t, { "v.txt": "three\n" });
    const before = await layers(t);
    const r2 = await gc(t);
    expect(r2).toMatchObject({ manifests_deleted: 0, packs_deleted: 0 });
    expect(await layers(t)).toEqual(before);
    expect((await post(t, `/v1/workspaces/${t.ws}/checkpoints/${cp.body.id}/restore`)).status).toBe(200);
    expect(await text(t, t.ws, "v.txt")).toBe("two\n");
  });

  it("what lands after its workspace was deleted (a write's index batch, an audit entry, held past the answer) goes, and the workspace's prefix with it", async () => {
    const t = await newTenant(app);
    expect((await post(t, "/v1/workspaces", { id: "late" })).status).toBe(201);
    await upload({ ...t, ws: "late" }, "a.txt", "indexed after the answer\n");
    const segPrefix = `t/${t.tenant}/w/late/x/search/v1/seg/`;
    const [seg] = (await env.FILES.list({ prefix: segPrefix })).objects;
    expect(seg, "the upload's index segment").toBeDefined();
    const bytes = await (await env.FILES.get(seg!.key))!.arrayBuffer();
    expect((await t.req("/v1/workspaces/late", { method: "DELETE" })).status).toBe(200);
    expect(await keys(`t/${t.tenant}/w/late/`)).toEqual([]);
    await env.FILES.put(seg!.key, bytes); // the held batch's PUT, landing after the delete listed the prefix
    await env.FILES.put(`t/${t.tenant}/w/late/x/audit/20261129T000000000Z-late.json`, "{}"); // an audit entry written after its answer
    const young = await collectGarbage(storage, t.tenant, { now: Date.now() });
    expect(young.leftovers_deleted).toBe(0); // within the grace: it could be a workspace being made
    expect((await gc(t, { dryRun: true })).leftovers_deleted).toBe(2);
    expect((await env.FILES.list({ prefix: `t/${t.tenant}/w/late/` })).objects).toHaveLength(2); // a dry run deletes nothing
    const swept = await gc(t);
    expect(swept).toMatchObject({ leftovers_deleted: 2, segments_deleted: 0 });
    expect((await env.FILES.list({ prefix: `t/${t.tenant}/w/late/` })).objects).toEqual([]); // the audit entry too
    expect((await gc(t)).roots.workspaces).toBe(1); // the prefix no longer counts as a workspace
  });

  it("young unreferenced objects stay (grace); dry_run deletes nothing; max_deletions bounds a call (more: true)", async () => {
    const t = await newTenant(app);
    await imp(t, { "a.txt": "1\n" });
    await imp(t, { "a.txt": "2\n" });
    await imp(t, { "a.txt": "3\n" });
    const before = await layers(t);
    const young = await collectGarbage(storage, t.tenant, { now: Date.now() });
    expect(young).toMatchObject({ manifests_deleted: 0, packs_deleted: 0 });
    expect(young.kept_young).toBe(4); // two manifests, two packs
    const dry = await gc(t, { dryRun: true });
    expect(dry).toMatchObject({ manifests_deleted: 2, packs_deleted: 2, dry_run: true });
    expect(await layers(t)).toEqual(before);
    const one = await gc(t, { maxDeletions: 3 });
    expect(one).toMatchObject({ manifests_deleted: 2, packs_deleted: 1, more: true });
    const rest = await gc(t, { maxDeletions: 3 });
    expect(rest).toMatchObject({ manifests_deleted: 0, packs_deleted: 1, more: false });
    expect(await text(t, t.ws, "a.txt")).toBe("3\n");
  });

  it("a pack an undo record names stays after its manifest goes, and the undo still restores from it", async () => {
    const t = await newTenant(app);
    await imp(t, { "low.txt": "lower bytes\n" });
    const m1 = (await meta(t, t.ws)).base!;
    const p1 = (await layers(t)).packs;
    await t.call("read", { file_path: "low.txt" });
    const w = await t.call("write", { file_path: "low.txt", content: "upper bytes\n" });
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    expect((await post(t, `/v1/workspaces/${t.ws}/checkpoints`, { name: "c" })).status).toBe(201);
    expect((await meta(t, t.ws)).base).not.toBe(m1);
    const r = await gc(t);
    expect(r.roots.undo_packs).toBe(1);
    expect(r.manifests_deleted).toBe(1);
    expect(r.packs_deleted).toBe(0);
    const after = await layers(t);
    for (const p of p1) expect(after.packs).toContain(p);
    const u = await t.req(`/v1/workspaces/${t.ws}/undo`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify({ call_id: w.body.call_id }) });
    expect(u.status, await u.clone().text()).toBe(200);
    expect(await text(t, t.ws, "low.txt")).toBe("lower bytes\n");
  });

  it("tenant B's objects are never touched by tenant A's GC; the route answers the report, admin only", async () => {
    const a = await newTenant(app);
    const b = await newTenant(app);
    for (const t of [a, b]) {
      await imp(t, { "f.txt": `${t.tenant} 1\n` });
      await imp(t, { "f.txt": `${t.tenant} 2\n` });
    }
    const bBefore = await keys(`t/${b.tenant}/`);
    const r = await gc(a);
    expect(r.manifests_deleted).toBe(1);
    expect(await keys(`t/${b.tenant}/`)).toEqual(bBefore);

    const route = await admin(app, `/v1/admin/tenants/${b.tenant}/gc`, { grace_seconds: 3600 });
    expect(route.status, JSON.stringify(route.body)).toBe(200);
    expect(route.body).toMatchObject({ manifests_deleted: 0, packs_deleted: 0, kept_young: 2, more: false, dry_run: false, roots: { workspaces: 1, manifests: 1, undo_packs: 0 } });
    expect(await keys(`t/${b.tenant}/`)).toEqual(bBefore);
    const noBody = await app.request(`/v1/admin/tenants/${b.tenant}/gc`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}` } });
    expect(noBody.status, await noBody.clone().text()).toBe(200);
    expect((await admin(app, `/v1/admin/tenants/${b.tenant}/gc`, { grace_seconds: 1 })).status).toBe(400);
    expect((await admin(app, `/v1/admin/tenants/t-nosuch/gc`, {})).status).toBe(404);
    const asTenant = await b.req(`/v1/admin/tenants/${b.tenant}/gc`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(asTenant.status).toBe(401);
  });
});

describe("GC refuses to guess", () => {
  it("a base manifest that cannot be read stops the pack sweep; an unreadable checkpoint record stops the call", async () => {
    const t = await newTenant(app);
    await imp(t, { "a.txt": "1\n" });
    await imp(t, { "a.txt": "2\n" });
    expect((await post(t, "/v1/workspaces", { id: "dangling" })).status).toBe(201);
    const key = `t/${t.tenant}/w/dangling/meta.json`;
    const m = JSON.parse(await (await env.FILES.get(key))!.text());
    await env.FILES.put(key, JSON.stringify({ ...m, base: "nosuchmanifest0" }));
    const before = await layers(t);
    const r = await gc(t);
    expect(r.missing_manifests).toEqual(["nosuchmanifest0"]);
    expect(r.packs_deleted).toBe(0);
    expect((await layers(t)).packs).toEqual(before.packs);

    await env.FILES.put(`t/${t.tenant}/w/dangling/x/checkpoints/badrecord0.json`, "{not json");
    const snap = await keys(`t/${t.tenant}/`);
    await expect(gc(t)).rejects.toMatchObject({ code: "INTERNAL" });
    expect(await keys(`t/${t.tenant}/`)).toEqual(snap);
  });
});

describe("GC and a workspace created during the mark", () => {
  it("a workspace that appears after the first listing (a fork whose origin is deleted meanwhile) keeps its base", async () => {
    const t = await newTenant(app);
    await imp(t, { "a.txt": "old\n" });
    const m1 = (await meta(t, t.ws)).base!;
    const p1 = (await layers(t)).packs;
    await imp(t, { "a.txt": "new\n" });
    const metaKey = `t/${t.tenant}/w/${t.ws}/meta.json`;
    let injected = false;
    const racing = {
      ...storage,
      get: async (key: string, opts?: Parameters<typeof storage.get>[1]) => {
        if (key === metaKey && !injected) {
          injected = true; // a fork created now, on the old manifest (as if from a checkpoint whose origin is then deleted)
          await env.FILES.put(`t/${t.tenant}/w/late/meta.json`, JSON.stringify({ id: "late", name: "late", created_at: new Date().toISOString(), base: m1 }));
        }
        return storage.get(key, opts);
      },
    };
    const r = await collectGarbage(racing, t.tenant, { now: LATER() });
    expect(injected).toBe(true);
    expect(r.roots.workspaces).toBe(2);
    expect(r.manifests_deleted).toBe(0);
    const after = await layers(t);
    expect(after.manifests.some((k) => k.includes(m1))).toBe(true);
    for (const p of p1) expect(after.packs).toContain(p);
    expect(await text(t, "late", "a.txt")).toBe("old\n");
  });
});

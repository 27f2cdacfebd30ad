/**
 * Deleting checkpoints (DELETE /v1/workspaces/{ws}/checkpoints/{id}, lib/layers/checkpoints.ts) and
 * what GC then reclaims (lib/layers/gc.ts), in workerd over local R2. "Old" is simulated as in
 * gc.test.ts: the collector runs with `now` two hours ahead, with the smallest grace (60 s).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newTenant, testApp, upload, type Tenant } from "../../helpers.js";
import { tar } from "../archive/archives.js";
import { importReq, snapshot } from "../archive/helpers.js";
import { collectGarbage } from "../../../lib/layers/gc.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";

const app = testApp();
const storage = r2Driver(env.FILES);
const gc = (t: Tenant) => collectGarbage(storage, t.tenant, { now: Date.now() + 2 * 3600 * 1000, graceSeconds: 60 });

async function ids(prefix: string): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.FILES.list({ prefix, ...(cursor ? { cursor } : {}) });
    out.push(...page.objects.filter((o) => !/\/audit\//.test(o.key)).map((o) => o.key.slice(prefix.length))); // a refused call's audit entry stays
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return out.sort();
}
const layers = async (t: Tenant) => ({ manifests: await ids(`t/${t.tenant}/manifests/`), packs: await ids(`t/${t.tenant}/packs/`) });
const packsOf = async (t: Tenant, manifest: string) => [...(JSON.parse(await (await env.FILES.get(`t/${t.tenant}/manifests/${manifest}`))!.text()) as { packs: string[] }).packs].sort();
const base = async (t: Tenant, ws: string) => (JSON.parse(await (await env.FILES.get(`t/${t.tenant}/w/${ws}/meta.json`))!.text()) as { base?: string }).base!;
const json = async (r: Response) => ({ status: r.status, body: (await r.json()) as any });
const post = (t: Tenant, path: string, body: unknown = {}) => t.req(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then(json);
const del = (t: Tenant, path: string) => t.req(path, { method: "DELETE" }).then(json);
const get = (t: Tenant, path: string) => t.req(path).then(json);
const checkpoint = async (t: Tenant, name: string, ws = t.ws) => {
  const r = await post(t, `/v1/workspaces/${ws}/checkpoints`, { name });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body as { id: string; manifest: string };
};
const text = async (t: Tenant, ws: string, p: string) => {
  const r = await t.req(`/v1/workspaces/${ws}/files/${p}`);
  return r.status === 200 ? await r.text() : `(${r.status})`;
};
const imp = async (t: Tenant, files: Record<string, string>, query = "?mode=replace", ws = t.ws) => {
  const r = await importReq(t, tar(Object.entries(files).map(([name, body]) => ({ name, body }))), query, {}, ws);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
};
const grepFiles = async (t: Tenant, pattern: string) => {
  const g = await t.call("grep", { pattern, output_mode: "files_with_matches" });
  expect(g.status, JSON.stringify(g.body)).toBe(200);
  expect(g.body.data.complete).toBe(true);
  return [...(g.body.data.files as string[])].sort();
};

describe("DELETE and GET /v1/workspaces/{ws}/checkpoints/{id}", () => {
  it("get answers the record; delete answers it with a hint, then the checkpoint is gone everywhere (404 NOT_FOUND)", async () => {
    const t = await newTenant(app);
    await upload(t, "a.txt", "one\n");
    const cp = await checkpoint(t, "first");
    const one = await get(t, `/v1/workspaces/${t.ws}/checkpoints/${cp.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: cp.id, name: "first", workspace: t.ws, manifest: cp.manifest, files: 1 });

    const d = await del(t, `/v1/workspaces/${t.ws}/checkpoints/${cp.id}`);
    expect(d.status, JSON.stringify(d.body)).toBe(200);
    expect(d.body.deleted).toBe(true);
    expect(d.body.checkpoint).toEqual(one.body);
    // Its manifest is still the workspace's base: the hint says nothing is freed yet.
    expect(d.body.hint).toContain("current base");
    expect(d.body.hint).toContain("nothing is freed yet");

    for (const [what, r] of [
      ["get", await get(t, `/v1/workspaces/${t.ws}/checkpoints/${cp.id}`)],
      ["delete again", await del(t, `/v1/workspaces/${t.ws}/checkpoints/${cp.id}`)],
      ["restore", await post(t, `/v1/workspaces/${t.ws}/checkpoints/${cp.id}/restore`)],
      ["diff", await get(t, `/v1/workspaces/${t.ws}/diff?from=${cp.id}`)],
      ["fork", await post(t, "/v1/workspaces", { id: "f", from_workspace: t.ws, checkpoint: cp.id })],
    ] as const) {
      expect(r.status, what).toBe(404);
      expect(r.body.error.code, what).toBe("NOT_FOUND");
      expect(r.body.error.message, what).toContain(`GET /v1/workspaces/${t.ws}/checkpoints`);
    }
    expect((await get(t, `/v1/workspaces/${t.ws}/checkpoints`)).body.checkpoints).toEqual([]);
    expect(await text(t, t.ws, "a.txt")).toBe("one\n");

    // A checkpoint whose manifest is no longer the base: the hint says the next GC reclaims it.
    const c2 = await checkpoint(t, "second");
    await upload(t, "a.txt", "two\n");
    await checkpoint(t, "third");
    const d2 = await del(t, `/v1/workspaces/${t.ws}/checkpoints/${c2.id}`);
    expect(d2.status).toBe(200);
    expect(d2.body.hint).not.toContain("current base");
    expect(d2.body.hint).toContain("next GC");
  });

  it("an unknown checkpoint, a missing workspace and another tenant's checkpoint answer alike: 404 NOT_FOUND, nothing deleted", async () => {
    const a = await newTenant(app);
    const b = await newTenant(app);
    await upload(a, "s.txt", "a's\n");
    const cp = await checkpoint(a, "a");
    const before = await snapshot(a.tenant);
    for (const [who, path] of [
      [b, `/v1/workspaces/${a.ws}/checkpoints/${cp.id}`], // b has a "main" too, without this checkpoint
      [b, `/v1/workspaces/nosuch/checkpoints/${cp.id}`],
      [a, `/v1/workspaces/nosuch/checkpoints/${cp.id}`],
      [a, `/v1/workspaces/${a.ws}/checkpoints/aaaaaaaaaaaaaaaa`],
      [a, `/v1/workspaces/${a.ws}/checkpoints/not-an-id`],
    ] as const) {
      for (const r of [await del(who, path), await get(who, path)]) {
        expect(r.status, path).toBe(404);
        expect(r.body.error.code, path).toBe("NOT_FOUND");
        expect(JSON.stringify(r.body)).not.toContain(a.tenant);
      }
    }
    expect(await snapshot(a.tenant)).toEqual(before);
    const readOnly = await newTenant(app, { scopes: ["read"] });
    expect((await del(readOnly, `/v1/workspaces/${readOnly.ws}/checkpoints/${cp.id}`)).status).toBe(403);
  });

  it("concurrent deletes of one checkpoint: exactly one 200, every other a 404 NOT_FOUND (never an error)", async () => {
    const t = await newTenant(app);
    for (let round = 0; round < 3; round++) {
      await upload(t, "r.txt", `round ${round}\n`);
      const cp = await checkpoint(t, `r${round}`);
      const all = await Promise.all(Array.from({ length: 8 }, () => del(t, `/v1/workspaces/${t.ws}/checkpoints/${cp.id}`)));
      expect(all.map((r) => `${r.status} ${r.body.error?.code ?? ""}`.trim()).sort()).toEqual(["200", ...Array(7).fill("404 NOT_FOUND")]);
    }
    expect((await get(t, `/v1/workspaces/${t.ws}/checkpoints`)).body.checkpoints).toEqual([]);
  });
});

describe("GC after deleting checkpoints", () => {
  it("a fork keeps working after the checkpoint it came from is deleted and GC ran; the origin too", async () => {
    const t = await newTenant(app);
    await imp(t, { "a.txt": "alpha\n", "dir/b.txt": "bravo\n", "c.txt": "charlie\n" });
    const f = await post(t, "/v1/workspaces", { id: "fork", from_workspace: t.ws });
    expect(f.status, JSON.stringify(f.body)).toBe(201);
    const forkBase = await base(t, "fork");
    // The origin moves on: its base is no longer the fork's.
    await upload(t, "a.txt", "alpha 2\n");
    await upload(t, "d.txt", "delta\n");
    await checkpoint(t, "later");
    expect(await base(t, t.ws)).not.toBe(forkBase);
    const d = await del(t, `/v1/workspaces/${t.ws}/checkpoints/${f.body.checkpoint}`);
    expect(d.status, JSON.stringify(d.body)).toBe(200);
    expect(d.body.checkpoint.manifest).toBe(forkBase);

    const r = await gc(t);
    expect(r.missing_manifests).toEqual([]);
    const after = await layers(t);
    expect(after.manifests).toContain(forkBase);
    for (const p of await packsOf(t, forkBase)) expect(after.packs).toContain(p);
    for (const [p, want] of [["a.txt", "alpha\n"], ["dir/b.txt", "bravo\n"], ["c.txt", "charlie\n"], ["d.txt", "(404)"]]) expect(await text(t, "fork", p!), p).toBe(want);
    for (const [p, want] of [["a.txt", "alpha 2\n"], ["dir/b.txt", "bravo\n"], ["c.txt", "charlie\n"], ["d.txt", "delta\n"]]) expect(await text(t, t.ws, p!), p).toBe(want);

    // The fork's base was all that held that manifest: with the fork gone, GC takes it.
    expect((await del(t, "/v1/workspaces/fork")).status).toBe(200);
    const r2 = await gc(t);
    expect(r2.manifests_deleted).toBe(1);
    expect((await layers(t)).manifests).not.toContain(forkBase);
    expect(await text(t, t.ws, "a.txt")).toBe("alpha 2\n");
    expect(await text(t, t.ws, "c.txt")).toBe("charlie\n");
  });

  it("GC reclaims a deleted checkpoint's manifest and the packs only it used; the next checkpoint and the current base stay, search stays exact", async () => {
    const t = await newTenant(app);
    await imp(t, { "keep.txt": "keep needle\n", "x.txt": "x zero\n" });
    await upload(t, "x.txt", "x alpha needle\n");
    await upload(t, "y.txt", "y alpha\n");
    const A = await checkpoint(t, "A");
    await upload(t, "x.txt", "x bravo needle\n");
    await upload(t, "y.txt", "y bravo\n");
    const B = await checkpoint(t, "B");
    await imp(t, { "new.txt": "new needle\n" }, "?mode=merge"); // the current base: neither A's nor B's
    await upload(t, "upper.txt", "upper needle\n");
    const current = await base(t, t.ws);
    expect(new Set([A.manifest, B.manifest, current]).size).toBe(3);
    const [aPacks, bPacks, curPacks] = [await packsOf(t, A.manifest), await packsOf(t, B.manifest), await packsOf(t, current)];
    const aDead = aPacks.filter((p) => !bPacks.includes(p) && !curPacks.includes(p));
    expect(aDead.length).toBe(1); // the pack A sealed (x and y alpha): both files changed since

    // Before the delete, GC leaves A alone (it only takes the import's replaced base).
    await gc(t);
    const held = await layers(t);
    expect(held.manifests).toEqual([A.manifest, B.manifest, current].sort());
    for (const p of aDead) expect(held.packs).toContain(p);

    expect((await del(t, `/v1/workspaces/${t.ws}/checkpoints/${A.id}`)).status).toBe(200);
    const r = await gc(t);
    expect(r).toMatchObject({ manifests_deleted: 1, packs_deleted: aDead.length, missing_manifests: [], more: false });
    expect(r.bytes_freed).toBeGreaterThan(0);
    const after = await layers(t);
    expect(after.manifests).toEqual([B.manifest, current].sort());
    expect(after.packs).toEqual([...new Set([...bPacks, ...curPacks])].sort());

    // The current state reads and searches exactly; A's content is nowhere.
    for (const [p, want] of [["keep.txt", "keep needle\n"], ["x.txt", "x bravo needle\n"], ["y.txt", "y bravo\n"], ["new.txt", "new needle\n"], ["upper.txt", "upper needle\n"]]) expect(await text(t, t.ws, p!), p).toBe(want);
    expect(await grepFiles(t, "needle")).toEqual(["keep.txt", "new.txt", "upper.txt", "x.txt"]);
    expect(await grepFiles(t, "alpha")).toEqual([]);
    expect(await grepFiles(t, "bravo")).toEqual(["x.txt", "y.txt"]);
    // B still restores, and diffs against the current state.
    const diff = await get(t, `/v1/workspaces/${t.ws}/diff?from=${B.id}`);
    expect(diff.status).toBe(200);
    expect(diff.body.changes.map((c: any) => `${c.status} ${c.path}`).sort()).toEqual(["added new.txt", "added upper.txt"]);
    const restored = await post(t, `/v1/workspaces/${t.ws}/checkpoints/${B.id}/restore`);
    expect(restored.status, JSON.stringify(restored.body)).toBe(200);
    for (const [p, want] of [["keep.txt", "keep needle\n"], ["x.txt", "x bravo needle\n"], ["y.txt", "y bravo\n"], ["new.txt", "(404)"], ["upper.txt", "(404)"]]) expect(await text(t, t.ws, p!), p).toBe(want);
    expect(await grepFiles(t, "needle")).toEqual(["keep.txt", "x.txt"]);
  });
});

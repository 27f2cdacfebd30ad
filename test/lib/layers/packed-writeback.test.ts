/**
 * Packed write-back (POST /v1/sync/stage + /v1/sync/commit; lib/sync/stage-server.ts,
 * lib/layers/commit-staged.ts) on real local R2 (workerd), through the sync API's HTTP client:
 * files become current with one layer switch and MD5 etags; receipts cannot be forged or moved
 * to another workspace; conditions, `alone`, racing writers, a concurrent checkpoint, undo,
 * search, and a plain workspace becoming layered.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newTenant, testApp, upload, type Tenant } from "../../helpers.js";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { handleSync } from "../../../lib/sync/server.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import type { PutManyItem } from "../../../lib/sync/put-batch.js";
import { ManifestCache } from "../../../lib/layers/manifest.js";
import { md5Hex } from "../../../lib/storage/md5.js";
import { filesDriver, readMeta } from "../../../lib/layers/open.js";
import { newStamp } from "../../../lib/workspace/undo-record.js";
import { searchIndexer } from "../../../lib/search/indexer.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { isConditionFailed, type PutOptions, type StorageDriver } from "../../../lib/storage/types.js";

const raw = r2Driver(env.FILES);
const SECRET = "packed-writeback-secret-0123456789";
const enc = new TextEncoder();
const app = testApp();

type Hook = (key: string, opts: PutOptions) => Promise<void>;
interface Probe {
  hook: Hook | null;
  ops: string[];
}
/** Real R2, every operation logged by kind; `hook` runs before a put (once it clears itself). */
function probed(p: Probe): StorageDriver {
  const kind = (k: string) => (k.includes("/packs/") ? "pack" : k.includes("/manifests/") ? "manifest" : k.endsWith("/meta.json") ? "meta" : k.includes("/x/index/") ? "index" : k.includes("/x/undo/") ? "undo" : k.includes("/f/") ? "file" : "other");
  return {
    ...raw,
    name: "probed",
    async put(key, body, opts = {}) {
      p.ops.push(`put ${kind(key)}`);
      if (p.hook) await p.hook(key, opts);
      return raw.put(key, body, opts);
    },
    async get(key, o) {
      p.ops.push(`get ${kind(key)}`);
      return raw.get(key, o);
    },
    async head(key) {
      p.ops.push(`head ${kind(key)}`);
      return raw.head(key);
    },
    async list(o) {
      p.ops.push(`list ${kind(o.prefix)}`);
      return raw.list(o);
    },
    async delete(k) {
      p.ops.push("delete");
      return raw.delete(k);
    },
  };
}

async function client(t: Tenant, storage: StorageDriver, opts: { ws?: string; run?: string; u?: { s: string; c: string; n: string } } = {}) {
  const fetchFn = ((input: RequestInfo | URL, init?: RequestInit) =>
    handleSync(new Request(input, init), { driver: storage, manifests: new ManifestCache(), kv: storageKeyValue(memoryDriver(), "kv/"), secret: SECRET, listeners: [searchIndexer({ vacuumChance: 0 })] })) as typeof fetch;
  const token = await mintSyncToken(SECRET, { t: t.tenant, w: opts.ws ?? t.ws, r: opts.run ?? "run1", ...(opts.u ? { u: opts.u } : {}) }, 60);
  return { sync: httpSyncClient({ url: "https://api.example", token, fetch: fetchFn }), token, fetchFn };
}

const text = async (t: Tenant, p: string) => {
  const r = await t.req(`/v1/workspaces/${t.ws}/files/${p}`);
  return r.status === 200 ? { body: await r.text(), etag: (r.headers.get("etag") ?? "").replace(/"/g, "") } : null;
};
const post = async (t: Tenant, path: string, body?: unknown, headers: Record<string, string> = {}) => {
  const r = await t.req(path, { method: "POST", headers: { "content-type": "application/json", ...headers }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  return { status: r.status, body: (await r.json()) as any };
};
const item = (path: string, content: string, cond: { ifMatch?: string } = {}): PutManyItem => ({ path, bytes: enc.encode(content), ...(cond.ifMatch ? { ifMatch: cond.ifMatch } : { ifNoneMatch: "*" as const }) });

/** A layered workspace: `n` files uploaded and sealed by a checkpoint. */
async function layered(t: Tenant, files: Record<string, string>): Promise<Record<string, string>> {
  const etags: Record<string, string> = {};
  for (const [p, b] of Object.entries(files)) etags[p] = await upload(t, p, b);
  expect((await post(t, `/v1/workspaces/${t.ws}/checkpoints`, { name: "base" })).status).toBe(201);
  return etags;
}

/** Stages `items` (one request) and commits; the per-file outcome. */
async function stageCommit(sync: Awaited<ReturnType<typeof client>>["sync"], items: PutManyItem[]) {
  const s = (await sync.stage!(items))!;
  expect(s.files.every((f) => f.ok), JSON.stringify(s.files)).toBe(true);
  const c = (await sync.commit!([s.receipt], items.map((i) => i.path)))!;
  return Object.fromEntries(c.map((r) => [r.path, r.ok ? "written" : "conflict" in r ? "conflict" : "alone" in r ? "alone" : `error ${r.error}`]));
}

describe("packed write-back: stage + commit", () => {
  it("makes 300 new files and a modified lower file current with one switch: MD5 etags, nothing upper, a handful of storage ops", async () => {
    const t = await newTenant(app);
    const base = await layered(t, { "src/a.ts": "export const a = 1;\n", "src/b.ts": "b\n" });
    const before = (await readMeta(raw, t.tenant, t.ws))!;
    const probe: Probe = { hook: null, ops: [] };
    const { sync } = await client(t, probed(probe));
    const items = Array.from({ length: 300 }, (_, i) => item(`gen/f${String(i).padStart(3, "0")}.txt`, `packed file ${i} zebra${i}\n`));
    items.push(item("src/a.ts", "export const a = 2;\n", { ifMatch: base["src/a.ts"] }));
    const out = await stageCommit(sync, items);
    expect(Object.values(out).every((v) => v === "written"), JSON.stringify(out)).toBe(true);
    const after = (await readMeta(raw, t.tenant, t.ws))!;
    expect(after.meta.base).not.toBe(before.meta.base);
    expect(after.meta.seq).toBe((before.meta.seq ?? 0) + 1);
    expect(await text(t, "gen/f007.txt")).toEqual({ body: "packed file 7 zebra7\n", etag: md5Hex(enc.encode("packed file 7 zebra7\n")) });
    expect((await text(t, "src/a.ts"))!.body).toBe("export const a = 2;\n");
    expect((await text(t, "src/b.ts"))!.body).toBe("b\n");
    // Nothing was written to the upper layer: every file lives in the pack.
    expect((await raw.list({ prefix: `t/${t.tenant}/w/${t.ws}/f/` })).objects).toEqual([]);
    const g = await t.call("glob", { pattern: "gen/*.txt" });
    expect(g.body.data.total_found).toBe(300);
    // Storage writes for 301 files: 1 pack, 1 manifest, 1 pointer, index segments; no per-file object.
    const puts = probe.ops.filter((o) => o.startsWith("put "));
    expect(puts.filter((o) => o === "put file")).toEqual([]);
    expect(puts.filter((o) => o === "put pack")).toEqual(["put pack"]);
    expect(puts.filter((o) => o === "put manifest")).toEqual(["put manifest"]);
    expect(puts.filter((o) => o === "put meta")).toEqual(["put meta"]);
    expect(probe.ops.length, probe.ops.join(", ")).toBeLessThan(25);
    // Search: the stage request indexed the bytes (one segment); grep finds them.
    const grep = await t.call("grep", { pattern: "zebra299", output_mode: "files_with_matches" });
    expect(grep.body.output).toContain("gen/f299.txt");
  });

  it("refuses a forged receipt and another workspace's receipt: 400, nothing switched", async () => {
    const t = await newTenant(app);
    await layered(t, { "a.txt": "a" });
    const other = await post(t, "/v1/workspaces", { id: "other" });
    expect(other.status).toBe(201);
    const before = (await readMeta(raw, t.tenant, t.ws))!;
    const mine = await client(t, raw);
    const theirs = await client(t, raw, { ws: "other" });
    const s = (await theirs.sync.stage!([item("evil.txt", "from other")]))!;
    // Another workspace's receipt, and one for another run of this workspace.
    await expect(mine.sync.commit!([s.receipt], ["evil.txt"])).rejects.toThrow(/400.*another run or workspace/);
    const run2 = await client(t, raw, { run: "run2" });
    const s2 = (await run2.sync.stage!([item("evil.txt", "other run")]))!;
    await expect(mine.sync.commit!([s2.receipt], ["evil.txt"])).rejects.toThrow(/400.*another run or workspace/);
    // A receipt of this run with its entries edited (point at other bytes): the signature fails.
    const ok = (await mine.sync.stage!([item("x.txt", "x")]))!;
    const [body, mac] = ok.receipt.split(".");
    const j = JSON.parse(atob(body!.replace(/-/g, "+").replace(/_/g, "/")));
    j.packs = (JSON.parse(atob(s.receipt.split(".")[0]!.replace(/-/g, "+").replace(/_/g, "/")))).packs;
    const forged = `${btoa(JSON.stringify(j)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")}.${mac}`;
    await expect(mine.sync.commit!([forged], ["x.txt"])).rejects.toThrow(/400.*bad signature/);
    // A good receipt with a bad one: nothing at all.
    await expect(mine.sync.commit!([ok.receipt, forged], ["x.txt", "x.txt"])).rejects.toThrow(/400/);
    const after = (await readMeta(raw, t.tenant, t.ws))!;
    expect(after.etag).toBe(before.etag);
    expect(await text(t, "x.txt")).toBeNull();
    expect(await text(t, "evil.txt")).toBeNull();
  });

  it("conditions: an if_match that no longer holds is a conflict; a path with an upper object is `alone`; a create where a file appeared is a conflict", async () => {
    const t = await newTenant(app);
    const base = await layered(t, { "edited.txt": "e0", "upper.txt": "u0", "c.txt": "c0" });
    const upperEtag = await upload(t, "upper.txt", "u1"); // an upper object over the lower version
    const { sync } = await client(t, raw);
    const s = (await sync.stage!([item("edited.txt", "runner", { ifMatch: base["edited.txt"] }), item("upper.txt", "runner-u", { ifMatch: upperEtag }), item("new.txt", "runner-new"), item("c.txt", "runner-c", { ifMatch: base["c.txt"] })]))!;
    // Tools change two of them after the stage.
    await upload(t, "edited.txt", "tool");
    await upload(t, "new.txt", "tool-new");
    const c = (await sync.commit!([s.receipt], ["edited.txt", "upper.txt", "new.txt", "c.txt"]))!;
    expect(c.map((r) => (r.ok ? "written" : "conflict" in r ? "conflict" : "alone"))).toEqual(["conflict", "alone", "conflict", "written"]);
    expect((await text(t, "edited.txt"))!.body).toBe("tool");
    expect((await text(t, "upper.txt"))!.body).toBe("u1");
    expect((await text(t, "new.txt"))!.body).toBe("tool-new");
    expect((await text(t, "c.txt"))!.body).toBe("runner-c");
  });

  it("a tool create racing the commit (between its listing and its switch): exactly one visible, the runner's reported conflict", async () => {
    const t = await newTenant(app);
    await layered(t, { "a.txt": "a" });
    const probe: Probe = { hook: null, ops: [] };
    const { sync } = await client(t, probed(probe));
    const s = (await sync.stage!([item("race.txt", "runner"), item("calm.txt", "calm")]))!;
    probe.hook = async (key, opts) => {
      if (!key.endsWith(`/w/${t.ws}/meta.json`) || opts.ifMatch === undefined) return;
      probe.hook = null;
      const w = await t.call("write", { file_path: "race.txt", content: "tool" });
      expect(w.status, JSON.stringify(w.body)).toBe(200);
    };
    const c = (await sync.commit!([s.receipt], ["race.txt", "calm.txt"]))!;
    expect(c.map((r) => (r.ok ? "written" : "conflict" in r ? "conflict" : "alone"))).toEqual(["conflict", "written"]);
    expect((await text(t, "race.txt"))!.body).toBe("tool");
    expect((await text(t, "calm.txt"))!.body).toBe("calm");
  });

  it("a concurrent checkpoint during the commit: the switch is retried, nothing lost", async () => {
    const t = await newTenant(app);
    await layered(t, { "a.txt": "a" });
    await upload(t, "u.txt", "upper before");
    const probe: Probe = { hook: null, ops: [] };
    const { sync } = await client(t, probed(probe));
    const s = (await sync.stage!([item("n1.txt", "one"), item("n2.txt", "two")]))!;
    probe.hook = async (key, opts) => {
      if (!key.endsWith(`/w/${t.ws}/meta.json`) || opts.ifMatch === undefined) return;
      probe.hook = null;
      const cp = await post(t, `/v1/workspaces/${t.ws}/checkpoints`, { name: "meanwhile" });
      expect(cp.status, JSON.stringify(cp.body)).toBe(201);
    };
    const c = (await sync.commit!([s.receipt], ["n1.txt", "n2.txt"]))!;
    expect(c.every((r) => r.ok), JSON.stringify(c)).toBe(true);
    expect(probe.ops.filter((o) => o === "put meta")).toHaveLength(2); // refused once, then switched
    expect((await text(t, "n1.txt"))!.body).toBe("one");
    expect((await text(t, "u.txt"))!.body).toBe("upper before");
    expect((await text(t, "a.txt"))!.body).toBe("a");
  });

  it("a pointer that keeps moving (3 switches refused): every file is answered `alone` (the ordinary put writes it), nothing switched by the commit", async () => {
    const t = await newTenant(app);
    await layered(t, { "a.txt": "a" });
    const probe: Probe = { hook: null, ops: [] };
    const { sync } = await client(t, probed(probe));
    const s = (await sync.stage!([item("n1.txt", "one")]))!;
    let moved = 0;
    const hook: Hook = async (key, opts) => {
      if (!key.endsWith(`/w/${t.ws}/meta.json`) || opts.ifMatch === undefined) return;
      moved++;
      await upload(t, `u${moved}.txt`, "x");
      expect((await post(t, `/v1/workspaces/${t.ws}/checkpoints`, { name: `m${moved}` })).status).toBe(201);
    };
    probe.hook = hook;
    const c = (await sync.commit!([s.receipt], ["n1.txt"]))!;
    probe.hook = null;
    expect(moved).toBe(3);
    expect(c).toEqual([{ path: "n1.txt", ok: false, alone: true }]);
    expect(await text(t, "n1.txt")).toBeNull();
    expect((await text(t, "u3.txt"))!.body).toBe("x");
  });

  it("undo of the run's call puts the workspace back: created files deleted, a modified lower file restored", async () => {
    const t = await newTenant(app);
    const base = await layered(t, { "keep.txt": "keep", "mod.txt": "old bytes" });
    const u = { s: "s1", c: newStamp(), n: "bash" };
    const { sync } = await client(t, raw, { u });
    const out = await stageCommit(sync, [item("made/one.txt", "1"), item("made/two.txt", "2"), item("mod.txt", "new bytes", { ifMatch: base["mod.txt"] })]);
    expect(Object.values(out)).toEqual(["written", "written", "written"]);
    const r = await post(t, `/v1/workspaces/${t.ws}/undo`, { call_id: `${u.s}~${u.c}` }, { "x-session-id": "s1" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await text(t, "made/one.txt")).toBeNull();
    expect(await text(t, "made/two.txt")).toBeNull();
    expect((await text(t, "mod.txt"))!.body).toBe("old bytes");
    expect((await text(t, "keep.txt"))!.body).toBe("keep");
  });

  it("a plain workspace becomes layered: tools, search, sync manifest, export and a checkpoint after it", async () => {
    const t = await newTenant(app);
    const existing = await upload(t, "old.txt", "plain file");
    expect((await readMeta(raw, t.tenant, t.ws))!.meta.base ?? null).toBeNull();
    const { sync } = await client(t, raw);
    const out = await stageCommit(sync, [item("p/a.txt", "alpha quokka"), item("p/b.txt", "beta"), item("old.txt", "changed", { ifMatch: existing })]);
    expect(out).toEqual({ "p/a.txt": "written", "p/b.txt": "written", "old.txt": "alone" });
    expect((await readMeta(raw, t.tenant, t.ws))!.meta.base).toBeTruthy();
    expect((await text(t, "p/a.txt"))!.body).toBe("alpha quokka");
    expect((await text(t, "old.txt"))!.body).toBe("plain file");
    const ls = await t.call("glob", { pattern: "**/*.txt" });
    expect(ls.body.data.total_found).toBe(3);
    expect((await t.call("grep", { pattern: "quokka", output_mode: "files_with_matches" })).body.output).toContain("p/a.txt");
    expect((await t.call("read", { file_path: "p/b.txt" })).status).toBe(200);
    expect((await t.call("edit", { file_path: "p/b.txt", old_string: "beta", new_string: "BETA" })).status).toBe(200);
    const m = await sync.manifest();
    expect(m.map((e) => e.path).sort()).toEqual(["old.txt", "p/a.txt", "p/b.txt"]);
    const ex = await t.req(`/v1/workspaces/${t.ws}/export`);
    expect(ex.status).toBe(200);
    expect((await ex.arrayBuffer()).byteLength).toBeGreaterThan(0);
    const cp = await post(t, `/v1/workspaces/${t.ws}/checkpoints`, { name: "after" });
    expect(cp.status, JSON.stringify(cp.body)).toBe(201);
    expect((await text(t, "p/b.txt"))!.body).toBe("BETA");
  });

  it("a staged pack that is gone by the commit (GC past its grace period) is never pointed at: its files are answered `alone`", async () => {
    const t = await newTenant(app);
    await layered(t, { "a.txt": "a" });
    const before = (await readMeta(raw, t.tenant, t.ws))!;
    const { sync } = await client(t, raw);
    const s = (await sync.stage!([item("lost.txt", "bytes"), item("lost2.txt", "more")]))!;
    const staged = JSON.parse(atob(s.receipt.split(".")[0]!.replace(/-/g, "+").replace(/_/g, "/"))).packs as string[];
    expect(staged).toHaveLength(1);
    await raw.delete(`t/${t.tenant}/packs/${staged[0]}`);
    const c = (await sync.commit!([s.receipt], ["lost.txt", "lost2.txt"]))!;
    expect(c.map((r) => ("alone" in r ? "alone" : "other"))).toEqual(["alone", "alone"]);
    expect((await readMeta(raw, t.tenant, t.ws))!.etag).toBe(before.etag);
  });

  it("a create whose request opened the workspace as plain, landing after the first packed commit, is undone and refused", async () => {
    const t = await newTenant(app);
    const deps = { storage: raw, manifests: new ManifestCache() };
    const stale = await filesDriver(deps, t.tenant, t.ws, (await readMeta(raw, t.tenant, t.ws))!.meta); // opened plain
    const { sync } = await client(t, raw);
    expect(await stageCommit(sync, [item("same.txt", "runner")])).toEqual({ "same.txt": "written" });
    const key = `t/${t.tenant}/w/${t.ws}/f/same.txt`;
    const e = await stale.put(key, "late tool", { ifNoneMatch: "*" }).then(() => null, (x: unknown) => x);
    expect(isConditionFailed(e)).toBe(true);
    expect(await raw.head(key)).toBeNull(); // undone: the committed version is what everyone sees
    expect((await text(t, "same.txt"))!.body).toBe("runner");
    // A create of another path in the same stale view stands.
    await stale.put(`t/${t.tenant}/w/${t.ws}/f/other.txt`, "fine", { ifNoneMatch: "*" });
    expect((await text(t, "other.txt"))!.body).toBe("fine");
  });

  it("the same for a request that opened the layered workspace before a commit: its create of a committed path is undone and refused", async () => {
    const t = await newTenant(app);
    await layered(t, { "a.txt": "a" });
    const deps = { storage: raw, manifests: new ManifestCache() };
    const stale = await filesDriver(deps, t.tenant, t.ws, (await readMeta(raw, t.tenant, t.ws))!.meta); // the old base
    const { sync } = await client(t, raw);
    expect(await stageCommit(sync, [item("same.txt", "runner")])).toEqual({ "same.txt": "written" });
    const key = `t/${t.tenant}/w/${t.ws}/f/same.txt`;
    const e = await stale.put(key, "late tool", { ifNoneMatch: "*" }).then(() => null, (x: unknown) => x);
    expect(isConditionFailed(e)).toBe(true);
    expect(await raw.head(key)).toBeNull();
    expect((await text(t, "same.txt"))!.body).toBe("runner");
  });
});

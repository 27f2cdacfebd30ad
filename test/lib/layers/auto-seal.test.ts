/**
 * Automatic sealing (lib/layers/auto-seal.ts): a run's conditional manifest on a workspace with a
 * large upper layer (raw uploads) folds it into packs with no checkpoint record; two sealers race
 * and the loser leaves storage as it was; writers landing around the seal are kept; undo and read
 * records made before it still work. workerd, local R2, through the sync API's HTTP client.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newTenant, testApp, upload, type Tenant } from "../../helpers.js";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { handleSync } from "../../../lib/sync/server.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import { ManifestCache } from "../../../lib/layers/manifest.js";
import { readMeta } from "../../../lib/layers/open.js";
import { SEAL_MIN_UPPER, wantsSeal } from "../../../lib/layers/auto-seal.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import type { PutOptions, StorageDriver } from "../../../lib/storage/types.js";
import type { BatchFile } from "../../../lib/sync/batch.js";

const raw = r2Driver(env.FILES);
const SECRET = "a-test-secret-of-some-length";

type Hook = (key: string, opts: PutOptions) => Promise<void>;
/** The real driver; `hook.put` runs before a put, `hook.del` before a delete (each at most once: it clears itself). */
function hooked(hook: { put: Hook | null; del: ((keys: string[]) => Promise<void>) | null }, ops?: string[]): StorageDriver {
  return {
    ...raw,
    name: "hooked",
    async get(key, opts) {
      ops?.push(`get ${key}`);
      return raw.get(key, opts);
    },
    async list(opts) {
      ops?.push(`list ${opts.prefix}`);
      return raw.list(opts);
    },
    async put(key, body, opts = {}) {
      const h = hook.put;
      if (h) await h(key, opts);
      return raw.put(key, body, opts);
    },
    async delete(keys) {
      const h = hook.del;
      if (h) await h((typeof keys === "string" ? [keys] : keys).map((k) => (typeof k === "string" ? k : k.key)));
      return raw.delete(keys);
    },
  };
}

const appHook: { put: Hook | null; del: ((keys: string[]) => Promise<void>) | null } = { put: null, del: null };
const app = testApp({ storage: hooked(appHook) });

async function runner(t: Tenant, storage: StorageDriver = raw, autoSeal = true, background?: (p: Promise<unknown>) => void) {
  const manifests = new ManifestCache(); // per isolate, as createApp makes it
  const fetchFn = ((input: RequestInfo | URL, init?: RequestInit) =>
    handleSync(new Request(input, init), { driver: storage, manifests, kv: storageKeyValue(memoryDriver(), "kv/"), secret: SECRET, autoSeal, ...(background ? { background } : {}) })) as typeof fetch;
  return httpSyncClient({ url: "https://api.example", token: await mintSyncToken(SECRET, { t: t.tenant, w: t.ws, r: "run1" }, 60), fetch: fetchFn });
}

const fp = (t: Tenant) => `t/${t.tenant}/w/${t.ws}/f/`;
const body = (i: number) => `file ${i}\n`.repeat(1 + (i % 7));

/** n files written as raw uploads write them: one object each, a plain workspace (500 puts in flight: local R2 takes them ~2x faster than 32 at a time). */
async function rawFiles(t: Tenant, n: number): Promise<void> {
  for (let i = 0; i < n; i += 500) await Promise.all(Array.from({ length: Math.min(500, n - i) }, (_, j) => raw.put(`${fp(t)}src/f${String(i + j).padStart(4, "0")}.txt`, body(i + j))));
}

async function count(prefix: string): Promise<number> {
  let n = 0;
  let cursor: string | undefined;
  do {
    const r = await raw.list({ prefix, ...(cursor ? { cursor } : {}) });
    n += r.objects.length;
    cursor = r.cursor;
  } while (cursor);
  return n;
}

const text = async (t: Tenant, p: string) => {
  const r = await t.req(`/v1/workspaces/${t.ws}/files/${p}`);
  return r.status === 200 ? await r.text() : null;
};
const entries = (a: { files: { path: string; etag: string; size: number }[] }) => [...a.files].sort((x, y) => (x.path < y.path ? -1 : 1));

describe("the rule", () => {
  it("seals from SEAL_MIN_UPPER upper objects, when they are at least an eighth of the lower layer", () => {
    expect(wantsSeal(SEAL_MIN_UPPER - 1, 0)).toBe(false);
    expect(wantsSeal(SEAL_MIN_UPPER, 0)).toBe(true);
    expect(wantsSeal(300, 2400)).toBe(true);
    expect(wantsSeal(300, 2401)).toBe(false);
  });
});

describe("a run's manifest on a plain workspace of raw uploads", () => {
  it("seals 300 files into packs: same entries and etags, no upper object left, no checkpoint record; the next manifest is 'all the same' from one listing", async () => {
    const t = await newTenant(app);
    await rawFiles(t, 300);
    const before = (await (await runner(t, raw, false)).manifestSince({ buckets: 4 }))!;
    expect(before.layer?.base).toBeNull();
    const ops: string[] = [];
    const c = await runner(t, hooked({ put: null, del: null }, ops));
    const a = (await c.manifestSince({ buckets: 4 }))!;
    expect(entries(a)).toEqual(entries(before));
    const meta = (await readMeta(raw, t.tenant, t.ws))!.meta;
    expect(meta.base).toBeTruthy();
    expect(a.layer).toMatchObject({ base: meta.base, seq: meta.seq, count: 300 });
    expect(await count(fp(t))).toBe(0);
    expect(await count(`t/${t.tenant}/w/${t.ws}/x/checkpoints/`)).toBe(0);
    expect(await count(`t/${t.tenant}/manifests/`)).toBe(1);
    // Each upper object read once.
    expect(ops.filter((o) => o.startsWith(`get ${fp(t)}`)).length).toBe(300);
    expect(await text(t, "src/f0007.txt")).toBe(body(7));
    ops.length = 0;
    const again = (await c.manifestSince({ buckets: 4, layer: a.layer! }))!;
    expect(again.same.length).toBe(4);
    expect(ops.filter((o) => !o.includes("/meta.json")), JSON.stringify(ops)).toEqual([`list ${fp(t)}`]);
  });

  it(`below ${SEAL_MIN_UPPER} upper objects nothing is sealed and no file is read`, async () => {
    const t = await newTenant(app);
    await rawFiles(t, SEAL_MIN_UPPER - 1);
    const ops: string[] = [];
    const a = (await (await runner(t, hooked({ put: null, del: null }, ops))).manifestSince({ buckets: 4 }))!;
    expect(a.count).toBe(SEAL_MIN_UPPER - 1);
    expect((await readMeta(raw, t.tenant, t.ws))!.meta.base ?? null).toBeNull();
    expect(ops.filter((o) => o.startsWith(`get ${fp(t)}`))).toEqual([]);
    expect(await count(fp(t))).toBe(SEAL_MIN_UPPER - 1);
  });

  it("two runs starting at once: one switch wins, the loser deletes its manifest and packs and answers from the winner's layer", async () => {
    const t = await newTenant(app);
    await rawFiles(t, 300);
    let other: Awaited<ReturnType<Awaited<ReturnType<typeof runner>>["manifestSince"]>> = null;
    const hook: { put: Hook | null; del: null } = { put: null, del: null };
    hook.put = async (key, opts) => {
      if (!key.endsWith(`/w/${t.ws}/meta.json`) || opts.ifMatch === undefined) return;
      hook.put = null;
      // The other run seals the same upper layer and switches first.
      other = await (await runner(t)).manifestSince({ buckets: 4 });
    };
    const a = (await (await runner(t, hooked(hook))).manifestSince({ buckets: 4 }))!;
    const meta = (await readMeta(raw, t.tenant, t.ws))!.meta;
    expect(other!.layer!.base).toBe(meta.base);
    expect(a.layer!.base).toBe(meta.base);
    expect(entries(a)).toEqual(entries(other!));
    expect(meta.seq).toBe(1);
    // Storage as the winner left it: its manifest and its one pack only.
    expect(await count(`t/${t.tenant}/manifests/`)).toBe(1);
    expect(await count(`t/${t.tenant}/packs/`)).toBe(1);
    expect(await count(fp(t))).toBe(0);
    expect(await text(t, "src/f0299.txt")).toBe(body(299));
  });

  it("a write landing while the seal runs is kept, over the sealed version", async () => {
    const t = await newTenant(app);
    await rawFiles(t, 300);
    const hook: { put: Hook | null; del: null } = { put: null, del: null };
    hook.put = async (key, opts) => {
      if (!key.endsWith(`/w/${t.ws}/meta.json`) || opts.ifMatch === undefined) return;
      hook.put = null;
      await upload(t, "src/f0001.txt", "the racer's\n");
    };
    const a = (await (await runner(t, hooked(hook))).manifestSince({ buckets: 4 }))!;
    expect(await text(t, "src/f0001.txt")).toBe("the racer's\n");
    expect(a.files.find((f) => f.path === "src/f0001.txt")!.size).toBe("the racer's\n".length);
    expect(await count(fp(t))).toBe(1);
  });

  it("a delete landing between the seal's read and its switch stays a delete (a whiteout), the file does not come back", async () => {
    const t = await newTenant(app);
    await rawFiles(t, 300);
    const hook: { put: Hook | null; del: null } = { put: null, del: null };
    hook.put = async (key, opts) => {
      if (!key.endsWith(`/w/${t.ws}/meta.json`) || opts.ifMatch === undefined) return;
      hook.put = null;
      const r = await t.req(`/v1/workspaces/${t.ws}/files/src/f0002.txt`, { method: "DELETE" });
      expect(r.status).toBe(200);
    };
    const a = (await (await runner(t, hooked(hook))).manifestSince({ buckets: 4 }))!;
    expect(await text(t, "src/f0002.txt")).toBeNull();
    expect(a.files.some((f) => f.path === "src/f0002.txt")).toBe(false);
    expect(a.count).toBe(299);
  });

  it("a delete whose request opened the workspace as plain, landing after the seal removed the upper object, is redone over the new layer: the file goes", async () => {
    const t = await newTenant(app);
    await rawFiles(t, 300);
    appHook.del = async (keys) => {
      if (!keys.includes(`${fp(t)}src/f0003.txt`)) return;
      appHook.del = null;
      await (await runner(t)).manifestSince({ buckets: 4 });
    };
    // The raw files route without If-Match ("whatever is there"): the storage delete finds nothing to delete.
    const r = await t.req(`/v1/workspaces/${t.ws}/files/src/f0003.txt`, { method: "DELETE" });
    appHook.del = null;
    expect(r.status, await r.clone().text()).toBe(200);
    expect(await text(t, "src/f0003.txt")).toBeNull();
    expect((await (await runner(t)).manifestSince({ buckets: 4 }))!.count).toBe(299);
  });

  it("a runner's conditional delete racing the seal the same way: done when its version is the sealed one, refused (the file kept) when a writer changed it", async () => {
    const t = await newTenant(app);
    await rawFiles(t, 300);
    const listed = (await (await runner(t, raw, false)).manifestSince({ buckets: 1 }))!.files;
    const etag = (p: string) => listed.find((f) => f.path === p)!.etag;
    const hook: { put: null; del: ((keys: string[]) => Promise<void>) | null } = { put: null, del: null };
    hook.del = async (keys) => {
      if (!keys.includes(`${fp(t)}src/f0008.txt`)) return;
      hook.del = null;
      await (await runner(t)).manifestSince({ buckets: 4 });
    };
    const c = await runner(t, hooked(hook), false);
    expect(await c.delete("src/f0008.txt", { ifMatch: etag("src/f0008.txt") })).toEqual({ ok: true });
    expect(await text(t, "src/f0008.txt")).toBeNull();
    // A writer changed the file between the seal and the delete: refused, the file stays as it is.
    const u = await newTenant(app);
    await rawFiles(u, 300);
    const before = (await (await runner(u, raw, false)).manifestSince({ buckets: 1 }))!.files.find((f) => f.path === "src/f0009.txt")!.etag;
    hook.del = async (keys) => {
      if (!keys.includes(`${fp(u)}src/f0009.txt`)) return;
      hook.del = null;
      await (await runner(u)).manifestSince({ buckets: 4 });
      await upload(u, "src/f0009.txt", "changed\n");
    };
    expect(await (await runner(u, hooked(hook), false)).delete("src/f0009.txt", { ifMatch: before })).toEqual({ ok: false, conflict: true });
    expect(await text(u, "src/f0009.txt")).toBe("changed\n");
  });
});

describe("the removal of the sealed objects after the answer (waitUntil)", () => {
  it("the answer comes first; the run's fetch reads packs while the sealed objects are still there; then they go", async () => {
    const t = await newTenant(app);
    await rawFiles(t, 300);
    const later: Promise<unknown>[] = [];
    const ops: string[] = [];
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    // The removal waits at its first delete until the fetch below is done.
    const c = await runner(t, hooked({ put: null, del: () => gate }, ops), true, (p) => later.push(p));
    const a = (await c.manifestSince({ buckets: 4 }))!;
    expect(later.length).toBe(1);
    expect(await count(fp(t))).toBe(300); // not removed yet
    ops.length = 0;
    const got: BatchFile[] = [];
    for await (const f of (await c.fetchMany(a.files.slice(0, 50).map((f) => f.path), a.files.slice(0, 50).map((f) => f.etag)))!) got.push(f);
    expect(got.filter((f) => "bytes" in f).length).toBe(50);
    expect(ops.filter((o) => o.startsWith(`get ${fp(t)}`))).toEqual([]);
    expect(ops.some((o) => o.includes("/packs/"))).toBe(true);
    open();
    await Promise.all(later);
    expect(await count(fp(t))).toBe(0);
  });

  it("sealed objects left behind (the background work cut short) are not sealed again: a later run removes them after its answer", async () => {
    const t = await newTenant(app);
    await rawFiles(t, 300);
    const cut = async () => {
      throw new Error("cut short");
    };
    const later0: Promise<unknown>[] = [];
    await (await runner(t, hooked({ put: null, del: cut }), true, (p) => later0.push(p))).manifestSince({ buckets: 4 }); // its removal fails
    await Promise.all(later0);
    const base = (await readMeta(raw, t.tenant, t.ws))!.meta.base;
    expect(await count(fp(t))).toBe(300);
    const later: Promise<unknown>[] = [];
    const ops: string[] = [];
    const a = (await (await runner(t, hooked({ put: null, del: null }, ops), true, (p) => later.push(p))).manifestSince({ buckets: 4 }))!;
    expect(a.count).toBe(300);
    expect((await readMeta(raw, t.tenant, t.ws))!.meta.base).toBe(base);
    expect(ops.filter((o) => o.startsWith(`get ${fp(t)}`))).toEqual([]);
    await Promise.all(later);
    expect(await count(fp(t))).toBe(0);
    expect(await text(t, "src/f0010.txt")).toBe(body(10));
  });
});

describe("calls made before a seal", () => {
  it("undo of a write made before the seal restores the file after it; an edit of a file read before it needs no new read", async () => {
    const t = await newTenant(app);
    await rawFiles(t, 300);
    expect((await t.call("read", { file_path: "src/f0004.txt" })).status).toBe(200);
    expect((await t.call("read", { file_path: "src/f0005.txt" })).status).toBe(200);
    const w = await t.call("write", { file_path: "src/f0005.txt", content: "written before the seal\n" });
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    await (await runner(t)).manifestSince({ buckets: 4 });
    expect((await readMeta(raw, t.tenant, t.ws))!.meta.base).toBeTruthy();
    expect(await count(fp(t))).toBe(0);
    const e = await t.call("edit", { file_path: "src/f0004.txt", old_string: "file 4", new_string: "file four", replace_all: true });
    expect(e.status, JSON.stringify(e.body)).toBe(200);
    const u = await t.req(`/v1/workspaces/${t.ws}/undo`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify({ call_id: w.body.call_id }) });
    expect(u.status, await u.clone().text()).toBe(200);
    expect(await text(t, "src/f0005.txt")).toBe(body(5));
  });
});

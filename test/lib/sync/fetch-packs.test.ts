/**
 * The runner's batch fetch on a layered workspace (lib/sync/fetch.ts): the new form (the
 * listed etags with the paths: packed files in a few range reads) answers exactly what the old
 * form (every file through the merged view) answers, with upper overrides, whiteouts, and files
 * changed between the listing and the fetch; a token of one workspace reaches only its files.
 * workerd, local R2, through the sync API's HTTP client.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newTenant, testApp, upload, type Tenant } from "../../helpers.js";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { handleSync } from "../../../lib/sync/server.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import { FETCH_MAX_FILES, allFrames, type BatchFile } from "../../../lib/sync/batch.js";
import { fetchBatch } from "../../../lib/sync/fetch.js";
import { openWorkspace } from "../../../lib/layers/open.js";
import { tar } from "../archive/archives.js";
import { importReq } from "../archive/helpers.js";
import { ManifestCache } from "../../../lib/layers/manifest.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { quoteEtag, type StorageDriver } from "../../../lib/storage/types.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";

const raw = r2Driver(env.FILES);
const SECRET = "a-test-secret-of-some-length";
const enc = new TextEncoder();
const text = (b: Uint8Array) => new TextDecoder().decode(b);
const bodyOf = async (r: Response) => text(new Uint8Array(await r.arrayBuffer()));

type Op = { op: "get" | "head" | "list"; key: string; range: boolean };
/** The real driver, recording every file, pack and list operation; `beforeGet` runs before a ranged pack read. */
function counting(ops: Op[], hook: { beforePackRead: (() => Promise<void>) | null }): StorageDriver {
  return {
    ...raw,
    name: "counting",
    async get(key, opts) {
      ops.push({ op: "get", key, range: !!opts?.range });
      if (key.includes("/packs/") && hook.beforePackRead) {
        const h = hook.beforePackRead;
        hook.beforePackRead = null;
        await h();
      }
      return raw.get(key, opts);
    },
    async head(key) {
      ops.push({ op: "head", key, range: false });
      return raw.head(key);
    },
    async list(opts) {
      ops.push({ op: "list", key: opts.prefix, range: false });
      return raw.list(opts);
    },
  };
}

const app = testApp();

async function syncClient(t: Tenant, storage: StorageDriver, ws = t.ws, tenant = t.tenant) {
  const fetchFn = ((input: RequestInfo | URL, init?: RequestInit) =>
    handleSync(new Request(input, init), { driver: storage, manifests: new ManifestCache(), kv: storageKeyValue(memoryDriver(), "kv/"), secret: SECRET })) as typeof fetch;
  return httpSyncClient({ url: "https://api.example", token: await mintSyncToken(SECRET, { t: tenant, w: ws, r: "run1" }, 60), fetch: fetchFn });
}

const shape = (files: BatchFile[]) => files.map((f) => ("bytes" in f ? { path: f.path, etag: f.etag, body: text(f.bytes) } : { path: f.path, missing: "missing" in f }));

const post = async (t: Tenant, path: string, body: unknown) =>
  (await t.req(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })).json() as Promise<any>;

/** A workspace whose files live in packs (a checkpoint seals them), then edited above. */
async function layered(t: Tenant, n: number): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (let i = 0; i < n; i++) files[`src/f${String(i).padStart(2, "0")}.txt`] = `file ${i}\n`.repeat(i + 1);
  files["src/ünï/名前.ts"] = "export const 名 = 1;\n";
  files["src/empty"] = "";
  for (const [p, b] of Object.entries(files)) await upload(t, p, b);
  expect((await post(t, `/v1/workspaces/${t.ws}/checkpoints`, { name: "base" })).id).toBeTruthy();
  return files;
}

describe("batch fetch from packs (etags with the paths)", () => {
  it("answers what the old form answers: overrides, whiteouts, new files, and files changed or deleted after the listing", async () => {
    const t = await newTenant(app);
    await layered(t, 12);
    // Before the listing: an override, a whiteout, an upper-only file.
    await upload(t, "src/f03.txt", "override before listing\n");
    expect((await t.call("delete", { path: "src/f04.txt" })).status).toBe(200);
    await upload(t, "src/new.txt", "upper only\n");

    const ops: Op[] = [];
    const c = await syncClient(t, counting(ops, { beforePackRead: null }));
    const listed = await c.manifest();
    const paths = listed.map((e) => e.path);
    expect(paths).not.toContain("src/f04.txt");
    // After the listing: a lower file overridden, a lower file deleted, an override changed again.
    await upload(t, "src/f05.txt", "changed after listing\n");
    expect((await t.call("delete", { path: "src/f06.txt" })).status).toBe(200);
    await upload(t, "src/f03.txt", "override changed after listing\n");

    const oldForm = await allFrames((await c.fetchMany(paths))!);
    ops.length = 0;
    const newForm = await allFrames((await c.fetchMany(paths, listed.map((e) => e.etag)))!);
    // The old form answers in the order asked; the new one in pack order (each path once).
    expect(oldForm.map((f) => f.path)).toEqual(paths);
    const byName = (a: { path: string }, b: { path: string }) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
    expect(shape(newForm).sort(byName)).toEqual(shape(oldForm).sort(byName));

    // What each frame holds is the file as it is now, under the etag of those bytes.
    for (const f of newForm) {
      const now = await t.req(`/v1/workspaces/${t.ws}/files/${f.path.split("/").map(encodeURIComponent).join("/")}`);
      if (!("bytes" in f)) {
        expect(f.path).toBe("src/f06.txt");
        expect(now.status).toBe(404);
        continue;
      }
      expect(text(f.bytes)).toBe(await bodyOf(now));
      expect(quoteEtag(f.etag)).toBe(now.headers.get("etag"));
    }
    const byPath = new Map(shape(newForm).map((f) => [f.path, f]));
    expect(byPath.get("src/f05.txt")).toMatchObject({ body: "changed after listing\n" });
    expect(byPath.get("src/f03.txt")).toMatchObject({ body: "override changed after listing\n" });
    expect(byPath.get("src/f06.txt")).toEqual({ path: "src/f06.txt", missing: true });
    expect(byPath.get("src/f05.txt")).not.toMatchObject({ etag: listed.find((e) => e.path === "src/f05.txt")!.etag });

    // Cost: the files still packed come from one ranged pack read, no HEAD or GET per file;
    // only the 4 paths with an upper object (f03, f05, f06, new) are read one by one.
    const fileOps = ops.filter((o) => o.key.includes(`/w/${t.ws}/f/`) && o.op !== "list");
    const packReads = ops.filter((o) => o.op === "get" && o.key.includes("/packs/"));
    expect(packReads.length).toBe(1);
    expect(packReads.every((o) => o.range)).toBe(true);
    expect(new Set(fileOps.map((o) => o.key.split("/f/")[1])).size).toBeLessThanOrEqual(4);
    expect(ops.filter((o) => o.op === "list").length).toBe(1);
  });

  it("a write landing between the upper check and the pack read: the frame is the lower version under its etag, and a write-back of it is refused", async () => {
    const t = await newTenant(app);
    await layered(t, 4);
    const hook: { beforePackRead: (() => Promise<void>) | null } = { beforePackRead: null };
    const c = await syncClient(t, counting([], hook));
    const listed = await c.manifest();
    const target = listed.find((e) => e.path === "src/f02.txt")!;
    hook.beforePackRead = async () => {
      await upload(t, "src/f02.txt", "racer\n");
    };
    const got = await allFrames((await c.fetchMany(listed.map((e) => e.path), listed.map((e) => e.etag)))!);
    expect(hook.beforePackRead).toBeNull();
    const f = got!.find((x) => x.path === "src/f02.txt")!;
    if (!("bytes" in f)) throw new Error("missing");
    expect({ etag: f.etag, body: text(f.bytes) }).toEqual({ etag: target.etag, body: "file 2\nfile 2\nfile 2\n" });
    // The stale version can never overwrite the racer's write.
    const put = await c.put("src/f02.txt", enc.encode("runner's edit\n"), { ifMatch: f.etag });
    expect(put).toMatchObject({ ok: false, conflict: true });
    expect(await bodyOf(await t.req(`/v1/workspaces/${t.ws}/files/src/f02.txt`))).toBe("racer\n");
  });

  it("a token of workspace A cannot fetch B's files, even with B's paths and etags (same tenant or another)", async () => {
    const b = await newTenant(app);
    await layered(b, 3);
    const bListed = await (await syncClient(b, raw)).manifest();
    const paths = bListed.map((e) => e.path);
    const etags = bListed.map((e) => e.etag);
    // Another workspace of B's tenant, and another tenant's workspace with the same id.
    const sibling = (await post(b, "/v1/workspaces", { name: "sibling" })) as { id: string };
    const a = await newTenant(app);
    for (const c of [await syncClient(b, raw, sibling.id), await syncClient(a, raw, b.ws), await syncClient(a, raw)]) {
      const got = await allFrames((await c.fetchMany(paths, etags))!);
      expect(got!.every((f) => "missing" in f)).toBe(true);
    }
  });

  it(`an answer of ${FETCH_MAX_FILES} packed files holds at most its byte budget: bytes read from packs and not yet taken stay within it`, async () => {
    const t = await newTenant(app);
    // Archive order is not path order: the answer follows the packs, not the paths.
    const body = (i: number) => `// ${i}\n${"y".repeat(500 + (i % 17) * 150)}\n`;
    const items = Array.from({ length: FETCH_MAX_FILES }, (_, i) => ({ name: `m${i % 9}/f${String(i).padStart(4, "0")}.js`, body: body(i) }));
    expect((await importReq(t, tar(items))).status).toBe(200);
    let read = 0;
    const storage: StorageDriver = {
      ...raw,
      name: "bytes",
      async get(key, opts) {
        if (key.includes("/packs/")) read += opts?.range?.length ?? Infinity;
        return raw.get(key, opts);
      },
    };
    const { driver } = await openWorkspace({ storage, manifests: new ManifestCache() }, t.tenant, t.ws);
    const listed = await (await syncClient(t, raw)).manifest();
    expect(listed.length).toBe(FETCH_MAX_FILES);
    const total = listed.reduce((n, e) => n + e.size, 0);
    const budget = 64 * 1024;
    const stream = await fetchBatch(driver, t.tenant, t.ws, { paths: listed.map((e) => e.path), etags: listed.map((e) => e.etag), anyOrder: true }, budget);
    const reader = stream.getReader();
    let taken = 0;
    let most = 0;
    const seen = new Map<string, string>();
    for (;;) {
      most = Math.max(most, read - taken);
      await new Promise((r) => setTimeout(r, 1)); // a slow reader: reads in flight may complete meanwhile
      most = Math.max(most, read - taken);
      const r = await reader.read();
      if (r.done) break;
      // One frame per chunk: u32 header length, header, bytes.
      const hl = new DataView(r.value.buffer, r.value.byteOffset).getUint32(0);
      const head = JSON.parse(text(r.value.subarray(4, 4 + hl))) as { path: string; size: number };
      seen.set(head.path, text(r.value.subarray(4 + hl)));
      taken += head.size;
    }
    expect(seen.size).toBe(FETCH_MAX_FILES);
    for (const it of items) expect(seen.get(it.name)).toBe(it.body);
    expect(taken).toBe(total);
    expect(read).toBeLessThan(total * 1.2); // coalesced, not read twice
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(budget);
  });

  it("refuses etags that do not match the paths", async () => {
    const t = await newTenant(app);
    const c = await syncClient(t, raw);
    await expect(c.fetchMany(["a.txt", "b.txt"], ["x"]).then((f) => allFrames(f!))).rejects.toThrow(/etags must be an array of 2 strings/);
  });
});

/**
 * The warm run over a layered workspace (lib/sync/manifest.ts, LayerState): when the layer
 * pointer and the upper layer are unchanged, the conditional manifest is answered from ONE
 * listing of the upper layer (no merge of the lower one); and every change between two runs is
 * still seen: a tool's write over a lower file, a whiteout, an upper file made and removed, a
 * checkpoint that seals the upper layer, a restore that switches the base. Through the sync
 * API's HTTP routes (handleSync) and the real runner.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCommand, type RunnerDeps } from "../../../infra/container/runner.js";
import { bwrapSandbox } from "../../../infra/container/sandbox.js";
import { prepareStageDir } from "../../../infra/container/stage.js";
import { TreeCache } from "../../../infra/container/slot-cache.js";
import { createCheckpoint, restoreCheckpoint } from "../../../lib/layers/checkpoints.js";
import { ManifestCache } from "../../../lib/layers/manifest.js";
import { filesDriver, readMeta } from "../../../lib/layers/open.js";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { handleSync } from "../../../lib/sync/server.js";
import { conditionalManifest, ManifestView } from "../../../lib/sync/view.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import { filesPrefix } from "../../../lib/layout/paths.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import type { StorageDriver } from "../../../lib/storage/types.js";
import { createWorkspace } from "../../../lib/workspace/registry.js";

const T = "acme";
const W = "repo";
const prefix = filesPrefix(T, W);
const SECRET = "warm-layers-test-secret-0123456789";

/** Storage that counts what the sync API asks of it: "list <prefix>", "get <key>", ... */
function counting(inner: StorageDriver) {
  const ops: string[] = [];
  const d: StorageDriver = {
    name: inner.name,
    head: (k) => (ops.push(`head ${k}`), inner.head(k)),
    get: (k, o) => (ops.push(`get ${k}`), inner.get(k, o)),
    put: (k, b, o) => (ops.push(`put ${k}`), inner.put(k, b, o)),
    delete: (k) => (ops.push("delete"), inner.delete(k)),
    list: (o) => (ops.push(`list ${o.prefix}`), inner.list(o)),
  };
  return { driver: d, ops };
}

async function layered(files: number) {
  const raw = memoryDriver();
  const { driver, ops } = counting(raw);
  const layers = { storage: raw, manifests: new ManifestCache() };
  await createWorkspace(raw, T, { id: W });
  for (let i = 0; i < files; i++) await raw.put(`${prefix}src/d${i % 23}/f${i}.ts`, `export const x${i} = ${i};\n`);
  const first = await createCheckpoint(layers, T, W, "import");
  expect((await raw.list({ prefix })).objects).toEqual([]); // every file in the lower layer
  const kv = storageKeyValue(memoryDriver(), "kv/");
  const manifests = new ManifestCache(); // the API's, per isolate
  let seq = 0;
  const client = async () => {
    const token = await mintSyncToken(SECRET, { t: T, w: W, r: `run${++seq}` }, 600);
    const viaApi = ((i: RequestInfo | URL, init?: RequestInit) => handleSync(new Request(i, init), { driver, manifests, kv, secret: SECRET })) as typeof fetch;
    return httpSyncClient({ url: "https://api.example", token, fetch: viaApi });
  };
  /** The workspace's files as every tool sees them (the merged view). */
  const merged = async () => {
    const files = await filesDriver(layers, T, W, (await readMeta(raw, T, W))!.meta);
    const out = new Map<string, string>();
    let cursor: string | undefined;
    do {
      const page = await files.list({ prefix, ...(cursor ? { cursor } : {}) });
      for (const o of page.objects) out.set(o.key.slice(prefix.length), o.etag);
      cursor = page.cursor;
    } while (cursor);
    return { files, out };
  };
  return { raw, ops, layers, client, merged, firstCheckpoint: first.id };
}

const viewOf = (v: ManifestView) => new Map([...v.values()].map((e) => [e.path, e.etag]));

describe("conditional manifest over a layered workspace", () => {
  it("unchanged: one LIST of the upper layer and no entry sent; every change between runs is seen", async () => {
    const ws = await layered(3000);
    const view = new ManifestView();
    const cold = await conditionalManifest(await ws.client(), view, null);
    expect(cold.received).toBe(3000);
    expect(viewOf(view)).toEqual((await ws.merged()).out);

    // Warm and unchanged: the workspace record, the upper layer (one page), the execute bits.
    ws.ops.length = 0;
    const warm = await conditionalManifest(await ws.client(), view, null);
    expect(warm).toMatchObject({ unchanged: true, received: 0 });
    expect(ws.ops.filter((o) => o.startsWith("list"))).toEqual([`list ${prefix}`]);
    expect(ws.ops.filter((o) => !o.startsWith("list")).sort()).toEqual([`get t/${T}/w/${W}/meta.json`, `get t/${T}/w/${W}/x/modes.json`].sort());

    /** Makes a change, then checks the next manifest sees it (and the one after is the cheap one again). */
    const step = async (change: () => Promise<unknown>, changed: boolean) => {
      const before = viewOf(view);
      await change();
      const m = await conditionalManifest(await ws.client(), view, null);
      const truth = (await ws.merged()).out;
      expect(viewOf(view)).toEqual(truth);
      expect(m.unchanged).toBe(!changed);
      if (changed) expect(viewOf(view)).not.toEqual(before);
      ws.ops.length = 0;
      expect((await conditionalManifest(await ws.client(), view, null)).unchanged).toBe(true);
      expect(ws.ops.filter((o) => o.startsWith("list")).length).toBe(1);
    };
    const files = async () => (await ws.merged()).files;
    // A tool writes over a lower file (an upper object), deletes one (a whiteout), adds one.
    await step(async () => (await files()).put(`${prefix}src/d1/f1.ts`, "changed\n"), true);
    await step(async () => (await files()).delete(`${prefix}src/d2/f2.ts`), true);
    await step(async () => (await files()).put(`${prefix}new.txt`, "new\n"), true);
    // Made and removed between two runs: storage is as it was, and so is the answer.
    await step(async () => {
      await (await files()).put(`${prefix}tmp.txt`, "x");
      await (await files()).delete(`${prefix}tmp.txt`);
    }, false);
    // A checkpoint seals the upper layer into a new base: the same files, another layer.
    await step(() => createCheckpoint(ws.layers, T, W, "second"), false);
    // A restore switches the base back: the first import's files again.
    await step(() => restoreCheckpoint(ws.layers, T, W, ws.firstCheckpoint), true);
    expect(view.get("src/d1/f1.ts")).toBeDefined();
    expect(view.get("src/d2/f2.ts")).toBeDefined();
    expect(view.get("new.txt")).toBeUndefined();
  });

  it("a state the view no longer equals (the runner changed it) is not sent: the full comparison decides", async () => {
    const ws = await layered(300);
    const view = new ManifestView();
    await conditionalManifest(await ws.client(), view, null);
    expect((await view.query()).layer).toBeDefined();
    view.set({ path: "ghost.txt", etag: "e", size: 1 }); // e.g. a write-back's own result
    expect((await view.query()).layer).toBeUndefined();
    const m = await conditionalManifest(await ws.client(), view, null);
    expect(m.unchanged).toBe(false);
    expect(viewOf(view)).toEqual((await ws.merged()).out);
  });
});

describe("the runner over a layered workspace", () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("sees a tool's change to an upper and a lower file, and a restore, in the next warm run", async () => {
    const ws = await layered(200);
    const root = mkdtempSync(join(tmpdir(), "toolshed-warm-layers-"));
    dirs.push(root);
    chmodSync(root, 0o711);
    const owner = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : null;
    const deps: RunnerDeps = { cache: new TreeCache(join(root, "slots"), owner), sandbox: bwrapSandbox({ stateDir: join(root, "sandbox") }), owner, workDir: join(root, "work"), stageDir: join(root, "ws") };
    prepareStageDir(deps.stageDir);
    let k = 0;
    const run = async (command: string) => runCommand({ version: 1, idempotency_key: `k${++k}`, tenant: T, workspace: W, command, timeout_ms: 20_000, sync: { url: "http://unused", token: "unused" } }, await ws.client(), deps);
    const files = async () => (await ws.merged()).files;

    expect((await run("cat src/d5/f5.ts")).stdout).toBe("export const x5 = 5;\n");
    const warm = await run("echo upper > made.txt");
    expect(warm.sync.cache).toBe("warm");
    expect(warm.files_created).toEqual(["made.txt"]);
    expect((await run("cat made.txt")).stdout).toBe("upper\n");
    // Between two runs: a tool rewrites the upper file and a lower one (same size: the etag tells).
    await (await files()).put(`${prefix}made.txt`, "UPPER\n");
    await (await files()).put(`${prefix}src/d5/f5.ts`, "export const x5 = 6;\n");
    const r = await run("cat made.txt src/d5/f5.ts");
    expect(r.stdout).toBe("UPPER\nexport const x5 = 6;\n");
    expect(r.sync.downloaded_files).toBe(2);
    // Unchanged again: nothing downloaded, and once the runner's view is the listing it was
    // told (the run before wrote nothing), its sync requests ask storage for one LIST and two GETs
    // (the claim and the result, the handler's, add one PUT each).
    expect((await run("true")).sync.downloaded_files).toBe(0);
    ws.ops.length = 0;
    expect((await run("true")).sync.downloaded_files).toBe(0);
    expect(ws.ops.sort()).toEqual([`get t/${T}/w/${W}/meta.json`, `get t/${T}/w/${W}/x/modes.json`, `list ${prefix}`]);
    // A restore: the import's files, made.txt gone.
    await restoreCheckpoint(ws.layers, T, W, ws.firstCheckpoint);
    const after = await run("cat src/d5/f5.ts; ls made.txt 2>&1 || true");
    expect(after.stdout).toMatch(/^export const x5 = 5;\n.*No such file/s);
  });
});

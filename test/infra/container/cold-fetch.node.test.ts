/**
 * A cold start on a packed workspace (loaded by archive import), end to end in Node: the app's
 * /v1/sync over memory storage, the local executor, the real bubblewrap sandbox. Counts the
 * requests and storage reads it costs, and checks that a file changed or deleted between the
 * manifest and the fetch arrives as it is now.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import bash from "../../../functions/bash.js";
import { tools as fileTools } from "../../../functions/index.js";
import { localExecutor } from "../../../infra/container/local-executor.js";
import { createApp } from "../../../lib/api/app.js";
import type { AppDeps } from "../../../lib/api/deps.js";
import { FETCH_MAX_FILES } from "../../../lib/sync/batch.js";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { httpRunRecords } from "../../../lib/sync/runs.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import type { StorageDriver } from "../../../lib/storage/types.js";
import { tar } from "../../lib/archive/archives.js";

const ADMIN = "admin-token-for-tests";
const SECRET = "sync-secret-for-tests-0123456789";
const N = 2000;
const fileText = (i: number) => `// file ${i}\n${"x".repeat(200 + (i % 13) * 97)}\n`;

describe("cold start of a packed workspace", () => {
  let app: ReturnType<typeof createApp>;
  let key: string;
  const roots: string[] = [];
  const inner = memoryDriver();
  /** Sync requests by route, and ranged pack reads in storage. */
  const seen = { routes: new Map<string, number>(), packReads: 0, packBytes: 0 };
  /** Runs once before the next /v1/sync/fetch is answered (a tool's write between manifest and fetch). */
  let beforeFetch: (() => Promise<void>) | null = null;
  let gate: Promise<void> = Promise.resolve();
  const storage: StorageDriver = {
    ...inner,
    async get(k, opts) {
      if (k.includes("/packs/")) (seen.packReads++, (seen.packBytes += opts?.range?.length ?? 0));
      return inner.get(k, opts);
    },
  };
  const req = (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...(init.headers as Record<string, string> | undefined) } });
  const call = async (ws: string, tool: string, args: unknown) => {
    const r = await req(`/v1/workspaces/${ws}/tools/${tool}`, { method: "POST", body: JSON.stringify(args) });
    return { status: r.status, body: (await r.json()) as any };
  };
  /** A fresh runner (empty cache): every run on a new workspace id is cold anyway. */
  const executor = () => {
    const root = mkdtempSync(join(tmpdir(), "toolshed-cold-"));
    chmodSync(root, 0o711);
    roots.push(root);
    const viaApp = (async (u: string, i: RequestInit) => {
      const route = new URL(u).pathname.replace(/^\/v1\/sync\/files\/.*/, "/v1/sync/files/*");
      seen.routes.set(route, (seen.routes.get(route) ?? 0) + 1);
      if (route === "/v1/sync/fetch" && beforeFetch) {
        gate = beforeFetch(); // every fetch request of the run waits for it
        beforeFetch = null;
      }
      if (route === "/v1/sync/fetch") await gate;
      return app.request(u, i);
    }) as typeof fetch;
    return localExecutor({ root, syncClient: (r) => httpSyncClient({ ...r.sync, fetch: viaApp }), runRecords: (r) => httpRunRecords({ ...r.sync, fetch: viaApp }) });
  };
  let current: ReturnType<typeof localExecutor>;

  const load = async (ws: string) => {
    expect((await req("/v1/workspaces", { method: "POST", body: JSON.stringify({ id: ws }) })).status).toBe(201);
    // In path order, as `git archive` writes a repository (packs then follow the paths).
    const items = Array.from({ length: N }, (_, i) => ({ name: `src/d${i % 40}/f${String(i).padStart(4, "0")}.ts`, body: fileText(i) })).sort((a, b) => (a.name < b.name ? -1 : 1));
    const body = tar(items);
    const r = await req(`/v1/workspaces/${ws}/import`, { method: "POST", headers: { "content-type": "application/octet-stream", "content-length": String(body.length) }, body });
    expect(r.status, await r.clone().text()).toBe(200);
    // Nothing upper: every file is in the packs.
    expect((await inner.list({ prefix: `t/acme/w/${ws}/f/` })).objects).toEqual([]);
  };

  beforeAll(async () => {
    const deps = { storage, kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, executor: { run: (r: any) => current.run(r), start: (r: any) => current.start(r) }, syncSecret: SECRET, syncUrl: "http://toolshed.internal" } as unknown as AppDeps;
    app = createApp(deps, [...fileTools, bash]);
    const admin = (path: string, body: unknown) => Promise.resolve(app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).then((r) => r.json() as Promise<any>);
    await admin("/v1/admin/tenants", { id: "acme" });
    key = (await admin("/v1/admin/tenants/acme/keys", {})).key;
  }, 60_000);
  afterAll(async () => {
    await current?.handler.close();
    for (const r of roots) rmSync(r, { recursive: true, force: true });
  });

  it(`${N} packed files: ${Math.ceil(N / FETCH_MAX_FILES)} fetch requests, a few range reads, every byte in place`, async () => {
    await load("cold1");
    current = executor();
    seen.routes.clear();
    seen.packReads = 0;
    seen.packBytes = 0;
    const r = await call("cold1", "bash", { command: "find src -type f | wc -l; cat src/d7/f0007.ts | head -1; cat src/d*/f*.ts | md5sum" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    let all = "";
    for (let i = 0; i < N; i++) all += fileText(i);
    const { createHash } = await import("node:crypto");
    // `cat src/d*/f*.ts` reads in glob order: directories d0, d1, d10, ..., files sorted in each.
    const order = Array.from({ length: N }, (_, i) => i).sort((a, b) => {
      const da = `d${a % 40}`, db = `d${b % 40}`;
      return da === db ? a - b : da < db ? -1 : 1;
    });
    const md5 = createHash("md5").update(order.map(fileText).join("")).digest("hex");
    expect(r.body.data.stdout).toBe(`${N}\n// file 7\n${md5}  -\n`);
    // One request per 1,000 files, none per file; the packs read in a few coalesced ranges.
    expect(seen.routes.get("/v1/sync/fetch")).toBe(Math.ceil(N / FETCH_MAX_FILES));
    expect(seen.routes.get("/v1/sync/fetch")).toBeLessThanOrEqual(2); // 32 with batches of 64
    expect(seen.routes.get("/v1/sync/files/*") ?? 0).toBe(0);
    expect(seen.packReads).toBeLessThanOrEqual(8);
    expect(seen.packBytes).toBeLessThan(all.length * 1.1);
  });

  it("a file written and one deleted between the manifest and the fetch arrive as they are now", async () => {
    await load("cold2");
    current = executor();
    const hookSaw: unknown[] = [];
    beforeFetch = async () => {
      const body = "written meanwhile\n";
      const w = await req(`/v1/workspaces/cold2/files/src/d3/f0003.ts`, { method: "PUT", headers: { "content-type": "text/plain", "content-length": String(body.length) }, body });
      hookSaw.push(w.status, (await call("cold2", "delete", { path: "src/d4/f0004.ts" })).body.ok);
    };
    const r = await call("cold2", "bash", { command: "cat src/d3/f0003.ts; ls src/d4/f0004.ts 2>&1 | grep -c 'No such'; find src -type f | wc -l" });
    expect(beforeFetch).toBeNull();
    expect(hookSaw).toEqual([200, true]);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.stdout).toBe(`written meanwhile\n1\n${N - 1}\n`);
    expect(r.body.data.files_changed).toEqual([]);
    // The next run (warm) agrees, and storage still holds the tool's versions.
    const again = await call("cold2", "bash", { command: "cat src/d3/f0003.ts; find src -type f | wc -l" });
    expect(again.body.data.stdout).toBe(`written meanwhile\n${N - 1}\n`);
    const got = await req(`/v1/workspaces/cold2/files/src/d3/f0003.ts`);
    expect(await got.text()).toBe("written meanwhile\n");
  });
});

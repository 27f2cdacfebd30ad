/**
 * Batched write-back end to end: the real runner and sandbox (bubblewrap), the sync API of a
 * Worker (handleSync with the search indexer) on 127.0.0.1, over memory storage.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCommand, type RunnerDeps } from "../../../infra/container/runner.js";
import { bwrapSandbox } from "../../../infra/container/sandbox.js";
import { prepareStageDir } from "../../../infra/container/stage.js";
import { TreeCache } from "../../../infra/container/slot-cache.js";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { handleSync } from "../../../lib/sync/server.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import type { RunRequest } from "../../../lib/exec/types.js";
import { fileKey } from "../../../lib/layout/paths.js";
import { searchIndexer } from "../../../lib/search/indexer.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { workspaceRecord } from "../../support/workspace-record.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";

const SECRET = "writeback-batch-secret-0123456789";
const T = "acme";

interface Api {
  url: string;
  driver: ReturnType<typeof memoryDriver>;
  /** "METHOD /path" of every request, paths of /v1/sync/files/* shortened to "/v1/sync/files". */
  log: string[];
  /** Runs once, before the first write-back request is handled (a tool writing during the run). */
  beforeWriteBack: (() => Promise<void>) | null;
  close(): void;
}

async function startApi(opts: { batches: boolean }): Promise<Api> {
  const driver = memoryDriver();
  const kv = storageKeyValue(memoryDriver(), "kv/");
  const listeners = [searchIndexer({ vacuumChance: 0 })];
  const api: Api = { url: "", driver, log: [], beforeWriteBack: null, close: () => server.close() };
  const server: Server = createServer(async (req, res) => {
    const path = req.url!.startsWith("/v1/sync/files/") ? "/v1/sync/files" : req.url!.split("?")[0]!;
    api.log.push(`${req.method} ${path}`);
    const writes = (req.method === "PUT" || req.method === "DELETE") && path === "/v1/sync/files" || path === "/v1/sync/put" || path === "/v1/sync/delete";
    if (writes && api.beforeWriteBack) {
      const hook = api.beforeWriteBack;
      api.beforeWriteBack = null;
      await hook();
    }
    // This file is about put batches: the packed write-back's routes are not offered (writeback-packed tests those).
    if (path === "/v1/sync/stage" || path === "/v1/sync/commit" || (!opts.batches && (path === "/v1/sync/put" || path === "/v1/sync/delete"))) {
      req.resume();
      res.writeHead(404, { "content-type": "application/json" });
      return res.end(JSON.stringify({ ok: false, error: { code: "NOT_FOUND", message: "No sync route." } }));
    }
    const hasBody = req.method !== "GET" && req.method !== "HEAD";
    const r = await handleSync(new Request(`http://127.0.0.1${req.url}`, {
      method: req.method!, headers: req.headers as Record<string, string>,
      ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream, duplex: "half" } : {}),
    } as RequestInit), { driver, kv, secret: SECRET, listeners, autoSeal: false }); // the files stay one object each (this file reads them raw)
    res.writeHead(r.status, Object.fromEntries(r.headers));
    if (r.body) for await (const c of r.body as unknown as AsyncIterable<Uint8Array>) res.write(c);
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  api.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return api;
}

let root: string;
let deps: RunnerDeps;
let seq = 0;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "toolshed-wb-batch-"));
  chmodSync(root, 0o711);
  const owner = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : null;
  deps = { cache: new TreeCache(join(root, "slots"), owner), sandbox: bwrapSandbox({ stateDir: join(root, "sandbox") }), owner, workDir: join(root, "work"), stageDir: join(root, "ws") };
  prepareStageDir(deps.stageDir);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function run(api: Api, ws: string, command: string, extra: Partial<RunRequest> = {}) {
  await workspaceRecord(api.driver, T, ws);
  const token = await mintSyncToken(SECRET, { t: T, w: ws, r: `k${++seq}` }, 600);
  const req: RunRequest = { version: 1, idempotency_key: `k${seq}`, tenant: T, workspace: ws, command, timeout_ms: 120_000, sync: { url: api.url, token }, ...extra };
  return runCommand(req, httpSyncClient({ url: api.url, token }), deps);
}

const text = async (api: Api, ws: string, path: string) => {
  const o = await api.driver.get(fileKey(T, ws, path));
  return o ? await new Response(o.body).text() : null;
};
const put = (api: Api, ws: string, path: string, body: string) => api.driver.put(fileKey(T, ws, path), body);

/** Seeds, then a command that creates 3,000 files, changes two, deletes 100; a tool changes three of them meanwhile. */
async function bigRun(api: Api, ws: string) {
  for (let i = 0; i < 100; i++) await put(api, ws, `old/o${i}.txt`, `old ${i}\n`);
  await put(api, ws, "mod.txt", "base\n");
  await put(api, ws, "clash.txt", "base\n");
  await put(api, ws, "old-theirs.txt", "base\n");
  api.beforeWriteBack = async () => {
    await put(api, ws, "clash.txt", "theirs\n");
    await put(api, ws, "gen/d7/f7.txt", "theirs too\n");
    await put(api, ws, "old-theirs.txt", "theirs\n");
  };
  api.log.length = 0;
  const command = [
    "for d in $(seq 0 29); do mkdir -p gen/d$d; done",
    "for i in $(seq 0 2999); do echo \"content $i needle_$i\" > gen/d$((i % 30))/f$i.txt; done",
    "echo mine > mod.txt; echo mine > clash.txt",
    "rm -r old old-theirs.txt",
  ].join(" && ");
  return run(api, ws, command);
}

describe("batched write-back through the real sandbox", () => {
  it("3,000 created files, changes and 101 deletes: all written back in batches, conflicts saved, nothing unsynced", async () => {
    const api = await startApi({ batches: true });
    try {
      const r = await bigRun(api, "big");
      expect(r.exit_code, r.output).toBe(0);
      expect(r.unsynced).toBeUndefined();
      expect(r.skipped).toEqual([]);
      expect(r.files_created.length).toBe(2999);
      expect(r.files_changed).toContain("mod.txt");
      expect(r.files_deleted.length).toBe(100);
      expect(r.conflicts).toEqual([
        { path: "clash.txt", change: "modified", reason: "changed_meanwhile", saved_as: `.toolshed/conflicts/${r.run_id}/clash.txt` },
        { path: "gen/d7/f7.txt", change: "created", reason: "changed_meanwhile", saved_as: `.toolshed/conflicts/${r.run_id}/gen/d7/f7.txt` },
        { path: "old-theirs.txt", change: "deleted", reason: "changed_meanwhile" },
      ]);
      expect(await text(api, "big", "gen/d7/f7.txt")).toBe("theirs too\n");
      expect(await text(api, "big", `.toolshed/conflicts/${r.run_id}/gen/d7/f7.txt`)).toBe("content 7 needle_7\n");
      expect(await text(api, "big", "clash.txt")).toBe("theirs\n");
      expect(await text(api, "big", `.toolshed/conflicts/${r.run_id}/clash.txt`)).toBe("mine\n");
      expect(await text(api, "big", "old-theirs.txt")).toBe("theirs\n");
      expect(await text(api, "big", "mod.txt")).toBe("mine\n");
      expect(await text(api, "big", "gen/d12/f2982.txt")).toBe("content 2982 needle_2982\n");
      expect(await text(api, "big", "old/o5.txt")).toBeNull();
      // Batches, not a request per file: 3,002 writes in ~50 put batches, 100 deletes in 2.
      const count = (k: string) => api.log.filter((l) => l === k).length;
      expect(count("POST /v1/sync/put")).toBeGreaterThanOrEqual(47);
      expect(count("POST /v1/sync/put")).toBeLessThanOrEqual(60);
      expect(count("POST /v1/sync/delete")).toBeLessThanOrEqual(3);
      expect(count("PUT /v1/sync/files")).toBe(2); // the two conflict copies
      expect(count("DELETE /v1/sync/files")).toBe(0);
      // The next run sees exactly storage: the slot is in step (nothing to download, nothing changed).
      const again = await run(api, "big", "ls gen | wc -l; cat gen/d7/f7.txt; test ! -e old-theirs.txt || cat old-theirs.txt");
      expect(again.stdout).toBe("30\ntheirs too\ntheirs\n");
      expect(again.files_changed).toEqual([]);
    } finally {
      api.close();
    }
  }, 180_000);

  it("against an API without the batch routes: the same outcome, one request per file", async () => {
    const api = await startApi({ batches: false });
    try {
      for (let i = 0; i < 20; i++) await put(api, "old-api", `old/o${i}.txt`, `old ${i}\n`);
      await put(api, "old-api", "clash.txt", "base\n");
      api.beforeWriteBack = async () => void (await put(api, "old-api", "clash.txt", "theirs\n"));
      api.log.length = 0;
      const r = await run(api, "old-api", "for i in $(seq 0 199); do echo $i > n$i.txt; done; echo mine > clash.txt; rm -r old");
      expect(r.unsynced).toBeUndefined();
      expect(r.files_created.length).toBe(200);
      expect(r.files_deleted.length).toBe(20);
      expect(r.conflicts.map((c) => [c.path, c.saved_as])).toEqual([["clash.txt", `.toolshed/conflicts/${r.run_id}/clash.txt`]]);
      expect(await text(api, "old-api", "n150.txt")).toBe("150\n");
      expect(await text(api, "old-api", "old/o3.txt")).toBeNull();
      const count = (k: string) => api.log.filter((l) => l === k).length;
      // Asked by the batches in flight before the first 404 came back, then never again.
      const asked = count("POST /v1/sync/put") + count("POST /v1/sync/delete");
      expect(asked).toBeGreaterThanOrEqual(1);
      expect(asked).toBeLessThanOrEqual(4);
      expect(count("PUT /v1/sync/files")).toBe(202); // 200 files, clash.txt (refused), its conflict copy
      expect(count("DELETE /v1/sync/files")).toBe(20);
    } finally {
      api.close();
    }
  }, 120_000);

  it("past the deadline no batch is started: the rest is unsynced and not in the workspace", async () => {
    const api = await startApi({ batches: true });
    try {
      const r = await run(api, "late", "for i in $(seq 0 299); do echo $i > n$i.txt; done", { limits: { writeback_ms: 1 } });
      expect(r.unsynced?.reasons).toEqual(["deadline"]);
      expect(r.files_created.length + r.unsynced!.count).toBe(300);
      for (const p of r.unsynced!.paths) expect(await text(api, "late", p)).toBeNull();
    } finally {
      api.close();
    }
  }, 60_000);
});

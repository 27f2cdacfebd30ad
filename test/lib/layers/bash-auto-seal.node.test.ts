/**
 * The real runner over a plain workspace of raw uploads (Node, the bubblewrap sandbox, the local
 * executor reaching the app's /v1/sync): its first run seals the upper layer into packs
 * (lib/layers/auto-seal.ts) and still sees every file; later runs write back over the packed files,
 * and a cold runner (an empty cache) fetches them from the packs.
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
import { httpSyncClient } from "../../../lib/sync/http.js";
import { httpRunRecords } from "../../../lib/sync/runs.js";
import { searchIndexer } from "../../../lib/search/indexer.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import type { StorageDriver } from "../../../lib/storage/types.js";

const ADMIN = "admin-token-for-tests";
const SECRET = "sync-secret-for-tests-0123456789";
const FP = "t/acme/w/main/f/";
const N = 300;
const body = (i: number) => `file ${i}\n`;

describe("bash over a plain workspace of raw uploads: the automatic seal", () => {
  let app: ReturnType<typeof createApp>;
  let key: string;
  const roots: string[] = [];
  const executors: ReturnType<typeof localExecutor>[] = [];
  const memory = memoryDriver();
  const gets: string[] = [];
  const storage: StorageDriver = { ...memory, get: (k, o) => (gets.push(k), memory.get(k, o)) };
  const req = (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...(init.headers as Record<string, string> | undefined) } });
  const call = async (tool: string, args: unknown) => {
    const r = await req(`/v1/workspaces/main/tools/${tool}`, { method: "POST", body: JSON.stringify(args) });
    return { status: r.status, body: (await r.json()) as any };
  };
  const text = async (p: string) => {
    const r = await req(`/v1/workspaces/main/files/${p}`);
    return r.status === 200 ? await r.text() : null;
  };
  /** An app whose bash runs on a fresh runner (an empty cache: a cold start). */
  const freshApp = () => {
    const root = mkdtempSync(join(tmpdir(), "toolshed-autoseal-"));
    chmodSync(root, 0o711);
    roots.push(root);
    const viaApp = ((u: string, i: RequestInit) => app.request(u, i)) as typeof fetch;
    const executor = localExecutor({ root, syncClient: (r) => httpSyncClient({ ...r.sync, fetch: viaApp }), runRecords: (r) => httpRunRecords({ ...r.sync, fetch: viaApp }) });
    executors.push(executor);
    const deps = { storage, kv, adminToken: ADMIN, executor, syncSecret: SECRET, syncUrl: "http://toolshed.internal", listeners: [searchIndexer()] } as AppDeps;
    app = createApp(deps, [...fileTools, bash]);
  };
  const kv = storageKeyValue(memoryDriver(), "kv/");
  const meta = async () => JSON.parse(await new Response((await memory.get("t/acme/w/main/meta.json"))!.body).text()) as { base?: string | null };

  beforeAll(async () => {
    freshApp();
    const admin = (path: string, b: unknown) => Promise.resolve(app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(b) })).then((r) => r.json() as Promise<any>);
    await admin("/v1/admin/tenants", { id: "acme" });
    key = (await admin("/v1/admin/tenants/acme/keys", {})).key;
    expect((await req("/v1/workspaces", { method: "POST", body: JSON.stringify({ id: "main" }) })).status).toBe(201);
    // What raw uploads leave: one object per file, no lower layer.
    for (let i = 0; i < N; i++) await memory.put(`${FP}src/f${String(i).padStart(4, "0")}.txt`, body(i));
  });
  afterAll(async () => {
    for (const e of executors) await e.handler.close();
    for (const r of roots) rmSync(r, { recursive: true, force: true });
  });

  it("the first run seals and sees every file; a write-back over the packed files lands; a cold runner reads packs, not files", async () => {
    expect((await meta()).base ?? null).toBeNull();
    const r = await call("bash", { command: "ls src | wc -l && cat src/f0007.txt" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.output).toContain(`${N}\n`);
    expect(r.body.output).toContain(body(7));
    expect((await meta()).base).toBeTruthy();
    expect((await memory.list({ prefix: FP })).objects).toEqual([]);
    const w = await call("bash", { command: "echo more >> src/f0001.txt && rm src/f0002.txt && echo new > src/new.txt" });
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    expect(await text("src/f0001.txt")).toBe(`${body(1)}more\n`);
    expect(await text("src/f0002.txt")).toBeNull();
    expect(await text("src/new.txt")).toBe("new\n");
    freshApp();
    gets.length = 0;
    const cold = await call("bash", { command: "cat src/f0299.txt && ls src | wc -l" });
    expect(cold.status, JSON.stringify(cold.body)).toBe(200);
    expect(cold.body.output).toContain(body(299));
    expect(cold.body.output).toContain(`${N}\n`);
    // The cold start read the upper files (f0001, new.txt) and the whiteout's key alone, the rest from packs.
    expect(gets.filter((k) => k.startsWith(FP)).length).toBeLessThan(10);
    expect(gets.some((k) => k.includes("/packs/"))).toBe(true);
  });
});

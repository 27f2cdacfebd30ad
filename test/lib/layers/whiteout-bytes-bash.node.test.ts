/**
 * No content is reserved (issue #25, docs/whiteouts.md), through the runner's doors: files of the
 * bytes that marked deletions before (v1), written by bash and run_code in the real sandbox and
 * written back through /v1/sync, survive a checkpoint, a fork, a restore and the automatic seal
 * (the conditional manifest's), and the runner sees them; its deletions of lower files still hide
 * them. Storage answers as S3 does (MD5 etags, no content type in listings: memoryDriver s3Like),
 * the case where a listing tells a whiteout by size and ETag alone.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import bash from "../../../functions/bash.js";
import { tools as fileTools } from "../../../functions/index.js";
import run_code from "../../../functions/run_code.js";
import { localExecutor } from "../../../infra/container/local-executor.js";
import { createApp } from "../../../lib/api/app.js";
import type { AppDeps } from "../../../lib/api/deps.js";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { httpRunRecords } from "../../../lib/sync/runs.js";
import { V1_WHITEOUT_BODY } from "../../../lib/layers/whiteout.js";
import { searchIndexer } from "../../../lib/search/indexer.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";

const ADMIN = "admin-token-for-tests";
const SECRET = "sync-secret-for-tests-0123456789";
const V1 = new TextEncoder().encode(V1_WHITEOUT_BODY);
const PRINTF_V1 = String.raw`printf '\000toolshed:whiteout:v1\000'`;
const MANY = 300;

describe("bash and run_code: any bytes are a file", () => {
  let app: ReturnType<typeof createApp>;
  let key: string;
  let root: string;
  let executor: ReturnType<typeof localExecutor>;
  const storage = memoryDriver({ s3Like: true });
  const req = (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...(init.headers as Record<string, string> | undefined) } });
  const call = async (tool: string, args: unknown, ws = "main") => {
    const r = await req(`/v1/workspaces/${ws}/tools/${tool}`, { method: "POST", body: JSON.stringify(args) });
    const body = (await r.json()) as any;
    expect(r.status, JSON.stringify(body)).toBe(200);
    return body;
  };
  const bytesOf = async (p: string, ws = "main") => {
    const r = await req(`/v1/workspaces/${ws}/files/${p}`);
    return r.status === 200 ? new Uint8Array(await r.arrayBuffer()) : (await r.body?.cancel(), null);
  };
  const post = async (path: string, body: unknown, status: number) => {
    const r = await req(path, { method: "POST", body: JSON.stringify(body) });
    const got = (await r.json()) as any;
    expect(r.status, JSON.stringify(got)).toBe(status);
    return got;
  };
  const meta = async () => JSON.parse(await new Response((await storage.get("t/acme/w/main/meta.json"))!.body).text()) as { base?: string };
  const upper = async () => (await storage.list({ prefix: "t/acme/w/main/f/" })).objects.length;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "toolshed-whiteout-bytes-"));
    chmodSync(root, 0o711);
    const viaApp = ((u: string, i: RequestInit) => app.request(u, i)) as typeof fetch;
    executor = localExecutor({ root, syncClient: (r) => httpSyncClient({ ...r.sync, fetch: viaApp }), runRecords: (r) => httpRunRecords({ ...r.sync, fetch: viaApp }) });
    const deps = { storage, kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, executor, syncSecret: SECRET, syncUrl: "http://toolshed.internal", listeners: [searchIndexer()] } as AppDeps;
    app = createApp(deps, [...fileTools, bash, run_code]);
    const admin = (path: string, body: unknown) => Promise.resolve(app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).then((r) => r.json() as Promise<any>);
    await admin("/v1/admin/tenants", { id: "acme" });
    key = (await admin("/v1/admin/tenants/acme/keys", {})).key;
    await post("/v1/workspaces", { id: "main" }, 201);
    for (const p of ["keep.txt", "gone.txt", "over.txt"]) await call("write", { file_path: p, content: `${p}\n` });
    await post("/v1/workspaces/main/checkpoints", { name: "base" }, 201);
    expect(await upper()).toBe(0);
  });
  afterAll(async () => {
    await executor.handler.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("written by bash and run_code: the same bytes after a checkpoint, a fork and a restore; the runner sees them", async () => {
    await call("bash", { command: `${PRINTF_V1} > v1.bin && cp v1.bin copy.bin && cat v1.bin > over.txt && rm gone.txt` });
    await call("run_code", { language: "node", code: `require("fs").writeFileSync("node.bin", Buffer.from([0, ...Buffer.from("toolshed:whiteout:v1"), 0]));` });
    const want: Record<string, Uint8Array | null> = { "keep.txt": new TextEncoder().encode("keep.txt\n"), "gone.txt": null, "v1.bin": V1, "copy.bin": V1, "over.txt": V1, "node.bin": V1 };
    const check = async (ws = "main") => {
      for (const [p, b] of Object.entries(want)) expect(await bytesOf(p, ws), `${ws}:${p}`).toEqual(b);
    };
    /** What the runner sees: each file's size and whether it is the v1 bytes. */
    const seen = async (ws = "main") =>
      (await call("bash", { command: `for f in *; do printf '%s %s ' "$f" "$(wc -c < "$f")"; ${PRINTF_V1} | cmp -s - "$f" && echo v1 || echo other; done` }, ws)).data.stdout;
    const runnerView = "copy.bin 22 v1\nkeep.txt 9 other\nnode.bin 22 v1\nover.txt 22 v1\nv1.bin 22 v1\n";
    await check();
    expect(await seen()).toBe(runnerView);

    const cp = await post("/v1/workspaces/main/checkpoints", { name: "v1" }, 201);
    expect(await upper()).toBe(0);
    await check();
    expect(await seen()).toBe(runnerView);

    await post("/v1/workspaces", { id: "forked", from_workspace: "main" }, 201);
    await check("forked");
    expect(await seen("forked")).toBe(runnerView);

    await call("bash", { command: "rm v1.bin node.bin && echo changed > copy.bin" });
    expect(await bytesOf("v1.bin")).toBeNull();
    await post(`/v1/workspaces/main/checkpoints/${cp.id}/restore`, {}, 200);
    await check();
    expect(await seen()).toBe(runnerView);
  });

  it("the automatic seal (a run over a large upper layer) keeps files of the v1 bytes", async () => {
    const before = (await meta()).base;
    for (let i = 0; i < MANY; i++) {
      const r = await req(`/v1/workspaces/main/files/many/${i}.bin`, { method: "PUT", headers: { "content-length": String(V1.length), "content-type": "application/octet-stream" }, body: V1 });
      expect(r.status).toBe(201);
    }
    expect(await upper()).toBeGreaterThanOrEqual(MANY);
    const r = await call("bash", { command: `ls many | wc -l && cat many/* | wc -c && for f in many/*; do ${PRINTF_V1} | cmp -s - "$f" || echo "differs: $f"; done` });
    expect(r.data.stdout).toBe(`${MANY}\n${MANY * V1.length}\n`);
    expect((await meta()).base).not.toBe(before); // sealed by the run's manifest
    expect(await upper()).toBeLessThan(MANY);
    for (const i of [0, 150, MANY - 1]) expect(await bytesOf(`many/${i}.bin`)).toEqual(V1);
  });
});

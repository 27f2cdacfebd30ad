/**
 * The bash runner over a layered workspace (Node, the real bubblewrap sandbox, the local executor
 * reaching the app's /v1/sync): it sees lower files, writes back over them, deletes them (whiteouts).
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

const ADMIN = "admin-token-for-tests";
const SECRET = "sync-secret-for-tests-0123456789";

describe("bash over a layered workspace", () => {
  let app: ReturnType<typeof createApp>;
  let key: string;
  let root: string;
  let executor: ReturnType<typeof localExecutor>;
  const storage = memoryDriver();
  const req = (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...(init.headers as Record<string, string> | undefined) } });
  const call = async (tool: string, args: unknown) => {
    const r = await req(`/v1/workspaces/main/tools/${tool}`, { method: "POST", body: JSON.stringify(args) });
    return { status: r.status, body: (await r.json()) as any };
  };
  const text = async (p: string) => {
    const r = await req(`/v1/workspaces/main/files/${p}`);
    return r.status === 200 ? await r.text() : null;
  };

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "toolshed-layers-"));
    chmodSync(root, 0o711);
    const viaApp = ((u: string, i: RequestInit) => app.request(u, i)) as typeof fetch;
    executor = localExecutor({ root, syncClient: (r) => httpSyncClient({ ...r.sync, fetch: viaApp }), runRecords: (r) => httpRunRecords({ ...r.sync, fetch: viaApp }) });
    const deps = { storage, kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, executor, syncSecret: SECRET, syncUrl: "http://toolshed.internal", listeners: [searchIndexer()] } as AppDeps;
    app = createApp(deps, [...fileTools, bash]);
    const admin = (path: string, body: unknown) => Promise.resolve(app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).then((r) => r.json() as Promise<any>);
    await admin("/v1/admin/tenants", { id: "acme" });
    key = (await admin("/v1/admin/tenants/acme/keys", {})).key;
    expect((await req("/v1/workspaces", { method: "POST", body: JSON.stringify({ id: "main" }) })).status).toBe(201);
    for (const [p, c] of Object.entries({ "lower.txt": "from the lower layer\n", "dir/gone.txt": "delete me\n", "dir/stay.txt": "stay\n" })) {
      expect((await req(`/v1/workspaces/main/files/${p}`, { method: "PUT", headers: { "content-type": "text/plain", "content-length": String(new TextEncoder().encode(c).length) }, body: c })).status).toBeLessThan(300);
    }
    expect((await req("/v1/workspaces/main/checkpoints", { method: "POST", body: "{}" })).status).toBe(201);
    // nothing upper: every file is in the pack
    expect((await storage.list({ prefix: "t/acme/w/main/f/" })).objects).toEqual([]);
  });
  afterAll(async () => {
    await executor.handler.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("sees lower files, writes over them, deletes them; tools see the result", async () => {
    const r = await call("bash", { command: "cat lower.txt && ls dir && echo changed >> lower.txt && rm dir/gone.txt && echo new > fresh.txt" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.output).toContain("from the lower layer");
    expect(r.body.output).toContain("gone.txt");
    expect(await text("lower.txt")).toBe("from the lower layer\nchanged\n");
    expect(await text("dir/gone.txt")).toBe(null);
    expect(await text("dir/stay.txt")).toBe("stay\n");
    expect(await text("fresh.txt")).toBe("new\n");
    const again = await call("bash", { command: "ls -R . | sort" });
    expect(again.body.output).not.toContain("gone.txt");
    expect(again.body.output).toContain("stay.txt");
    const g = await call("grep", { pattern: "changed", output_mode: "files_with_matches" });
    expect(g.body.output).toContain("lower.txt");
  });
});

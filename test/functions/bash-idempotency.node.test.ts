/**
 * Idempotency-Key on bash (issue #28 §3): a command with a side effect, retried 10 times at once with
 * one key, runs once in the real sandbox, and every retry gets the same answer. (The other mutating
 * kinds, over local R2: test/lib/api/idempotency.test.ts.)
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import bash from "../../functions/bash.js";
import { tools as fileTools } from "../../functions/index.js";
import { localExecutor } from "../../infra/container/local-executor.js";
import { createApp } from "../../lib/api/app.js";
import type { AppDeps } from "../../lib/api/deps.js";
import { httpSyncClient } from "../../lib/sync/http.js";
import { httpRunRecords } from "../../lib/sync/runs.js";
import { memoryDriver } from "../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../lib/storage/kv-over-storage.js";

const ADMIN = "admin-token-for-tests";
const tools = [...fileTools, bash];
let app: ReturnType<typeof createApp>;
let key: string;
let root: string;
let executor: ReturnType<typeof localExecutor>;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "toolshed-bash-idem-"));
  chmodSync(root, 0o711);
  const viaApp = ((u: string, i: RequestInit) => app.request(u, i)) as typeof fetch;
  executor = localExecutor({ root, syncClient: (r) => httpSyncClient({ ...r.sync, fetch: viaApp }), runRecords: (r) => httpRunRecords({ ...r.sync, fetch: viaApp }) });
  const deps = { storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, executor, syncSecret: "sync-secret-for-tests-0123456789", syncUrl: "http://toolshed.internal" } as AppDeps;
  app = createApp(deps, tools);
  const admin = async (path: string, body: unknown) => (await app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json() as Promise<any>;
  await admin("/v1/admin/tenants", { id: "acme" });
  key = (await admin("/v1/admin/tenants/acme/keys", {})).key;
  const ws = await app.request("/v1/workspaces", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ id: "main" }) });
  expect(ws.status).toBe(201);
});
afterAll(async () => {
  await executor.handler.close();
  rmSync(root, { recursive: true, force: true });
});

const bashCall = (command: string, idem: string) =>
  app.request("/v1/workspaces/main/tools/bash", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": "s1", "idempotency-key": idem }, body: JSON.stringify({ command }) });

describe("Idempotency-Key on bash", () => {
  it("a command that appends a line, retried 10 times concurrently with one key, appends once; every answer is the same", async () => {
    const command = "echo run >> runs.log; wc -l < runs.log";
    const client = async () => {
      for (let i = 0; i < 600; i++) {
        const res = await bashCall(command, "bash-1");
        const text = await res.text();
        if (res.status === 409 && text.includes("still running")) {
          expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
          await new Promise((r) => setTimeout(r, 25));
          continue;
        }
        return { status: res.status, text };
      }
      throw new Error("never got the answer");
    };
    const answers = await Promise.all(Array.from({ length: 10 }, client));
    expect(new Set(answers.map((a) => `${a.status} ${a.text}`)).size).toBe(1);
    expect(answers[0]!.status).toBe(200);
    const file = await app.request("/v1/workspaces/main/files/runs.log", { headers: { authorization: `Bearer ${key}` } });
    expect(await file.text()).toBe("run\n");
    // A new key runs the command again.
    const again = await bashCall(command, "bash-2");
    expect(((await again.json()) as any).output.trim()).toBe("2");
  });
});

/**
 * The sandbox's network is the `network` scope at work, so the one authorization rule decides it
 * (DESIGN invariant 12, lib/run/toolset.ts): a command gets the egress proxy only when the key holds
 * `network` AND neither the key's tool list nor the workspace's bounds it away. Real bubblewrap sandbox.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { localExecutor } from "../../../infra/container/local-executor.js";
import { createApp } from "../../../lib/api/app.js";
import type { AppDeps } from "../../../lib/api/deps.js";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { httpRunRecords } from "../../../lib/sync/runs.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";

const ADMIN = "admin-token";
let root = "";
let executor: ReturnType<typeof localExecutor>;
let app: ReturnType<typeof createApp>;
let key = "";

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "toolshed-netscope-"));
  chmodSync(root, 0o711);
  const viaApp = ((u: string, i: RequestInit) => app.request(u, i)) as typeof fetch;
  executor = localExecutor({ root, syncClient: (req) => httpSyncClient({ ...req.sync, fetch: viaApp }), runRecords: (req) => httpRunRecords({ ...req.sync, fetch: viaApp }) });
  const deps = { storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, executor, syncSecret: "sync-secret-for-tests-0123456789", syncUrl: "http://toolshed.internal", policies: undefined } as AppDeps;
  app = createApp(deps, tools);
  const adm = async (path: string, body: unknown) => (await app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json() as Promise<any>;
  await adm("/v1/admin/tenants", { id: "acme" });
  await app.request("/v1/admin/tenants/acme/policy", { method: "PUT", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify({ gate: [] }) });
  // A key that may use every tool, network included.
  key = (await adm("/v1/admin/tenants/acme/keys", { scopes: ["read", "write", "execute", "network"] })).key;
  for (const [id, list] of [["open", undefined], ["coding", "coding"], ["readonly_bash", ["readonly", "bash"]]] as const) {
    const r = await app.request("/v1/workspaces", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ id, ...(list ? { tools: list } : {}) }) });
    expect(r.status, id).toBe(201);
  }
}, 60_000);
afterAll(async () => {
  await executor?.handler.close();
  rmSync(root, { recursive: true, force: true });
});

const proxyIn = async (ws: string) => {
  const r = await app.request(`/v1/workspaces/${ws}/tools/bash`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ command: 'echo "proxy=${HTTPS_PROXY:-none}"' }) });
  const body = (await r.json()) as any;
  expect(body.ok, JSON.stringify(body)).toBe(true);
  return /proxy=none/.test(body.output) ? "none" : "proxy";
};

describe("the sandbox's network follows the one authorization rule", () => {
  it("a network key's command reaches the network in a workspace whose tools allow it, and not in one whose tools need no network (coding, [readonly, bash])", async () => {
    expect(await proxyIn("open")).toBe("proxy");
    expect(await proxyIn("coding")).toBe("none");
    expect(await proxyIn("readonly_bash")).toBe("none");
  });
});

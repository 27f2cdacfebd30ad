/**
 * The real app over memory storage with the real sandbox (local executor, bubblewrap), for the MCP
 * tasks tests of both revisions: tenants with an agent key and an approver key, raw routes, and
 * every usage record the app wrote. Loopback is allowed to outbound fetches (test-only switch) so a
 * tenant's model endpoint can be a scripted server on 127.0.0.1.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { tools } from "../../../functions/index.js";
import { localExecutor } from "../../../infra/container/local-executor.js";
import type { Executor } from "../../../lib/exec/types.js";
import { createApp } from "../../../lib/api/app.js";
import type { AppDeps } from "../../../lib/api/deps.js";
import type { UsageRecord } from "../../../lib/run/metering/record.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { httpRunRecords } from "../../../lib/sync/runs.js";

export const ADMIN = "mcp-tasks-admin";

export interface Tenant {
  id: string;
  key: string;
  /** The agent key's id (its call tasks' folder: callTaskKey). */
  keyId: string;
  approver: string;
}

/**
 * One app with its own sandbox root (`root`: the runner's directory, its sandboxes' trees below it); close() stops the runner and removes the root. `extra` replaces
 * deps (a usage store: then `usage` stays empty); `runnerFetch` wraps the fetch the runner reaches the app by;
 * `wrapExecutor` the executor the app is given (the real one stays the runner: close() stops it).
 */
export function sandboxApp(extra: Partial<AppDeps> = {}, runnerFetch: (f: typeof fetch) => typeof fetch = (f) => f, wrapExecutor: (e: Executor) => Executor = (e) => e) {
  const root = mkdtempSync(join(tmpdir(), "toolshed-mcp-tasks-"));
  chmodSync(root, 0o711);
  const usage: UsageRecord[] = [];
  let app: ReturnType<typeof createApp>;
  const viaApp = runnerFetch(((u: string, i: RequestInit) => app.request(u, i)) as typeof fetch);
  // fetch: a live sandbox's channel (/v1/sync/live/*) reaches the app too, when `extra` gives it a liveCoordinator.
  const executor = localExecutor({ root, fetch: viaApp, syncClient: (req) => httpSyncClient({ ...req.sync, fetch: viaApp }), runRecords: (req) => httpRunRecords({ ...req.sync, fetch: viaApp }) });
  const storage = memoryDriver();
  const deps = { storage, kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, executor: wrapExecutor(executor), syncSecret: "sync-secret-for-tests-0123456789", syncUrl: "http://toolshed.internal", onUsage: (u: UsageRecord) => void usage.push(u), webFetch: { allowLoopback: true }, ...extra } as AppDeps;
  app = createApp(deps, tools);

  const call = async (path: string, init: RequestInit, auth: string) =>
    app.request(path, { ...init, headers: { authorization: `Bearer ${auth}`, "content-type": "application/json", ...(init.headers as Record<string, string> | undefined) } });
  const post = async (path: string, body: unknown, auth: string, method = "POST") => {
    const r = await call(path, { method, body: JSON.stringify(body) }, auth);
    return { status: r.status, body: (await r.json()) as any };
  };
  /** A tenant with an agent key, an approver key and the workspaces named. */
  async function tenant(id: string, workspaces = ["main"]): Promise<Tenant> {
    expect((await post("/v1/admin/tenants", { id }, ADMIN)).status).toBe(201);
    const made = (await post(`/v1/admin/tenants/${id}/keys`, {}, ADMIN)).body as { key: string; key_id: string };
    const approver = (await post(`/v1/admin/tenants/${id}/keys`, { name: "app", scopes: ["read", "approve"] }, ADMIN)).body.key as string;
    for (const ws of workspaces) expect((await post("/v1/workspaces", { id: ws }, made.key)).status).toBe(201);
    return { id, key: made.key, keyId: made.key_id, approver };
  }
  /** Puts a file through the raw files route. */
  async function upload(t: Tenant, path: string, body = "x", ws = "main"): Promise<void> {
    const r = await app.request(`/v1/workspaces/${ws}/files/${path}`, { method: "PUT", headers: { authorization: `Bearer ${t.key}`, "content-length": String(body.length) }, body });
    expect(r.status, await r.clone().text()).toBeLessThan(300);
  }
  const fileStatus = async (t: Tenant, path: string, ws = "main") => (await call(`/v1/workspaces/${ws}/files/${path}`, {}, t.key)).status;
  async function close(): Promise<void> {
    await executor.handler.close();
    rmSync(root, { recursive: true, force: true });
  }
  return { app, deps, storage, usage, call, post, tenant, upload, fileStatus, close, root };
}

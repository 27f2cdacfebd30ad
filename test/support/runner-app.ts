/**
 * The app with the real runner (infra/container/local-executor.ts: bubblewrap) whose sync requests
 * go through the app itself, over the storage a test gives (to count its operations), with tenant
 * `acme`, its key and workspace `main` made: what the packed write-back tests drive.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import bash from "../../functions/bash.js";
import { tools as fileTools } from "../../functions/index.js";
import { localExecutor } from "../../infra/container/local-executor.js";
import { createApp } from "../../lib/api/app.js";
import type { AppDeps } from "../../lib/api/deps.js";
import { httpSyncClient } from "../../lib/sync/http.js";
import { httpRunRecords } from "../../lib/sync/runs.js";
import { memoryDriver } from "../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../lib/storage/kv-over-storage.js";
import type { StorageDriver } from "../../lib/storage/types.js";

export const RUNNER_APP_ADMIN = "admin-token-for-tests";

/** `onSync`: told each sync request (its method and path) first; an answer it gives replaces the app's. `deps`: more of the app's (limits, listeners). */
export async function runnerApp(opts: { storage: StorageDriver; deps?: Partial<AppDeps>; onSync?: (method: string, path: string) => Response | undefined }) {
  const root = mkdtempSync(join(tmpdir(), "toolshed-runner-app-"));
  chmodSync(root, 0o711);
  const viaApp = (async (u: string, i: RequestInit = {}) => opts.onSync?.(i.method ?? "GET", new URL(u).pathname) ?? app.request(u, i)) as typeof fetch;
  const executor = localExecutor({ root, syncClient: (r) => httpSyncClient({ ...r.sync, fetch: viaApp }), runRecords: (r) => httpRunRecords({ ...r.sync, fetch: viaApp }) });
  const deps = { storage: opts.storage, kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: RUNNER_APP_ADMIN, executor, syncSecret: "sync-secret-for-tests-0123456789", syncUrl: "http://toolshed.internal", ...opts.deps } as AppDeps;
  const app = createApp(deps, [...fileTools, bash]);
  const admin = (path: string, body: unknown, method = "POST") => Promise.resolve(app.request(path, { method, headers: { authorization: `Bearer ${RUNNER_APP_ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).then((r) => r.json() as Promise<any>);
  await admin("/v1/admin/tenants", { id: "acme" });
  const key: string = (await admin("/v1/admin/tenants/acme/keys", {})).key;
  const created = await app.request("/v1/workspaces", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ id: "main" }) });
  if (created.status !== 201) throw new Error(`workspace main: ${created.status} ${await created.text()}`);
  const close = async () => {
    await executor.handler.close();
    rmSync(root, { recursive: true, force: true });
  };
  return { app, key, admin, close };
}

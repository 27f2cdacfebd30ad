/**
 * The app of the webhook tests (and of web_fetch's hostile-server tests): tenant "acme" with a
 * read/write/network key and its workspace "main"; loopback let through (the test servers); `extra`
 * deps replace the defaults (e.g. the Lambda transport).
 */
import { tools } from "../../../../functions/index.js";
import { createApp } from "../../../../lib/api/app.js";
import type { AppDeps } from "../../../../lib/api/deps.js";
import { memoryDriver } from "../../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../../lib/storage/kv-over-storage.js";

export const ADMIN = "admin-token";

export async function webhookApp(extra: Partial<AppDeps> = {}) {
  const app = createApp({ storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, webFetch: { allowLoopback: true }, ...extra }, tools);
  /** A POST with the admin token. */
  const adm = (path: string, body?: unknown) => app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, ...(body ? { body: JSON.stringify(body) } : {}) });
  await adm("/v1/admin/tenants", { id: "acme" });
  const key = ((await (await adm("/v1/admin/tenants/acme/keys", { scopes: ["read", "write", "network"] })).json()) as { key: string }).key;
  /** The key's headers. */
  const h = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  await app.request("/v1/workspaces", { method: "POST", headers: h, body: JSON.stringify({ id: "main" }) });
  return { app, adm, h };
}

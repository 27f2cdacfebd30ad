/**
 * Bearer authentication: tenant API keys, and the admin token for /v1/admin. Both go through
 * the client's backoff (lib/auth/backoff.ts) when the app has one. The route guard
 * (lib/routes/access.ts) is the only caller: routes never authenticate by themselves.
 */
import { ToolError } from "../errors.js";
import { safeEqual } from "../hash.js";
import type { AppDeps } from "../deps.js";
import { clientOf } from "./backoff.js";
import { resolveApiKey, type AuthInfo } from "./keys.js";

const bearer = (header: string | null): string | null => {
  const m = header?.match(/^Bearer\s+(\S+)\s*$/i);
  return m?.[1] ?? null;
};

/** The tenant and scopes of the request's API key, else UNAUTHORIZED (or RATE_LIMITED while the client backs off). */
export async function authenticateTenant(deps: AppDeps, headers: Headers): Promise<AuthInfo> {
  const client = clientOf(headers);
  deps.authBackoff?.check(client);
  const key = bearer(headers.get("authorization"));
  if (!key) throw new ToolError("UNAUTHORIZED", "Missing API key. Send 'Authorization: Bearer <api key>'.");
  const auth = await resolveApiKey(deps.kv, key, deps.apiKeys);
  if (!auth) {
    deps.authBackoff?.failed(client);
    throw new ToolError("UNAUTHORIZED", "Invalid or revoked API key. Send a current key as 'Authorization: Bearer <api key>'; an admin creates keys with POST /v1/admin/tenants/{tenant}/keys.");
  }
  deps.authBackoff?.succeeded(client);
  return auth;
}

/** Passes with the admin token, else UNAUTHORIZED (PERMISSION_DENIED when the admin API is off). */
export function authenticateAdmin(deps: AppDeps, headers: Headers): void {
  if (!deps.adminToken) throw new ToolError("PERMISSION_DENIED", "The admin API is disabled: set TOOLSHED_ADMIN_TOKEN.");
  const client = clientOf(headers);
  deps.authBackoff?.check(client);
  const token = bearer(headers.get("authorization"));
  if (!token) throw new ToolError("UNAUTHORIZED", "Missing admin token. Send 'Authorization: Bearer <TOOLSHED_ADMIN_TOKEN>'.");
  if (!safeEqual(token, deps.adminToken)) {
    deps.authBackoff?.failed(client);
    throw new ToolError("UNAUTHORIZED", "Invalid admin token. Send 'Authorization: Bearer <TOOLSHED_ADMIN_TOKEN>'.");
  }
  deps.authBackoff?.succeeded(client);
}

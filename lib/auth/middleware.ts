/** Bearer authentication: tenant API keys for /v1, the admin token for /v1/admin. */
import { createMiddleware } from "hono/factory";
import { ToolError } from "../errors.js";
import { safeEqual } from "../hash.js";
import type { AppDeps } from "../deps.js";
import type { AppEnv } from "../http.js";
import { resolveApiKey } from "./keys.js";

const bearer = (header: string | undefined): string | null => {
  const m = header?.match(/^Bearer\s+(\S+)\s*$/i);
  return m?.[1] ?? null;
};

export function requireTenant(deps: AppDeps) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const key = bearer(c.req.header("authorization"));
    const auth = key ? await resolveApiKey(deps.kv, key) : null;
    if (!auth) throw new ToolError("UNAUTHORIZED", key ? "Invalid or revoked API key." : "Missing API key. Send 'Authorization: Bearer <api key>'.");
    c.set("auth", auth);
    await next();
  });
}

export function requireAdmin(deps: AppDeps) {
  return createMiddleware<AppEnv>(async (c, next) => {
    if (!deps.adminToken) throw new ToolError("PERMISSION_DENIED", "The admin API is disabled: set TOOLSHED_ADMIN_TOKEN.");
    const token = bearer(c.req.header("authorization"));
    if (!token || !safeEqual(token, deps.adminToken)) throw new ToolError("UNAUTHORIZED", "Missing or invalid admin token.");
    await next();
  });
}

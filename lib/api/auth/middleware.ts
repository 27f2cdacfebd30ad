/**
 * Bearer authentication: tenant API keys and OAuth access tokens (docs/oauth.md), and the admin
 * token for /v1/admin. All go through the backoff after failed authentication
 * (lib/api/auth/backoff.ts) when the app has one, counted per presented credential (throttleKeyOf).
 * The route guard (lib/api/routes/access.ts) is the only caller: routes never authenticate by
 * themselves. A 401 or 403 of a tenant route carries the Bearer challenge (RFC 6750, RFC 9728):
 * the guard runs every tenant route inside withBearerChallenge.
 */
import type { Context } from "hono";
import { ToolError } from "../../shared/errors.js";
import { safeEqual } from "../../shared/hash.js";
import type { AppDeps } from "../deps.js";
import { clientOf } from "./backoff.js";
import { isExpired } from "./key-bounds.js";
import { keyIdOf, resolveApiKey } from "./keys.js";
import type { AuthInfo } from "../../contract/caller.js";
import type { AppEnv } from "../http.js";
import { isJwtShaped, verifyAccessToken } from "./oauth-token.js";
import { metadataUrl, resourceBase } from "./resource.js";

const bearer = (header: string | null): string | null => {
  const m = header?.match(/^Bearer\s+(\S+)\s*$/i);
  return m?.[1] ?? null;
};

/**
 * Why a request with this Authorization header has no bearer token, opening the message that says
 * what to send: `missing` when there is no header, else what is wrong with its form. Never its
 * value (a key sent without its scheme is a secret); a scheme is named only when it looks like one.
 */
function noBearer(header: string | null, missing: string): string {
  const h = header?.trim() ?? "";
  if (!h) return missing;
  if (/^bearer$/i.test(h)) return "The Authorization header says Bearer but holds no token after it.";
  if (/^bearer\s/i.test(h)) return "The Authorization header holds more than one word after Bearer.";
  if (!/\s/.test(h)) return "The Authorization header holds no 'Bearer ' before the token.";
  const scheme = h.split(/\s/)[0]!;
  return /^[A-Za-z][A-Za-z-]{0,19}$/.test(scheme) ? `The Authorization header uses the '${scheme}' scheme; Toolshed takes Bearer.` : "The Authorization header is not of the form 'Bearer <token>'.";
}

/**
 * Whose failures a request's failures add to, and whose backoff it waits for: ONE rule.
 * - A key-shaped bearer (`tsk_<key id>_<secret>`): its key id from this client address. One
 *   tenant's revoked or mistyped key then slows only itself, never another key behind the same
 *   address (a shared NAT or egress proxy), and nobody elsewhere can lock a key out by presenting
 *   its (non-secret) id with wrong secrets. The id is read from the text, never looked up: a key
 *   id that exists and one that does not are counted and answered alike (no oracle).
 * - Anything else (not key-shaped, the admin token): the client address, one bucket per kind.
 */
export function throttleKeyOf(kind: "tenant" | "admin", token: string | null, headers: Headers): string {
  const client = clientOf(headers);
  const id = kind === "tenant" && token !== null ? keyIdOf(token) : null;
  return id !== null ? `key:${id}@${client}` : `${kind}@${client}`;
}

/**
 * The tenant and scopes of the request's API key or OAuth access token (a JWT: oauth-token.ts),
 * else UNAUTHORIZED (or RATE_LIMITED while its throttle key backs off). `url`: the request's, which
 * names the resource a token must be meant for.
 */
export async function authenticateTenant(deps: AppDeps, headers: Headers, url: URL): Promise<AuthInfo> {
  const key = bearer(headers.get("authorization"));
  const client = throttleKeyOf("tenant", key, headers);
  deps.authBackoff?.check(client);
  if (!key) throw new ToolError("UNAUTHORIZED", `${noBearer(headers.get("authorization"), "Missing API key.")} Send 'Authorization: Bearer <api key>' (or an OAuth access token: docs/oauth.md).`);
  if (isJwtShaped(key)) {
    try {
      const auth = await verifyAccessToken(deps, key, url);
      deps.authBackoff?.succeeded(client);
      return auth;
    } catch (e) {
      if (e instanceof ToolError && e.code === "UNAUTHORIZED") deps.authBackoff?.failed(client);
      throw e;
    }
  }
  if (deps.adminToken && keyIdOf(key) === null && safeEqual(key, deps.adminToken)) {
    deps.authBackoff?.failed(client);
    throw new ToolError("UNAUTHORIZED", "This is the admin token, which only the admin routes (/v1/admin/...) take. Send an API key as 'Authorization: Bearer <api key>'; an admin creates keys with POST /v1/admin/tenants/{tenant}/keys.");
  }
  const auth = await resolveApiKey(deps.kv, key, deps.apiKeys);
  if (!auth) {
    deps.authBackoff?.failed(client);
    throw new ToolError("UNAUTHORIZED", "Invalid or revoked API key. Send a current key as 'Authorization: Bearer <api key>'; an admin creates keys with POST /v1/admin/tenants/{tenant}/keys.");
  }
  // Checked on every request, after the isolate's cache: an expiry is exact, whatever the cache holds.
  if (isExpired(auth)) {
    deps.authBackoff?.failed(client);
    throw new ToolError("UNAUTHORIZED", `This API key expired at ${auth.expires_at} (its expiry, or the end of its grace after a rotation). Use a current key; one with the 'manage' scope makes keys with POST /v1/keys.`, { expired_at: auth.expires_at });
  }
  deps.authBackoff?.succeeded(client);
  return auth;
}

/** Where the admin token comes from, for the messages that ask for it. */
const ADMIN_TOKEN_HOME = "the deployment's secret TOOLSHED_ADMIN_TOKEN (npm start keeps it in .dev.vars)";

/** Passes with the admin token, else UNAUTHORIZED (PERMISSION_DENIED when the admin API is off). */
export function authenticateAdmin(deps: AppDeps, headers: Headers): void {
  if (!deps.adminToken) throw new ToolError("PERMISSION_DENIED", "The admin API is disabled: set TOOLSHED_ADMIN_TOKEN.");
  const token = bearer(headers.get("authorization"));
  const client = throttleKeyOf("admin", token, headers);
  deps.authBackoff?.check(client);
  if (!token) throw new ToolError("UNAUTHORIZED", `${noBearer(headers.get("authorization"), "Missing admin token.")} Send 'Authorization: Bearer <admin token>': ${ADMIN_TOKEN_HOME}.`);
  if (!safeEqual(token, deps.adminToken)) {
    deps.authBackoff?.failed(client);
    // Told from the text's shape alone (never looked up): a key-shaped bearer is an API key sent to the wrong door.
    if (keyIdOf(token) !== null) throw new ToolError("UNAUTHORIZED", `This is an API key; the admin routes take the admin token instead: ${ADMIN_TOKEN_HOME}.`);
    throw new ToolError("UNAUTHORIZED", `Invalid admin token. Send 'Authorization: Bearer <admin token>': ${ADMIN_TOKEN_HOME}.`);
  }
  deps.authBackoff?.succeeded(client);
}

const quoted = (v: string) => `"${v.replace(/["\\]/g, "")}"`;

/**
 * Sets `WWW-Authenticate: Bearer resource_metadata="…"` on a tenant route's 401 or 403 (RFC 9728
 * §5.1), with `error="invalid_token"` for a refused token and, when the refusal is a scope the
 * key or token lacks, `error="insufficient_scope", scope="<needed>"` (RFC 6750 §3.1).
 */
export function bearerChallenge(deps: Pick<AppDeps, "syncUrl">, c: Context<AppEnv>, error?: ToolError): void {
  const url = new URL(c.req.url);
  const params = [`resource_metadata=${quoted(metadataUrl(resourceBase(deps.syncUrl, url), url))}`];
  const d = error?.details ?? {};
  if (error?.code === "PERMISSION_DENIED" && d.refused_by === "key" && typeof d.needed === "string") params.push(`error="insufficient_scope"`, `scope=${quoted(d.needed)}`);
  else if (error?.code === "UNAUTHORIZED" && c.req.header("authorization")) params.push(`error="invalid_token"`);
  c.header("WWW-Authenticate", `Bearer ${params.join(", ")}`);
}

/** Runs a tenant route's guard and handler: a 401/403 it throws, or answers (c.error), gets bearerChallenge. */
export async function withBearerChallenge(deps: Pick<AppDeps, "syncUrl">, c: Context<AppEnv>, step: () => Promise<void>): Promise<void> {
  try {
    await step();
  } catch (e) {
    if (e instanceof ToolError && (e.status === 401 || e.status === 403)) bearerChallenge(deps, c, e);
    throw e;
  }
  const status = c.finalized ? c.res.status : 0;
  if ((status === 401 || status === 403) && !c.res.headers.has("www-authenticate")) bearerChallenge(deps, c, c.error instanceof ToolError ? c.error : undefined);
}

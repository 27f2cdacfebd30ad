/**
 * A tenant's OAuth configuration (docs/oauth.md): the authorization servers whose access tokens act
 * as that tenant. We are a resource server only: we never issue tokens.
 *
 * Stored in object storage (strongly consistent): the tenant's config at t/<tenant>/oauth.json,
 * and one claim per (issuer, audience) pair at oauth/issuers/<sha256(issuer)>/<sha256(audience)>.json
 * naming the tenant, created with If-None-Match: * — so one (issuer, audience) pair belongs to at
 * most one tenant, and a token names its tenant by its `iss` and `aud` (lib/api/auth/oauth-token.ts).
 */
import { z } from "@hono/zod-openapi";
import { ToolError } from "../../shared/errors.js";
import { sha256Hex } from "../../shared/hash.js";
import { checkUrl } from "../../shared/ssrf.js";
import { OAUTH_ISSUERS_PREFIX, tenantOAuthKey } from "../../layout/paths.js";
import { isConditionFailed, type StorageDriver } from "../../storage/types.js";
import { SCOPES, type Scope } from "../../contract/caller.js";
import { checkReachable, type WebAccess } from "../../tools/web/transport.js";
import { fetchIssuerJson } from "./jwks.js";

export const MAX_ISSUERS = 5;

const IssuerInput = z.object({
  issuer: z.string().min(1).max(500).openapi({ description: "The authorization server's issuer identifier, exactly as its tokens' `iss` spell it (e.g. `https://example.eu.auth0.com/`).", example: "https://login.example.com/" }),
  audience: z.string().min(1).max(500).optional().openapi({ description: "What its tokens' `aud` must hold. Default: this deployment's resource URL (`resource`). Give another when the issuer is trusted by another tenant too: one (issuer, audience) pair belongs to one tenant." }),
  jwks_uri: z.string().min(1).max(1000).optional().openapi({ description: "Where its signing keys are. Default: the `jwks_uri` of its metadata (RFC 8414 `/.well-known/oauth-authorization-server`, else OpenID `/.well-known/openid-configuration`), read now." }),
  scope_map: z.record(z.string().min(1).max(200), z.array(z.enum(SCOPES)).max(SCOPES.length)).optional().openapi({ description: "The issuer's scopes → ours, when they differ (e.g. `{\"toolshed.readonly\": [\"read\"]}`). Absent: a token scope that is one of ours (read, write, execute, network, approve, manage) is that scope; with a map, only mapped scopes count." }),
}).strict();
export const OAuthConfigInput = z.object({ issuers: z.array(IssuerInput).min(1).max(MAX_ISSUERS) }).strict().openapi("OAuthConfigInput");
export type OAuthConfigInput = z.infer<typeof OAuthConfigInput>;

const IssuerView = z.object({ issuer: z.string(), audience: z.string(), jwks_uri: z.string(), scope_map: z.record(z.string(), z.array(z.enum(SCOPES))).optional() });
export const OAuthConfigView = z
  .object({
    tenant: z.string(),
    resource: z.string().openapi({ description: "This deployment's resource URL as the tenant's clients see it (TOOLSHED_PUBLIC_URL, else the origin of the request that saved the config)." }),
    issuers: z.array(IssuerView),
    updated_at: z.string(),
  })
  .openapi("OAuthConfig");

export type TrustedIssuer = z.infer<typeof IssuerView>;
export type OAuthConfig = z.infer<typeof OAuthConfigView>;

const claimPrefix = async (issuer: string) => `${OAUTH_ISSUERS_PREFIX}${await sha256Hex(issuer)}/`;
const claimKey = async (issuer: string, audience: string) => `${await claimPrefix(issuer)}${await sha256Hex(audience)}.json`;
const readJson = async <T>(storage: StorageDriver, key: string): Promise<T | null> => {
  const r = await storage.get(key);
  return r ? (JSON.parse(await new Response(r.body).text()) as T) : null;
};

/** An https URL (http only where the test-only loopback switch is on), passing the SSRF guard's URL check. */
function checkIssuerUrl(raw: string, field: string, access: WebAccess): URL {
  const { url } = checkUrl(raw, access.guard);
  if (url.protocol !== "https:" && !access.guard.allowLoopback) throw new ToolError("INVALID_ARGUMENT", `${field}: ${JSON.stringify(raw)} is not https; an authorization server's issuer and keys are reached only over https.`, { field });
  if (url.hash || (field === "issuer" && url.search)) throw new ToolError("INVALID_ARGUMENT", `${field}: ${JSON.stringify(raw)} has a ${url.hash ? "fragment" : "query"}; an issuer identifier has neither (RFC 8414).`, { field });
  return url;
}

/** The issuer's jwks_uri from its metadata: RFC 8414 first, then OpenID Connect discovery; the metadata's `issuer` must be this issuer. */
async function discoverJwksUri(issuer: string, access: WebAccess): Promise<string> {
  const u = new URL(issuer);
  const path = u.pathname.replace(/\/$/, "");
  const candidates = [`${u.origin}/.well-known/oauth-authorization-server${path}`, `${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`];
  const failures: string[] = [];
  for (const url of candidates) {
    let doc: Record<string, unknown>;
    try {
      doc = await fetchIssuerJson(url, access);
    } catch (e) {
      if (e instanceof ToolError && e.code === "BLOCKED") throw e;
      failures.push(e instanceof Error ? e.message : String(e));
      continue;
    }
    if (doc.issuer !== issuer) throw new ToolError("INVALID_ARGUMENT", `issuer: the metadata at ${url} names the issuer ${JSON.stringify(doc.issuer)}, not ${JSON.stringify(issuer)}; give the issuer exactly as the authorization server spells it (trailing slash included).`, { field: "issuer", metadata_issuer: doc.issuer });
    if (typeof doc.jwks_uri !== "string") throw new ToolError("INVALID_ARGUMENT", `issuer: the metadata at ${url} has no jwks_uri; give jwks_uri yourself.`, { field: "issuer" });
    return doc.jwks_uri;
  }
  throw new ToolError("INVALID_ARGUMENT", `issuer: no metadata found for ${issuer} (${failures.join("; ")}); check the issuer, or give jwks_uri yourself.`, { field: "issuer" });
}

/**
 * Replaces a tenant's OAuth config: checks every URL through the SSRF guard, discovers missing
 * jwks_uris, claims every (issuer, audience) pair for this tenant (ALREADY_EXISTS when another
 * tenant holds one), writes the config, then releases the pairs it no longer holds.
 */
export async function saveOAuthConfig(storage: StorageDriver, tenant: string, input: OAuthConfigInput, resource: string, access: WebAccess): Promise<OAuthConfig> {
  const issuers: TrustedIssuer[] = [];
  for (const i of input.issuers) {
    checkIssuerUrl(i.issuer, "issuer", access);
    const audience = i.audience ?? resource;
    if (issuers.some((o) => o.issuer === i.issuer && o.audience === audience)) throw new ToolError("INVALID_ARGUMENT", `issuers: ${i.issuer} with audience ${audience} is listed twice.`, { field: "issuers" });
    const jwks = i.jwks_uri ?? (await discoverJwksUri(i.issuer, access));
    checkIssuerUrl(jwks, "jwks_uri", access);
    // What its host name reaches, where the transport can tell (Node/Lambda resolve and check it now; every fetch checks again).
    await checkReachable(jwks, access);
    issuers.push({ issuer: i.issuer, audience, jwks_uri: jwks, ...(i.scope_map ? { scope_map: i.scope_map } : {}) });
  }
  for (const i of issuers) {
    const key = await claimKey(i.issuer, i.audience);
    try {
      await storage.put(key, JSON.stringify({ tenant, issuer: i.issuer, audience: i.audience }), { ifNoneMatch: "*", contentType: "application/json" });
    } catch (e) {
      if (!isConditionFailed(e)) throw e;
      const held = await readJson<{ tenant: string }>(storage, key);
      if (held && held.tenant !== tenant) {
        throw new ToolError("ALREADY_EXISTS", `The issuer ${i.issuer} with the audience ${JSON.stringify(i.audience)} is already trusted by another tenant: a token must name one tenant. Have the authorization server issue this tenant's tokens for another audience (e.g. ${resource}/tenants/${tenant}) and give it as audience.`, { issuer: i.issuer, audience: i.audience });
      }
    }
  }
  const old = await loadOAuthConfig(storage, tenant);
  const config: OAuthConfig = { tenant, resource, issuers, updated_at: new Date().toISOString() };
  await storage.put(tenantOAuthKey(tenant), JSON.stringify(config), { contentType: "application/json" });
  await releaseClaims(storage, tenant, (old?.issuers ?? []).filter((o) => !issuers.some((i) => i.issuer === o.issuer && i.audience === o.audience)));
  return config;
}

export const loadOAuthConfig = (storage: StorageDriver, tenant: string): Promise<OAuthConfig | null> => readJson<OAuthConfig>(storage, tenantOAuthKey(tenant));

export async function deleteOAuthConfig(storage: StorageDriver, tenant: string): Promise<boolean> {
  const old = await loadOAuthConfig(storage, tenant);
  if (!old) return false;
  await storage.delete(tenantOAuthKey(tenant));
  await releaseClaims(storage, tenant, old.issuers);
  return true;
}

/** Deletes the claims of these pairs that this tenant holds (never another tenant's). */
async function releaseClaims(storage: StorageDriver, tenant: string, gone: readonly TrustedIssuer[]): Promise<void> {
  for (const o of gone) {
    const key = await claimKey(o.issuer, o.audience);
    const r = await storage.get(key);
    if (!r) continue;
    if ((JSON.parse(await new Response(r.body).text()) as { tenant: string }).tenant === tenant) await storage.delete([{ key, ifMatch: r.etag }]).catch(() => {});
  }
}

/** One tenant's trust of an issuer with one audience, as a token's check reads it. */
export interface Trust {
  tenant: string;
  resource: string;
  issuer: TrustedIssuer;
}

/**
 * Every (tenant, audience) that trusts `issuer`: a list of its claims, each confirmed by its
 * tenant's current config (a claim left by a half-done change names nobody).
 */
export async function trustsOf(storage: StorageDriver, issuer: string): Promise<Trust[]> {
  const listed = await storage.list({ prefix: await claimPrefix(issuer), limit: 100 });
  const claims = await Promise.all(listed.objects.map((o) => readJson<{ tenant: string; issuer: string; audience: string }>(storage, o.key)));
  const out: Trust[] = [];
  for (const claim of claims) {
    if (!claim || claim.issuer !== issuer) continue;
    const config = await loadOAuthConfig(storage, claim.tenant);
    const trusted = config?.issuers.find((i) => i.issuer === issuer && i.audience === claim.audience);
    if (config && trusted) out.push({ tenant: claim.tenant, resource: config.resource, issuer: trusted });
  }
  return out;
}

/** Our scopes of a token's scopes, by the issuer's scope_map (absent: the names we know). */
export function mappedScopes(tokenScopes: readonly string[], map: Record<string, Scope[]> | undefined): Scope[] {
  const out = new Set<Scope>();
  for (const s of tokenScopes) {
    if (map) for (const ours of map[s] ?? []) out.add(ours);
    else if ((SCOPES as readonly string[]).includes(s)) out.add(s as Scope);
  }
  return SCOPES.filter((s) => out.has(s));
}

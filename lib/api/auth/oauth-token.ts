/**
 * An OAuth access token (a JWT) → the tenant and scopes it acts with, like an API key of that
 * tenant (docs/oauth.md). Which tenant: the one whose config trusts the token's `iss` with an
 * audience in its `aud` — the configured audience, or, on an MCP URL, that URL (RFC 8707 resource
 * indicators; on the tenant's stored base URL, never on a Host header). Exactly one tenant must match, and a
 * `?tenant=` on the request must name it; anything else is refused. Then the signature (asymmetric
 * algorithms only, against the issuer's JWKS: lib/api/auth/jwks.ts), `iss`, `aud`, `exp`/`nbf`
 * (60 s of clock skew); scopes are mapped to ours by the issuer's scope_map.
 */
import { decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from "jose";
import { ToolError } from "../../shared/errors.js";
import type { IsolateCache } from "../../shared/isolate-cache.js";
import type { StorageDriver } from "../../storage/types.js";
import type { AuthInfo } from "../../contract/caller.js";
import { webAccess, type WebFetchDeps } from "../../tools/web/transport.js";
import type { JwksCache } from "./jwks.js";
import { mappedScopes, trustsOf, type Trust } from "./oauth-config.js";
import { resourcePath, resourceUrl, tenantNamed } from "./resource.js";
import { oauthKeyId } from "./oauth-principal.js";

/** Signature algorithms we accept: public-key ones only (never `none`, never an HMAC keyed with a public key). */
export const TOKEN_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"];
/** Clock skew allowed on exp, nbf and iat. */
export const CLOCK_SKEW_S = 60;

export interface OAuthDeps {
  storage: StorageDriver;
  webFetch?: WebFetchDeps;
  /** The issuers' key sets, per isolate (createApp makes one). */
  oauthKeys?: JwksCache;
  /** Who trusts each issuer, per isolate for a few seconds (createApp makes one). */
  oauthTrusts?: IsolateCache<Trust[]>;
}

/** Whether a bearer is shaped like a JWT (three base64url parts); API keys are not. */
export const isJwtShaped = (bearer: string): boolean => bearer.length <= 16_384 && /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(bearer);

const refused = (message: string, details: Record<string, unknown> = {}) => new ToolError("UNAUTHORIZED", message, { oauth_error: "invalid_token", ...details });

const audiencesOf = (p: JWTPayload): string[] => (typeof p.aud === "string" ? [p.aud] : Array.isArray(p.aud) ? p.aud.filter((a): a is string => typeof a === "string") : []);

function scopesOf(p: JWTPayload): string[] {
  const raw = p.scope ?? p.scp;
  if (typeof raw === "string") return raw.split(" ").filter(Boolean);
  return Array.isArray(raw) ? raw.filter((s): s is string => typeof s === "string") : [];
}

/** The audiences a tenant's trust accepts on this request: its configured audience, and on an MCP URL that URL (on the tenant's stored base). */
const acceptedAudiences = (t: Trust, url: URL): string[] => (resourcePath(url.pathname) ? [...new Set([t.issuer.audience, resourceUrl(t.resource, url)])] : [t.issuer.audience]);

export async function verifyAccessToken(deps: OAuthDeps, token: string, url: URL): Promise<AuthInfo> {
  let payload: JWTPayload;
  let alg: string | undefined;
  try {
    alg = decodeProtectedHeader(token).alg;
    payload = decodeJwt(token);
  } catch {
    throw refused("Malformed access token: not a JWT (header.payload.signature, base64url JSON). Send an access token from your authorization server, or an API key.");
  }
  if (!alg || !TOKEN_ALGORITHMS.includes(alg)) throw refused(`Access token signed with ${JSON.stringify(alg ?? "none")}: only public-key signatures (${TOKEN_ALGORITHMS.join(", ")}) are accepted.`, { alg: alg ?? null });
  if (typeof payload.iss !== "string") throw refused("The access token has no issuer (iss).");
  const iss = payload.iss;
  const load = () => trustsOf(deps.storage, iss);
  const trusts = deps.oauthTrusts ? await deps.oauthTrusts.get(iss, load) : await load();
  if (!trusts.length) throw refused(`No tenant trusts the issuer ${JSON.stringify(iss.slice(0, 200))}. An admin adds it with PUT /v1/admin/tenants/{tenant}/oauth.`, { issuer: iss.slice(0, 200) });
  const auds = audiencesOf(payload);
  const named = tenantNamed(url);
  const matching = trusts.filter((t) => (named === null || t.tenant === named) && acceptedAudiences(t, url).some((a) => auds.includes(a)));
  if (matching.length !== 1) {
    const why = matching.length ? "it matches more than one tenant's configuration (one issuer trusted with several of its audiences)" : `its audience (${JSON.stringify(auds.slice(0, 5))}) is not one configured for this issuer${named !== null ? " by the tenant this URL names" : ""}, nor this resource's URL`;
    throw refused(`This access token names no single tenant: ${why}. Ask your authorization server for a token whose aud is the audience configured for its tenant.`, { audience: auds.slice(0, 5) });
  }
  const trust = matching[0]!;
  const keys = deps.oauthKeys;
  if (!keys) throw new ToolError("UNAVAILABLE", "OAuth access tokens are not accepted by this deployment (no key cache was configured); use an API key.");
  let verified: JWTPayload;
  try {
    ({ payload: verified } = await jwtVerify(token, keys.keyLookup(trust.issuer.jwks_uri, webAccess(deps.webFetch, "oauth_issuer")), {
      issuer: trust.issuer.issuer,
      audience: acceptedAudiences(trust, url),
      algorithms: TOKEN_ALGORITHMS,
      clockTolerance: CLOCK_SKEW_S,
      requiredClaims: ["exp"],
    }));
  } catch (e) {
    throw tokenError(e);
  }
  const sub = typeof verified.sub === "string" ? verified.sub : "";
  return {
    tenant: trust.tenant,
    key_id: await oauthKeyId(iss, sub),
    scopes: mappedScopes(scopesOf(verified), trust.issuer.scope_map),
    expires_at: new Date(verified.exp! * 1000).toISOString(),
  };
}

/** jose's refusal in words an agent (or its human) can act on. */
function tokenError(e: unknown): ToolError {
  if (e instanceof ToolError) {
    if (e.code === "UNAUTHORIZED") return e;
    // The issuer's keys could not be read (refused by the SSRF guard, unreachable, not a key set): not the caller's fault.
    return new ToolError("UNAVAILABLE", `The keys of this token's issuer could not be read: ${e.message} Retry later; if it persists, the tenant's admin should check the issuer's jwks_uri (PUT /v1/admin/tenants/{tenant}/oauth).`, { reason: "jwks_unavailable", cause: e.code });
  }
  if (e instanceof errors.JWTExpired) return refused(`The access token expired (exp ${new Date(Number(e.payload.exp) * 1000).toISOString()}). Get a new one from your authorization server (refresh it).`, { reason: "expired" });
  if (e instanceof errors.JWTClaimValidationFailed) return refused(`The access token's "${e.claim}" claim is not accepted: ${e.reason === "check_failed" ? "it does not hold what this resource requires" : e.reason}. Get a token issued for this resource.`, { claim: e.claim });
  if (e instanceof errors.JWKSNoMatchingKey) return refused("The access token is signed with a key its issuer's key set (jwks_uri) does not hold. Get a new token; if the issuer just rotated its keys, retry in a minute.", { reason: "unknown_key" });
  if (e instanceof errors.JWSSignatureVerificationFailed) return refused("The access token's signature does not verify against its issuer's keys.", { reason: "signature" });
  if (e instanceof errors.JOSEAlgNotAllowed) return refused(`The access token's algorithm is not accepted: only ${TOKEN_ALGORITHMS.join(", ")}.`, { reason: "alg" });
  if (e instanceof errors.JOSEError) return refused(`The access token is not valid (${e.code}).`, { reason: e.code });
  throw e;
}


/**
 * The signing keys of the authorization servers tenants trust (docs/oauth.md), and the one way we
 * read anything from an authorization server: through the SSRF guard's transport
 * (lib/tools/web/fetch.ts guardedFetch, subject "oauth_issuer"), JSON only, with a byte bound and a timeout.
 *
 * JwksCache keeps each JWKS per isolate (made by createApp: no module-level state) for `maxAgeMs`
 * (10 min). A token signed with a key id the cached set lacks (the issuer rotated its keys) makes
 * one refetch, at most one per `cooldownMs` (30 s) per jwks_uri, so a stream of tokens with made-up
 * key ids cannot make us hammer the issuer (or anyone the jwks_uri names); a failed read is answered
 * again, without a request, for the same cooldown.
 */
import { createLocalJWKSet, type JSONWebKeySet, type JWSHeaderParameters, type FlattenedJWSInput, type CryptoKey } from "jose";
import { ToolError } from "../../shared/errors.js";
import { safeHref } from "../../shared/ssrf.js";
import { guardedFetch, readBounded } from "../../tools/web/fetch.js";
import type { WebAccess } from "../../tools/web/transport.js";
import { isObject } from "../../shared/is-object.js";

/** The most bytes of metadata or a JWKS we read. */
export const ISSUER_DOC_CAP = 256 * 1024;
const FETCH_TIMEOUT_MS = 10_000;

/** GETs a JSON document of an authorization server through the guard; UNAVAILABLE when it cannot be read as JSON. */
export async function fetchIssuerJson(url: string, access: WebAccess): Promise<Record<string, unknown>> {
  // The operator's own fetch, for a tenant's sign-in: no tool call is billed its bytes.
  const { response, finalUrl } = await guardedFetch({ url, method: "GET", headers: { accept: "application/json" }, timeoutMs: FETCH_TIMEOUT_MS }, { ...access, meter: null });
  const { bytes, more } = await readBounded(response.body, ISSUER_DOC_CAP);
  const where = safeHref(finalUrl);
  if (!response.ok) throw new ToolError("UNAVAILABLE", `${where} answered HTTP ${response.status}; check the URL (an issuer's metadata, or its jwks_uri) and that the authorization server is up.`, { url: where, status: response.status });
  if (more) throw new ToolError("UNAVAILABLE", `${where} sent more than ${ISSUER_DOC_CAP} bytes; an authorization server's metadata or key set is far smaller: check the URL.`, { url: where });
  try {
    const doc = JSON.parse(new TextDecoder().decode(bytes)) as unknown;
    if (isObject(doc)) return doc;
  } catch {
    // answered below
  }
  throw new ToolError("UNAVAILABLE", `${where} did not answer a JSON object; check the URL (an issuer's metadata, or its jwks_uri).`, { url: where });
}

type KeyLookup = (header: JWSHeaderParameters, token: FlattenedJWSInput) => Promise<CryptoKey>;
interface Entry {
  lookup: KeyLookup;
  fetchedAt: number;
}

export interface JwksCacheOptions {
  maxAgeMs?: number;
  cooldownMs?: number;
  now?: () => number;
}

export class JwksCache {
  private readonly entries = new Map<string, Entry>();
  private readonly inFlight = new Map<string, Promise<Entry>>();
  /** The last failed read of each uri: within the cooldown it answers again without another request. */
  private readonly failures = new Map<string, { error: unknown; at: number }>();
  private readonly maxAgeMs: number;
  private readonly cooldownMs: number;
  private readonly now: () => number;
  constructor(opts: JwksCacheOptions = {}) {
    this.maxAgeMs = opts.maxAgeMs ?? 10 * 60_000;
    this.cooldownMs = opts.cooldownMs ?? 30_000;
    this.now = opts.now ?? Date.now;
  }

  /** The key that verifies a token with this header, from the set at `uri` (fetched when absent, stale, or once per cooldown on an unknown key id). */
  keyLookup(uri: string, access: WebAccess): KeyLookup {
    return async (header, token) => {
      let entry = this.entries.get(uri);
      if (!entry || this.now() - entry.fetchedAt >= this.maxAgeMs) entry = await this.refetch(uri, access);
      try {
        return await entry.lookup(header, token);
      } catch (e) {
        if ((e as { code?: string }).code !== "ERR_JWKS_NO_MATCHING_KEY" || this.now() - entry.fetchedAt < this.cooldownMs) throw e;
      }
      // An unknown key id: the issuer may have rotated its keys since we fetched them.
      return (await this.refetch(uri, access)).lookup(header, token);
    };
  }

  forget(uri: string): void {
    this.entries.delete(uri);
  }

  private refetch(uri: string, access: WebAccess): Promise<Entry> {
    const running = this.inFlight.get(uri);
    if (running) return running;
    const failed = this.failures.get(uri);
    if (failed && this.now() - failed.at < this.cooldownMs) return Promise.reject(failed.error);
    const p = (async () => {
      const doc = await fetchIssuerJson(uri, access);
      if (!Array.isArray(doc.keys)) throw new ToolError("UNAVAILABLE", `${safeHref(new URL(uri))} is not a JSON Web Key Set (no "keys" array); check the jwks_uri.`, { url: uri });
      const entry: Entry = { lookup: createLocalJWKSet(doc as unknown as JSONWebKeySet) as KeyLookup, fetchedAt: this.now() };
      if (this.entries.size >= 1000) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(uri, entry);
      this.failures.delete(uri);
      return entry;
    })();
    p.catch((error: unknown) => {
      if (this.failures.size >= 1000) this.failures.delete(this.failures.keys().next().value!);
      this.failures.set(uri, { error, at: this.now() });
    });
    this.inFlight.set(uri, p);
    return p.finally(() => this.inFlight.delete(uri));
  }
}

/**
 * Secrets injected at the egress of one call (web_fetch, a webhook): for every hop's URL, the
 * headers of the tenant's secrets whose destinations name its host, only over https (a plain
 * http:// URL of such a host is refused: nothing is sent). The values never reach the model:
 * redact() puts `{{secret:NAME}}` wherever one of the values this call used would show (a page or
 * an error that echoes the header).
 * Cost: 1 storage GET per call when the deployment has TOOLSHED_SECRETS_KEY, started at once
 * (beside the call's other reads); a value is decrypted only when its host is reached.
 */
import { ToolError, isToolError } from "../../shared/errors.js";
import { hostMatches, patternRank } from "../../shared/host-pattern.js";
import type { StorageDriver } from "../../storage/types.js";
import { addressBlockedReason, safeHref, type GuardOptions } from "../../shared/ssrf.js";
import { openSecret } from "./crypto.js";
import { readSecrets, type StoredSecret } from "./store.js";
import { redactStream, redactText, type Replacement } from "./redact-stream.js";

export interface SecretInjector {
  /** The headers one hop to `url` carries; throws BLOCKED for a plain-http URL of a secret's host. */
  headersFor(url: URL): Promise<Record<string, string>>;
  /** `text` with every value this call sent (in each form it takes: redact-stream.ts formsOf) replaced by its placeholder. */
  redact(text: string): string;
  /**
   * A response body with the same replacements made as its bytes arrive (lib/tools/secrets/redact-stream.ts):
   * what reads it (a conversion, a cut, a JSON parse) never sees a value. guardedFetch applies it to every answer.
   */
  redactBody(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array>;
  /** The same over every string of a JSON-like value (a tool's result). */
  redactDeep<T>(value: T): T;
  /** An error with its message and details redacted (a ToolError stays one). */
  redactError(e: unknown): unknown;
}

export interface InjectorOptions {
  storage: StorageDriver;
  /** TOOLSHED_SECRETS_KEY; absent: nothing is read or injected. */
  secretsKey?: string | undefined;
  tenant: string;
  guard: GuardOptions;
  /**
   * Other credentials of this call that its answer must never show, though no header carries them
   * (a webhook's signing secret, which a server that knows it could echo): redacted as a sent value is.
   */
  alsoRedact?: { name: string; value: string }[];
}

export const placeholder = (name: string) => `{{secret:${name}}}`;

/** Plain http is refused for a secret, except to a loopback address when a test lets loopback through. */
function plainHttpAllowed(url: URL, guard: GuardOptions): boolean {
  if (!guard.allowLoopback) return false;
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  return addressBlockedReason(host) !== null && addressBlockedReason(host, { allowLoopback: true }) === null;
}

export function secretInjector(opts: InjectorOptions): SecretInjector {
  const key = opts.secretsKey;
  const used = new Map<string, string>((opts.alsoRedact ?? []).map((c) => [c.value, c.name])); // value → name
  const opened = new Map<string, Promise<string>>();
  let loaded: Promise<StoredSecret[]> | undefined;
  if (key) {
    loaded = readSecrets(opts.storage, opts.tenant).then((d) => d.secrets);
    loaded.catch(() => {}); // awaited at the first hop
  }
  const open = (s: StoredSecret) => {
    let p = opened.get(s.name);
    if (!p) opened.set(s.name, (p = openSecret(key!, opts.tenant, s.name, s.sealed)));
    return p;
  };
  const replacements = (): Replacement[] => [...used].map(([value, name]) => ({ find: value, put: placeholder(name) }));
  const redact = (text: string) => (used.size === 0 ? text : redactText(text, replacements()));
  const redactDeep = <T>(value: T): T => {
    if (used.size === 0) return value;
    if (typeof value === "string") return redact(value) as T;
    if (Array.isArray(value)) return value.map(redactDeep) as T;
    if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactDeep(v)])) as T;
    return value;
  };
  return {
    async headersFor(url) {
      if (!loaded) return {};
      const secrets = await loaded;
      // Per header, the most specific destination that names this host.
      const chosen = new Map<string, { secret: StoredSecret; header: string; format: string; rank: number }>();
      for (const secret of secrets) {
        for (const d of secret.destinations) {
          if (!hostMatches(d.host, url.hostname)) continue;
          const rank = patternRank(d.host);
          const lower = d.header.toLowerCase();
          const had = chosen.get(lower);
          if (!had || rank > had.rank) chosen.set(lower, { secret, header: d.header, format: d.format ?? "{value}", rank });
        }
      }
      if (chosen.size === 0) return {};
      const names = [...new Set([...chosen.values()].map((c) => c.secret.name))];
      if (url.protocol !== "https:" && !plainHttpAllowed(url, opts.guard)) {
        throw new ToolError("BLOCKED", `${safeHref(url)} is plain http, and the tenant's secret ${names.map(placeholder).join(", ")} is bound to ${url.hostname}: secrets are sent only over https, so nothing was sent. Use https://${url.host}${url.pathname}${url.search}.`, { url: safeHref(url), secrets: names, reason: "secret over plain http" });
      }
      const headers: Record<string, string> = {};
      for (const [lower, c] of chosen) {
        const value = await open(c.secret);
        used.set(value, c.secret.name);
        headers[lower] = c.format.replace("{value}", value);
      }
      return headers;
    },
    redact,
    // Called once every hop is sent: no value used, nothing to take out.
    redactBody: (body) => (used.size === 0 ? body : redactStream(body, replacements)),
    redactDeep,
    redactError(e) {
      if (used.size === 0) return e;
      if (isToolError(e)) return new ToolError(e.code, redact(e.message), redactDeep(e.details));
      if (e instanceof Error) return new Error(redact(e.message));
      return e;
    },
  };
}

/**
 * The one transport decision of every door that reaches a URL: web_fetch (and each redirect hop),
 * a custom tool's webhook and the model endpoint of `task`, each when its URL is saved (checkReachable)
 * and when it is called (lib/tools/web/fetch.ts guardedFetch). The URL check is lib/shared/ssrf.ts; what a
 * host NAME reaches is this transport's to check, and only a transport that can check it may send:
 *
 * - Node/Lambda (lib/tools/web/node-fetcher.ts): resolves the name, checks every address, connects only to a checked one.
 * - A Worker deployed on Cloudflare (cloudflareFetcher, TOOLSHED_WEB_EGRESS=cloudflare): the runtime
 *   resolves with Cloudflare's DNS on Cloudflare's network, no hosts file (docs/ssrf.md).
 * - Anywhere else (the default: workerd under wrangler dev / npm start / the test pool, a Node app
 *   given no fetcher): names are refused, since the runtime would resolve them itself, through this
 *   machine's hosts file, to addresses we never see. IP literals pass (checkUrl has checked them).
 */
import { blockedError, type GuardOptions, type GuardSubject, type HostKind, checkUrl, safeHref } from "../../shared/ssrf.js";

export interface WebFetcher {
  /**
   * Refuses (BLOCKED) a host this transport cannot show to be public: resolves a name and checks
   * every address where the runtime lets us. Sends nothing; `host` is what checkUrl found in the URL.
   */
  check(url: URL, host: HostKind, guard: GuardOptions): Promise<void>;
  /** Sends one request, never following redirects, only to an address `check` allows (pinned where the runtime lets us). */
  fetch(url: URL, init: RequestInit, host: HostKind, guard: GuardOptions): Promise<Response>;
}

/** The part of AppDeps the doors read: the transport, and the test-only loopback switch. */
export interface WebFetchDeps {
  /** Default: literalOnlyFetcher (names refused). Lambda: nodeFetcher; a Worker on Cloudflare: cloudflareFetcher. */
  fetcher?: WebFetcher;
  /** Test-only: let loopback addresses through (lib/shared/ssrf.ts). Never set in a deployment. */
  allowLoopback?: boolean;
}

/** The runtime's own fetch, for a Worker deployed on Cloudflare only: names are resolved by Cloudflare's DNS on its network. */
export const cloudflareFetcher: WebFetcher = {
  check: async () => {},
  fetch: (url, init) => fetch(url.href, { ...init, redirect: "manual" }),
};

/** What to do when a name is refused because this runtime cannot check it. */
const UNCHECKED_NAME_NEXT_STEP =
  "Here only IP addresses can be reached: use the host's public IP address, or run Toolshed where names are resolved and checked (Node/Lambda, or a Worker deployed on Cloudflare with TOOLSHED_WEB_EGRESS=cloudflare; see docs/ssrf.md)";

/** The default transport: the runtime's fetch for IP literals (checked by checkUrl), a refusal for every name. */
export const literalOnlyFetcher: WebFetcher = {
  async check(url, host, guard) {
    if (host.kind === "ip") return;
    const why = `${host.name} is a host name, and this runtime resolves names itself (through this machine's hosts file and DNS) to addresses the guard never sees, so it cannot tell a public name from one that reaches loopback or the private network`;
    throw blockedError(safeHref(url), why, guard, { url: safeHref(url), host: host.name, reason: "a host name this runtime cannot check" }, UNCHECKED_NAME_NEXT_STEP);
  },
  async fetch(url, init, host, guard) {
    await literalOnlyFetcher.check(url, host, guard);
    return fetch(url.href, { ...init, redirect: "manual" });
  },
};

/** The transport and guard of one door. */
export interface WebAccess {
  fetcher: WebFetcher;
  guard: GuardOptions;
}

/** The one place a door gets its transport: the deps' fetcher, or the default that refuses names. */
export function webAccess(deps: WebFetchDeps | undefined, subject: GuardSubject): WebAccess {
  return { fetcher: deps?.fetcher ?? literalOnlyFetcher, guard: { allowLoopback: deps?.allowLoopback === true, subject } };
}

/**
 * For a URL saved now and fetched later (a webhook, the model endpoint): the URL check, then the
 * transport's check of its host (a name is resolved and every address checked where we can, refused
 * where we cannot). Throws INVALID_ARGUMENT or BLOCKED (or UNAVAILABLE when the name does not resolve).
 */
export async function checkReachable(raw: string, access: WebAccess): Promise<URL> {
  const { url, host } = checkUrl(raw, access.guard);
  await access.fetcher.check(url, host, access.guard);
  return url;
}

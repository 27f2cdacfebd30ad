/**
 * The WebFetcher of Lambda and Node: resolve the name ourselves (every address), refuse it if any
 * address is refused by the SSRF guard, then connect to an address that was checked — the socket's
 * `lookup` is ours, so there is no second, unchecked resolution for DNS rebinding to win.
 * undici's own fetch + Agent (one version for both). Node-only: never imported by the Workers entry.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import type { LookupAddress } from "node:dns";
import { Agent, fetch as undiciFetch } from "undici";
import type { WebFetcher } from "./transport.js";
import { transportError } from "./fetch.js";
import { addressBlockedReason, blockedError, type GuardOptions, type Resolver } from "../../shared/ssrf.js";


/** The system's resolver (getaddrinfo: the hosts file, then DNS), every address. */
export const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

type LookupCallback = (err: Error | null, address?: string | LookupAddress[], family?: number) => void;

/** Resolves a name and checks every address: throws BLOCKED if any is refused, ENOTFOUND if there is none. */
export async function resolveChecked(resolve: Resolver, hostname: string, guard: GuardOptions): Promise<LookupAddress[]> {
  const all = await resolve(hostname);
  if (all.length === 0) throw Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" });
  for (const a of all) {
    const reason = addressBlockedReason(a.address, guard);
    if (reason) throw blockedError(hostname, `it resolves to ${a.address}, which is ${reason}`, guard, { host: hostname, address: a.address, reason });
  }
  return all;
}

/** A net.connect `lookup` that answers only with addresses the guard allows, and fails if any is refused. */
export function guardedLookup(resolve: Resolver, guard: GuardOptions) {
  return (hostname: string, options: { family?: number | string; all?: boolean }, callback: LookupCallback) => {
    resolveChecked(resolve, hostname, guard)
      .then((all) => {
        const family = options.family === 4 || options.family === "IPv4" ? 4 : options.family === 6 || options.family === "IPv6" ? 6 : 0;
        const usable = family ? all.filter((a) => a.family === family) : all;
        if (usable.length === 0) throw Object.assign(new Error(`${hostname} has no IPv${family} address`), { code: "ENOTFOUND" });
        if (options.all) callback(null, usable);
        else callback(null, usable[0]!.address, usable[0]!.family);
      })
      .catch((e: Error) => callback(e));
  };
}

/**
 * The Node transport; `resolve` is injectable so tests can play a DNS that answers what they need,
 * and `ca` lets tests trust their own certificate authority (PEM) for an https server on loopback.
 */
export function nodeFetcher(opts: { resolve?: Resolver; ca?: string } = {}): WebFetcher {
  const resolve = opts.resolve ?? systemResolver;
  const agents = new Map<string, Agent>();
  const agentFor = (guard: GuardOptions) => {
    const key = `${guard.allowLoopback ? "loopback" : "default"}:${guard.subject ?? "web_fetch"}`;
    let agent = agents.get(key);
    if (!agent) {
      agent = new Agent({ connect: { lookup: guardedLookup(resolve, guard) as never, ...(opts.ca ? { ca: opts.ca } : {}) }, connectTimeout: 30_000 });
      agents.set(key, agent);
    }
    return agent;
  };
  return {
    async check(url, host, guard) {
      if (host.kind === "ip") return;
      try {
        await resolveChecked(resolve, host.name, guard);
      } catch (e) {
        throw transportError(e, url, false, 0);
      }
    },
    async fetch(url, init, _host, guard) {
      const res = await undiciFetch(url.href, { ...(init as object), redirect: "manual", dispatcher: agentFor(guard) } as never);
      return res as unknown as Response;
    },
  };
}

/**
 * What a sandboxed command with network may connect to: the decision of the egress proxy
 * (egress-proxy.ts), made outside the sandbox. The rules are web_fetch's (lib/shared/ssrf.ts:
 * no loopback, private, link-local/metadata, CGNAT, reserved ... addresses or internal
 * names), plus two of the runner's own:
 * - the API's own host (the run's sync URL): its name on any port; if it is an address, that
 *   address on any port. (Its resolved addresses are not refused: a public API behind a
 *   shared front, e.g. Cloudflare's anycast addresses, shares them with unrelated sites.)
 * - this host's own addresses (os.networkInterfaces()), whatever range they are in: a service
 *   of the runner's host that listens on a public address is still the host's.
 * - port 25 (SMTP relay), on any host: a sandbox does not send mail straight to mail servers (the
 *   spam a hosted runner's addresses would be blamed for; cloud providers block it too). Mail goes
 *   out through a provider's HTTP API or an authenticated submission port (587, 465).
 * - the tenant's web domain lists (egress-domains.ts), by the name the command gave, first of all.
 * A name is resolved here, every address is checked (one refused address refuses the name, as
 * web_fetch's resolver does), and the proxy connects only to the addresses returned: there is
 * no second resolution for DNS rebinding to win.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { networkInterfaces } from "node:os";
import { type Resolver, addressBlockedReason, formatIPv4, nameBlockedReason, parseIPv4, parseIPv6 } from "../../lib/shared/ssrf.js";
import type { WebDomains } from "../../lib/shared/web-domains.js";
import { domainRefusal } from "./egress-domains.js";

export interface EgressRuleOptions {
  /** Test-only: let loopback (127.0.0.0/8, ::1, localhost) through. Never set in a deployment. */
  allowLoopback?: boolean;
  /** The API's URL (the run's sync URL): its host is refused. */
  apiUrl?: string;
  /** Name resolution (default: the system's, all addresses); tests play a DNS with it. */
  resolve?: Resolver;
  /** This host's addresses (default: every address of os.networkInterfaces()). */
  hostAddresses?: () => string[];
  /** Longest wait for a name's addresses (default 10 s). */
  resolveTimeoutMs?: number;
  /** The tenant's web domain lists (RunRequest.egress_domains): checked by name before anything else (egress-domains.ts). */
  domains?: WebDomains;
}

/** A connection the rules refuse; `message` is one line the command's output shows. */
export class EgressRefused extends Error {
  constructor(message: string, readonly status = 403) {
    super(message);
  }
}

export interface CheckedAddress {
  address: string;
  family: 4 | 6;
}

const RULE = "Commands with network reach only public internet addresses (not loopback, private, link-local or cloud metadata addresses, this runner's host or the Toolshed API).";

/** SMTP's relay port: refused on every host (see the file comment). */
const SMTP_PORT = 25;

const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/** An address in one spelling: IPv4 dotted (also for IPv4-mapped IPv6), IPv6 as eight hex words; null for a non-address. */
export function canonicalAddress(raw: string): string | null {
  const v6 = parseIPv6(raw);
  if (v6) {
    if (v6.slice(0, 5).every((w) => w === 0) && v6[5] === 0xffff) return formatIPv4(((v6[6]! << 16) >>> 0) + v6[7]!);
    return v6.map((w) => w.toString(16)).join(":");
  }
  const v4 = parseIPv4(raw);
  return v4 === null ? null : formatIPv4(v4);
}

const defaultHostAddresses = (): string[] =>
  Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));

/** A host as the rules compare it: lower case, no IPv6 brackets, no trailing dot. */
export const normalName = (h: string) => h.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.+$/, "");

/** Parses "host:port" (CONNECT's authority form; IPv6 in brackets). */
export function parseAuthority(authority: string): { host: string; port: number } | null {
  const m = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(authority);
  if (!m) return null;
  const port = Number(m[2]);
  return port >= 1 && port <= 65535 ? { host: m[1]!, port } : null;
}

export function egressRules(opts: EgressRuleOptions = {}) {
  const resolve = opts.resolve ?? systemResolver;
  const guard = { allowLoopback: opts.allowLoopback === true };
  const own = new Set((opts.hostAddresses ?? defaultHostAddresses)().map(canonicalAddress).filter((a): a is string => a !== null));
  let apiName: string | null = null;
  let apiAddress: string | null = null;
  if (opts.apiUrl) {
    try {
      const host = normalName(new URL(opts.apiUrl).hostname);
      apiAddress = canonicalAddress(host);
      if (apiAddress === null) apiName = host;
    } catch {
      /* no URL: no API host to refuse by name */
    }
  }

  /** Why `address` may not be reached, or null. */
  const addressReason = (address: string): string | null => {
    const ssrf = addressBlockedReason(address, guard);
    if (ssrf) return ssrf;
    const canonical = canonicalAddress(address);
    if (canonical !== null && canonical === apiAddress) return "the Toolshed API's own host";
    // Loopback let through (tests) stays let through even though it is this host's too.
    if (canonical !== null && own.has(canonical) && !(guard.allowLoopback && addressBlockedReason(address) !== null)) return "an address of the runner's own host";
    return null;
  };

  const refuse = (target: string, why: string) => new EgressRefused(`Refused to connect to ${target}: ${why}. ${RULE}`);

  /**
   * The addresses `host:port` may be reached at (all checked; connect to these only), or
   * EgressRefused saying why not.
   */
  async function check(host: string, port: number): Promise<CheckedAddress[]> {
    const name = normalName(host);
    const target = `${host}:${port}`;
    if (name === "") throw refuse(target, "an empty host name");
    if (port === SMTP_PORT) throw new EgressRefused(`Refused to connect to ${target}: port 25 (SMTP) is closed to sandboxes, on every host. Send mail through your mail provider's HTTP API or its submission port (587 or 465).`);
    const literal = canonicalAddress(name);
    const policyWhy = domainRefusal(name, literal !== null, opts.domains);
    if (policyWhy) throw new EgressRefused(`Refused to connect to ${target}: ${policyWhy}`);
    if (literal !== null) {
      const why = addressReason(literal);
      if (why) throw refuse(target, `${name} is ${why}`);
      return [{ address: literal, family: literal.includes(":") ? 6 : 4 }];
    }
    const nameWhy = nameBlockedReason(name, guard) ?? (name === apiName ? "the Toolshed API's own host" : null);
    if (nameWhy) throw refuse(target, `${name} is ${nameWhy}`);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new EgressRefused(`Could not resolve ${name}: no answer within ${(opts.resolveTimeoutMs ?? 10_000) / 1000} s. Check the host name, or retry later.`, 502)), opts.resolveTimeoutMs ?? 10_000);
    });
    let all: { address: string; family: number }[];
    try {
      all = await Promise.race([resolve(name), timeout]);
    } catch (e) {
      if (e instanceof EgressRefused) throw e;
      throw new EgressRefused(`Could not resolve ${name} (${(e as NodeJS.ErrnoException).code ?? "no address"}). Check the host name.`, 502);
    } finally {
      clearTimeout(timer);
    }
    if (all.length === 0) throw new EgressRefused(`Could not resolve ${name}: it has no address. Check the host name.`, 502);
    for (const a of all) {
      const why = addressReason(a.address);
      if (why) throw refuse(target, `${name} resolves to ${a.address}, which is ${why}`);
    }
    return all.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
  }

  return { check };
}

export type EgressRuleSet = ReturnType<typeof egressRules>;

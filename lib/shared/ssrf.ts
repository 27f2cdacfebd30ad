/**
 * The SSRF guard of web_fetch, custom-tool webhooks and the model endpoint: which URLs and addresses our servers may reach. Pure (no I/O),
 * so it bundles for Workers and every user of it (the URL check, each redirect hop, the Node
 * resolver's check of every resolved address) applies the same rules.
 *
 * Only http/https to public internet addresses. Refused: loopback, private (RFC 1918, unique-local),
 * link-local (cloud metadata 169.254.169.254, fd00:ec2::254), CGNAT, multicast, unspecified,
 * broadcast, reserved and documentation ranges, and IPv6 forms that carry an IPv4 address
 * (mapped, compatible, NAT64, 6to4) when that address is refused. IPv4 literals are parsed the way
 * WHATWG URL does (decimal 2130706433, octal 0177.0.0.1, hex 0x7f.1, short 127.1).
 */
import type { LookupAddress } from "node:dns";
import { ToolError } from "./errors.js";

/** Every address of a host name (the system's resolver in Node: lib/tools/web/node-fetcher.ts; the runner's egress proxy: infra/container/egress-rules.ts). */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

/** What the guard is checking a URL for, named in its refusals. */
export type GuardSubject = "web_fetch" | "webhook" | "model_endpoint" | "oauth_issuer";

export interface GuardOptions {
  /** Test-only: let loopback (127.0.0.0/8, ::1, localhost) through. Never set in a deployment. */
  allowLoopback?: boolean;
  /** What is being reached (default: web_fetch): the refusal says whose rule it is and what to do. */
  subject?: GuardSubject;
}

const SUBJECTS: Record<GuardSubject, { reach: string; rule: string }> = {
  web_fetch: { reach: "fetch", rule: "web_fetch reaches only public internet addresses; use a public URL" },
  webhook: { reach: "call the webhook URL", rule: "A custom tool's webhook URL must be on the public internet; use a public https URL for the webhook" },
  model_endpoint: { reach: "use the model endpoint's base_url", rule: "The model endpoint's base_url must be on the public internet; use the provider's public API URL (e.g. https://api.openai.com/v1)" },
  oauth_issuer: { reach: "read the authorization server's metadata or keys at", rule: "An OAuth issuer and its jwks_uri must be on the public internet; use the authorization server's public https URL" },
};

/**
 * The one refusal of the guard, for an address in the URL, one its name resolves to, or a name the
 * runtime cannot check (lib/tools/web/transport.ts): "Refused to <reach> <target>: <why>. <next step>.",
 * the next step being the subject's rule unless the refusal has its own.
 */
export function blockedError(target: string, why: string, opts: GuardOptions, details: Record<string, unknown>, next?: string): ToolError {
  const s = SUBJECTS[opts.subject ?? "web_fetch"];
  return new ToolError("BLOCKED", `Refused to ${s.reach} ${target}: ${why}. ${next ?? s.rule}.`, { ...details, ...(opts.subject && opts.subject !== "web_fetch" ? { subject: opts.subject } : {}) });
}

type Range4 = [base: number, bits: number, reason: string];

/** Refused IPv4 ranges, each with the reason the agent is told. */
const V4_RANGES: Range4[] = [
  [0x00000000, 8, "the 'this network' range 0.0.0.0/8 (0.0.0.0 reaches the local host)"],
  [0x0a000000, 8, "a private address (10.0.0.0/8)"],
  [0x64400000, 10, "a carrier-grade NAT address (100.64.0.0/10)"],
  [0x7f000000, 8, "a loopback address (127.0.0.0/8)"],
  [0xa9fe0000, 16, "a link-local address (169.254.0.0/16, where cloud metadata services live)"],
  [0xac100000, 12, "a private address (172.16.0.0/12)"],
  [0xc0000000, 24, "an IETF protocol address (192.0.0.0/24)"],
  [0xc0000200, 24, "a documentation address (192.0.2.0/24)"],
  [0xc0586300, 24, "a 6to4 relay anycast address (192.88.99.0/24)"],
  [0xc0a80000, 16, "a private address (192.168.0.0/16)"],
  [0xc6120000, 15, "a benchmarking address (198.18.0.0/15)"],
  [0xc6336400, 24, "a documentation address (198.51.100.0/24)"],
  [0xcb007100, 24, "a documentation address (203.0.113.0/24)"],
  [0xe0000000, 4, "a multicast address (224.0.0.0/4)"],
  [0xf0000000, 4, "a reserved or broadcast address (240.0.0.0/4, 255.255.255.255)"],
];

const LOOPBACK_V4 = "a loopback address (127.0.0.0/8)";

/** One IPv4 number part as WHATWG URL reads it: 0x.. hex, 0.. octal, else decimal. */
function v4Part(s: string): number | null {
  if (s === "") return null;
  let radix = 10;
  let digits = s;
  if (/^0x/i.test(s)) {
    radix = 16;
    digits = s.slice(2);
    if (digits === "") return 0;
  } else if (s.length > 1 && s.startsWith("0")) {
    radix = 8;
    digits = s.slice(1);
  }
  const ok = radix === 16 ? /^[0-9a-f]+$/i : radix === 8 ? /^[0-7]+$/ : /^[0-9]+$/;
  if (!ok.test(digits)) return null;
  const n = parseInt(digits, radix);
  return Number.isSafeInteger(n) ? n : null;
}

/** An IPv4 literal in any spelling WHATWG URL accepts (1 to 4 parts, trailing dot), as a 32-bit number. */
export function parseIPv4(host: string): number | null {
  let parts = host.split(".");
  if (parts.length > 1 && parts[parts.length - 1] === "") parts = parts.slice(0, -1);
  if (parts.length < 1 || parts.length > 4) return null;
  const nums = parts.map(v4Part);
  if (nums.some((n) => n === null)) return null;
  const n = nums as number[];
  const last = n[n.length - 1]!;
  if (n.slice(0, -1).some((x) => x > 255) || last >= 256 ** (5 - n.length)) return null;
  let value = last;
  for (let i = 0; i < n.length - 1; i++) value += n[i]! * 256 ** (3 - i);
  return value;
}

export const formatIPv4 = (v: number): string => [24, 16, 8, 0].map((s) => (v >>> s) & 255).join(".");

/** An IPv6 literal (brackets and a zone id allowed) as eight 16-bit words. */
export function parseIPv6(input: string): number[] | null {
  let s = input.startsWith("[") && input.endsWith("]") ? input.slice(1, -1) : input;
  const zone = s.indexOf("%");
  if (zone >= 0) s = s.slice(0, zone);
  if (!s.includes(":")) return null;
  // A trailing dotted IPv4 becomes two words.
  const v4 = s.match(/^(.*:)(\d+\.\d+\.\d+\.\d+)$/);
  if (v4) {
    const parts = v4[2]!.split(".").map(Number);
    if (parts.some((p) => p > 255)) return null;
    s = `${v4[1]}${((parts[0]! << 8) | parts[1]!).toString(16)}:${((parts[2]! << 8) | parts[3]!).toString(16)}`;
  }
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const words = (h: string) => (h === "" ? [] : h.split(":"));
  const head = words(halves[0]!);
  const tail = halves.length === 2 ? words(halves[1]!) : [];
  const fill = 8 - head.length - tail.length;
  if (halves.length === 1 ? head.length !== 8 : fill < 1) return null;
  const all = [...head, ...Array<string>(halves.length === 2 ? fill : 0).fill("0"), ...tail];
  if (all.some((w) => !/^[0-9a-f]{1,4}$/i.test(w))) return null;
  return all.map((w) => parseInt(w, 16));
}

function v4Reason(v: number, opts: GuardOptions): string | null {
  for (const [base, bits, reason] of V4_RANGES) {
    const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
    if (((v & mask) >>> 0) === base) return reason === LOOPBACK_V4 && opts.allowLoopback ? null : reason;
  }
  return null;
}

const embedded = (hi: number, lo: number) => ((hi << 16) >>> 0) + lo;

function v6Reason(w: number[], opts: GuardOptions): string | null {
  const zeros = (from: number, to: number) => w.slice(from, to).every((x) => x === 0);
  const inner = (hi: number, lo: number, what: string) => {
    const r = v4Reason(embedded(w[hi]!, w[lo]!), opts);
    return r ? `${what} of ${formatIPv4(embedded(w[hi]!, w[lo]!))}, ${r}` : null;
  };
  if (zeros(0, 8)) return "the unspecified address (::)";
  if (zeros(0, 7) && w[7] === 1) return opts.allowLoopback ? null : "the IPv6 loopback address (::1)";
  if (zeros(0, 5) && w[5] === 0xffff) return inner(6, 7, "an IPv4-mapped IPv6 address");
  if (zeros(0, 4) && w[4] === 0xffff && w[5] === 0) return inner(6, 7, "an IPv4-translated IPv6 address");
  if (zeros(0, 6)) return inner(6, 7, "an IPv4-compatible IPv6 address") ?? "an IPv4-compatible IPv6 address (::/96, deprecated)";
  if (w[0] === 0x64 && w[1] === 0xff9b && zeros(2, 6)) return inner(6, 7, "a NAT64 address (64:ff9b::/96)");
  if (w[0] === 0x64 && w[1] === 0xff9b && w[2] === 1) return "a local-use NAT64 address (64:ff9b:1::/48)";
  if (w[0] === 0x2002) return inner(1, 2, "a 6to4 address (2002::/16)");
  if (w[0] === 0x2001 && w[1] === 0) return "a Teredo address (2001::/32), which tunnels to an IPv4 address";
  if (w[0] === 0x2001 && w[1] === 0xdb8) return "a documentation address (2001:db8::/32)";
  if (w[0] === 0x100 && zeros(1, 4)) return "a discard-only address (100::/64)";
  if ((w[0]! & 0xfe00) === 0xfc00) return "a unique-local (private) IPv6 address (fc00::/7, incl. fd00:ec2::254 of cloud metadata)";
  if ((w[0]! & 0xffc0) === 0xfe80) return "a link-local IPv6 address (fe80::/10)";
  if ((w[0]! & 0xffc0) === 0xfec0) return "a site-local IPv6 address (fec0::/10, deprecated)";
  if ((w[0]! & 0xff00) === 0xff00) return "a multicast IPv6 address (ff00::/8)";
  return null;
}

/** Why this IP address (v4 in any spelling, or v6) may not be reached, or null when it may. A non-IP gives null. */
export function addressBlockedReason(address: string, opts: GuardOptions = {}): string | null {
  const v6 = parseIPv6(address);
  if (v6) return v6Reason(v6, opts);
  const v4 = parseIPv4(address);
  return v4 === null ? null : v4Reason(v4, opts);
}

/** Host names that always mean something internal, whatever DNS says. */
export function nameBlockedReason(hostname: string, opts: GuardOptions = {}): string | null {
  const h = hostname.toLowerCase().replace(/\.+$/, "");
  if (h === "localhost" || h.endsWith(".localhost")) return opts.allowLoopback ? null : "a loopback name (localhost)";
  if (h === "metadata.google.internal" || h.endsWith(".internal")) return "an internal name (.internal, e.g. a cloud metadata service)";
  if (h === "") return "an empty host name";
  return null;
}

export type HostKind = { kind: "ip"; address: string } | { kind: "name"; name: string };

/**
 * Parses and checks a URL for web_fetch (or a webhook, a model endpoint: opts.subject): http/https only, no credentials, a host that is neither
 * a refused address nor a refused name. Throws INVALID_ARGUMENT or BLOCKED; returns the URL and
 * what its host is (an IP literal needs no resolving; a name is the transport's to check:
 * lib/tools/web/transport.ts).
 */
export function checkUrl(raw: string, opts: GuardOptions = {}): { url: URL; host: HostKind } {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new ToolError("INVALID_ARGUMENT", `Not a valid URL: ${JSON.stringify(raw.slice(0, 200))}. Pass an absolute http(s) URL, e.g. https://example.com/page.`, { url: raw.slice(0, 200) });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ToolError("INVALID_ARGUMENT", `Only http and https URLs can be fetched, not ${url.protocol.replace(/:$/, "")}:. Pass an http(s) URL.`, { url: url.href, scheme: url.protocol });
  }
  const hostname = url.hostname;
  const bracketed = hostname.startsWith("[");
  const address = bracketed ? hostname.slice(1, -1) : parseIPv4(hostname) !== null ? formatIPv4(parseIPv4(hostname)!) : null;
  const reason = address !== null ? addressBlockedReason(address, opts) : nameBlockedReason(hostname, opts);
  if (reason) throw blockedError(safeHref(url), `${hostname} is ${reason}`, opts, { url: safeHref(url), address: hostname, reason });
  if (url.username || url.password) {
    throw new ToolError("INVALID_ARGUMENT", `The URL carries credentials (user:password@). Remove them from the URL and send them in headers (e.g. Authorization) if the site needs them.`, { url: safeHref(url) });
  }
  return { url, host: address !== null ? { kind: "ip", address } : { kind: "name", name: hostname.replace(/\.+$/, "") } };
}

/** The URL without user:password@, for messages. */
export const safeHref = (url: URL): string => `${url.protocol}//${url.host}${url.pathname}${url.search}`;

/**
 * The egress proxy's look inside a CONNECT tunnel, only when the tenant's domain lists apply
 * (RunRequest.egress_domains; docs/sandbox-network.md): the CONNECT authority has passed
 * (egress-rules.ts) and the upstream is dialled, but before one byte of the client goes upstream
 * the proxy reads the client's first bytes, up to TUNNEL_READ_BOUND, until they say which name
 * they ask for (egress-tunnel-name.ts: a ClientHello's SNI, an HTTP request's Host). A name other
 * than the CONNECT host is checked by the same rule as the CONNECT host (egress-domains.ts): domain
 * fronting (CONNECT to an allowed front, SNI or Host of another site behind it) is refused.
 * - no SNI (a TLS client that dialled an address): the CONNECT host's check stands;
 * - neither TLS nor HTTP (SSH, a protocol whose server speaks first): forwarded as it is; such a
 *   protocol names nothing the front would route by, and the CONNECT host was checked;
 * - a start of TLS or HTTP that is not whole within the bound, or malformed: refused, since a
 *   name past the bound (a padded ClientHello) would otherwise go unread.
 */
import type { Duplex } from "node:stream";
import type { WebDomains } from "../../lib/shared/web-domains.js";
import { domainRefusal } from "./egress-domains.js";
import { canonicalAddress, normalName } from "./egress-rules.js";
import { readTunnelStart, TUNNEL_READ_BOUND, type TunnelStart } from "./egress-tunnel-name.js";

export interface TunnelFirstBytes {
  /** What the client sent so far (the CONNECT's head included): sent upstream first if the tunnel passes. */
  bytes: Buffer;
  /** What they ask for (never "more"). */
  start: TunnelStart;
  /** The client ended its side (FIN) before the decision: end the upstream's after the bytes. */
  ended: boolean;
  /** The client's socket closed before the decision: nothing to send on. */
  closed: boolean;
}

/** A TLS alert record: fatal, access_denied (RFC 8446 6.2), so a TLS client says "alert access denied", not a bare reset. */
export const TLS_ACCESS_DENIED = Buffer.from([21, 3, 3, 0, 2, 2, 49]);

const READ = `With this tenant's domain lists (web.allowed_domains, web.blocked_domains) the egress proxy reads the name a tunnel asks for, a TLS ClientHello's server name or an HTTP request's Host, within its first ${TUNNEL_READ_BOUND / 1024} KiB, before sending anything on. Use a client that sends a standard ClientHello or HTTP/1 request head.`;

/**
 * Reads the client's first bytes until they say what they ask for (or the bound, or the client's
 * end). The client is left paused, with no listener of this function on it.
 */
export function readTunnelFirstBytes(client: Duplex, head: Buffer): Promise<TunnelFirstBytes> {
  return new Promise((resolve) => {
    let bytes = head;
    let ended = false;
    const finish = (start: TunnelStart, closed: boolean) => {
      client.pause();
      client.off("data", onData);
      client.off("end", onEnd);
      client.off("close", onClose);
      resolve({ bytes, start, ended, closed });
    };
    const decide = () => {
      const start = readTunnelStart(bytes, ended || bytes.length >= TUNNEL_READ_BOUND);
      if (start.kind !== "more") finish(start, false);
    };
    const onData = (chunk: Buffer) => {
      bytes = bytes.length ? Buffer.concat([bytes, chunk]) : chunk;
      decide();
    };
    const onEnd = () => {
      ended = true;
      decide();
    };
    const onClose = () => finish({ kind: "other" }, true);
    client.on("data", onData);
    client.on("end", onEnd);
    client.on("close", onClose);
    if (bytes.length) decide();
  });
}

/**
 * Why the tenant's lists refuse what a tunnel's first bytes ask for (a one-line refusal, and whether
 * the client speaks HTTP and so can be answered a 403), or null when they pass.
 */
export function tunnelRefusal(target: { host: string; port: number }, start: TunnelStart, domains: WebDomains): { line: string; http: boolean } | null {
  const opened = `${target.host}:${target.port}`;
  if (start.kind === "bad") return { line: `Refused the tunnel to ${opened}: its first bytes start ${start.tls ? "a TLS handshake" : "an HTTP request"}, but ${start.why}. ${READ}`, http: !start.tls };
  if (start.kind !== "tls" && start.kind !== "http") return null;
  const asked = normalName(target.host);
  for (const name of start.names) {
    if (name === asked) continue;
    const why = domainRefusal(name, canonicalAddress(name) !== null, domains);
    if (why) return { line: `Refused to connect to ${name}:${target.port}, the ${start.kind === "tls" ? "TLS server name (SNI)" : "HTTP Host"} sent inside a tunnel to ${opened}: ${why}`, http: start.kind === "http" };
  }
  return null;
}

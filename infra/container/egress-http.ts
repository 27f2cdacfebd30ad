/**
 * The egress proxy's HTTP pieces (egress-proxy.ts): the hop-by-hop headers it never forwards, and
 * the plain answer it gives a refused CONNECT or request (one line, also the command's stderr's).
 */
import type { IncomingHttpHeaders } from "node:http";

/** Hop-by-hop headers, never forwarded (RFC 9110 7.6.1), and the proxy's own. */
const HOP = new Set(["connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te", "trailer", "transfer-encoding", "upgrade"]);

export const withoutHop = (h: IncomingHttpHeaders): IncomingHttpHeaders => {
  const named = new Set(String(h.connection ?? "").toLowerCase().split(",").map((s) => s.trim()));
  return Object.fromEntries(Object.entries(h).filter(([k]) => !HOP.has(k) && !named.has(k)));
};

/** A whole HTTP/1.1 answer with a one-line body; the connection closes after it. */
export const plainAnswer = (status: number, line: string) => {
  const body = `${line}\n`;
  const reason = status === 403 ? "Forbidden" : status === 400 ? "Bad Request" : status === 503 ? "Service Unavailable" : "Bad Gateway";
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Toolshed-Egress: refused\r\nConnection: close\r\n\r\n${body}`;
};

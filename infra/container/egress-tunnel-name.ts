/**
 * The name the first bytes of a CONNECT tunnel ask for, read by the egress proxy when the tenant's
 * domain lists apply (egress-tunnel-check.ts): the server_name (SNI) of a TLS ClientHello, which may
 * come split over several TLS records and TCP segments, or the Host of a plain HTTP/1 request head
 * (and its request target's host when that is absolute or authority form). Pure: bytes in, a reading out.
 * Anything else (SSH, a protocol whose server speaks first, HTTP/2 with prior knowledge) carries no
 * name here and reads as "other". Bytes that start as TLS or HTTP but give no whole ClientHello or
 * request head within the bound read as "bad": past a bound the name could hide.
 */
import { normalName } from "./egress-rules.js";

/** The most the proxy reads of a tunnel before it decides (a ClientHello with post-quantum key shares is ~2 KB). */
export const TUNNEL_READ_BOUND = 16 * 1024;

export type TunnelStart =
  /** A TLS or HTTP start, not whole yet: read on. */
  | { kind: "more" }
  /** A whole ClientHello: its server names (none: no SNI, e.g. a client that dialled an address). */
  | { kind: "tls"; names: string[] }
  /** A whole HTTP/1 request head: the request target's host (absolute or authority form) and every Host header. */
  | { kind: "http"; names: string[] }
  /** Neither TLS nor HTTP: no name to read. */
  | { kind: "other" }
  /** Looked like TLS (or HTTP) and is not a whole ClientHello (request head) within the bound, or is malformed. */
  | { kind: "bad"; tls: boolean; why: string };

const HANDSHAKE = 22;
const CLIENT_HELLO = 1;
const SERVER_NAME = 0;
const HOST_NAME = 0;
/** A TLS record's most (RFC 8446 5.1: 2^14 for plaintext records). */
const MAX_RECORD = 16384;

const bad = (tls: boolean, why: string): TunnelStart => ({ kind: "bad", tls, why });

/** A host name as the domain lists compare it (lower case, no trailing dot, no IPv6 brackets). */
const hostName = (raw: string) => normalName(raw.trim());

/**
 * What `bytes` (the first a client sent in a tunnel) ask for. `final`: no more will come (the
 * bound is reached or the client ended), so a start that is not whole is "bad", not "more".
 */
export function readTunnelStart(bytes: Buffer, final: boolean): TunnelStart {
  if (bytes.length === 0) return final ? { kind: "other" } : { kind: "more" };
  const r = bytes[0] === HANDSHAKE ? readTls(bytes) : readHttp(bytes);
  if (r.kind !== "more" || !final) return r;
  return bad(bytes[0] === HANDSHAKE, bytes.length >= TUNNEL_READ_BOUND ? `there is no whole ${bytes[0] === HANDSHAKE ? "ClientHello" : "request head"} within the first ${TUNNEL_READ_BOUND / 1024} KiB` : "the client stopped sending before it was whole");
}

/** TLS handshake records, their fragments joined until the ClientHello is whole. */
function readTls(bytes: Buffer): TunnelStart {
  const fragments: Buffer[] = [];
  let have = 0;
  let need = -1;
  for (let at = 0; ; ) {
    if (bytes.length < at + 5) return { kind: "more" };
    if (bytes[at] !== HANDSHAKE || bytes[at + 1] !== 3) return bad(true, "a record other than a handshake came before the ClientHello was whole");
    const length = bytes.readUInt16BE(at + 3);
    if (length === 0 || length > MAX_RECORD) return bad(true, `a record is ${length} bytes long`);
    if (bytes.length < at + 5 + length) return { kind: "more" };
    fragments.push(bytes.subarray(at + 5, at + 5 + length));
    have += length;
    at += 5 + length;
    if (need < 0 && have >= 4) {
      const head = Buffer.concat(fragments);
      if (head[0] !== CLIENT_HELLO) return bad(true, "the first handshake message is not a ClientHello");
      need = 4 + head.readUIntBE(1, 3);
      if (need > TUNNEL_READ_BOUND) return bad(true, `the ClientHello is ${need} bytes, more than the ${TUNNEL_READ_BOUND / 1024} KiB read`);
    }
    if (need >= 0 && have >= need) return serverNames(Buffer.concat(fragments).subarray(4, need));
  }
}

/** The host names of a ClientHello's server_name extensions (RFC 8446 4.1.2, RFC 6066 3). */
function serverNames(hello: Buffer): TunnelStart {
  let at = 0;
  const take = (n: number) => {
    if (at + n > hello.length) throw new RangeError("the ClientHello ends inside a field");
    at += n;
    return at - n;
  };
  const u8 = () => hello[take(1)]!;
  const u16 = () => hello.readUInt16BE(take(2));
  try {
    take(2 + 32); // legacy_version, random
    take(u8()); // legacy_session_id
    take(u16()); // cipher_suites
    take(u8()); // legacy_compression_methods
    const names: string[] = [];
    if (at === hello.length) return { kind: "tls", names };
    const end = u16() + at;
    if (end !== hello.length) return bad(true, "the ClientHello's extensions do not fill it");
    while (at < end) {
      const type = u16();
      const body = take(u16());
      if (type !== SERVER_NAME) continue;
      const listEnd = hello.readUInt16BE(body) + body + 2;
      if (listEnd !== at) return bad(true, "its server_name extension is malformed");
      for (let p = body + 2; p < listEnd; ) {
        const nameType = hello[p]!;
        const length = hello.readUInt16BE(p + 1);
        if (p + 3 + length > listEnd) return bad(true, "its server_name extension is malformed");
        if (nameType === HOST_NAME) names.push(hostName(hello.toString("latin1", p + 3, p + 3 + length)));
        p += 3 + length;
      }
    }
    return { kind: "tls", names };
  } catch {
    return bad(true, "the ClientHello ends inside a field");
  }
}

const METHOD = /^[A-Z]{1,20}(?: |$)/;
const REQUEST_LINE = /^[A-Z]{1,20} (\S+) HTTP\/1\.[01]\r?$/;

/** An HTTP/1 request head, or "other" when the first line is not a request line. */
function readHttp(bytes: Buffer): TunnelStart {
  const lineEnd = bytes.indexOf(10);
  if (lineEnd < 0) return METHOD.test(bytes.toString("latin1", 0, 21)) ? { kind: "more" } : { kind: "other" };
  const line = REQUEST_LINE.exec(bytes.toString("latin1", 0, lineEnd));
  if (!line) return { kind: "other" };
  // The head ends at the first empty line (CRLF or bare LF).
  const ends = [bytes.indexOf("\n\r\n", lineEnd), bytes.indexOf("\n\n", lineEnd)].filter((i) => i >= 0);
  if (!ends.length) return { kind: "more" };
  const headEnd = Math.min(...ends);
  const names: string[] = [];
  const target = targetHost(line[1]!);
  if (target !== null) names.push(target);
  for (const field of bytes.toString("latin1", lineEnd + 1, headEnd).split(/\r?\n/)) {
    const colon = field.indexOf(":");
    if (colon > 0 && field.slice(0, colon).trim().toLowerCase() === "host") names.push(authorityHost(field.slice(colon + 1)));
  }
  return { kind: "http", names };
}

/** The host of an absolute-form (http://host/path) or authority-form (host:port) request target; null for origin form (/path). */
function targetHost(target: string): string | null {
  if (target.startsWith("/") || target === "*") return null;
  try {
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(target)) return hostName(new URL(target).hostname);
  } catch {
    return hostName(target);
  }
  return authorityHost(target);
}

/** The host of "host", "host:port" or "[v6]:port". */
function authorityHost(value: string): string {
  const v = value.trim();
  const bracketed = /^\[([^\]]*)\]/.exec(v);
  if (bracketed) return hostName(bracketed[1]!);
  return hostName(v.replace(/:\d*$/, ""));
}

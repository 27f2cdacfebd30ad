/**
 * The name a tunnel's first bytes ask for (egress-tunnel-name.ts, egress-tunnel-check.ts), on real
 * ClientHellos: node's TLS and openssl's, captured by a TCP server on 127.0.0.1. Whole, re-framed
 * into many TLS records, and fed to the reader one byte per chunk; HTTP heads; what reads as
 * "other" (forwarded) and "bad" (refused); and the decision by the tenant's lists.
 */
import { execFile } from "node:child_process";
import { PassThrough } from "node:stream";
import { connect as tlsConnect } from "node:tls";
import { describe, expect, it } from "vitest";
import { readTunnelFirstBytes, tunnelRefusal } from "../../../infra/container/egress-tunnel-check.js";
import { readTunnelStart, TUNNEL_READ_BOUND } from "../../../infra/container/egress-tunnel-name.js";
import { startHelloCatcher } from "../../support/hello-catcher.js";

/** The first bytes a TLS client sends (its ClientHello), captured by a server that answers nothing. */
async function captureHello(send: (port: number) => void): Promise<Buffer> {
  const catcher = await startHelloCatcher();
  send(catcher.port);
  const hello = await catcher.firstHello;
  catcher.close();
  return hello;
}

const nodeHello = (servername: string) =>
  captureHello((port) => {
    const c = tlsConnect({ host: "127.0.0.1", port, servername, rejectUnauthorized: false });
    c.on("error", () => {});
  });

const opensslHello = (servername: string) =>
  captureHello((port) => {
    const p = execFile("openssl", ["s_client", "-connect", `127.0.0.1:${port}`, "-servername", servername], () => {});
    p.stdin?.end();
  });

/** The same ClientHello in records of `size` bytes of handshake each (TLS lets a message span records). */
function reframe(hello: Buffer, size: number): Buffer {
  const body = hello.subarray(5);
  const records: Buffer[] = [];
  for (let at = 0; at < body.length; at += size) {
    const part = body.subarray(at, at + size);
    records.push(Buffer.from([22, 3, 1, part.length >> 8, part.length & 255]), part);
  }
  return Buffer.concat(records);
}

/** Feeds `bytes` to the tunnel reader one byte per chunk, as tiny TCP segments would come. */
async function readByteByByte(bytes: Buffer) {
  const client = new PassThrough();
  const reading = readTunnelFirstBytes(client, Buffer.alloc(0));
  for (const b of bytes) client.write(Buffer.from([b]));
  return reading;
}

const domains = { allowed_domains: ["docs.test"], blocked_domains: ["bad.docs.test"] };
const target = { host: "docs.test", port: 443 };

describe("the name a tunnel's first bytes ask for", () => {
  it("reads the SNI of node's and openssl's ClientHello, whole, re-framed in 40-byte records, and one byte per chunk", async () => {
    for (const hello of [await nodeHello("blocked.test"), await opensslHello("blocked.test")]) {
      expect(readTunnelStart(hello, false)).toEqual({ kind: "tls", names: ["blocked.test"] });
      // Not whole yet: read on, and past the end of what came, refuse.
      expect(readTunnelStart(hello.subarray(0, hello.length - 1), false)).toEqual({ kind: "more" });
      expect(readTunnelStart(hello.subarray(0, hello.length - 1), true)).toMatchObject({ kind: "bad", tls: true });
      const framed = reframe(hello, 40);
      expect(framed.length).toBeGreaterThan(hello.length + 5 * 5);
      expect(readTunnelStart(framed, false)).toEqual({ kind: "tls", names: ["blocked.test"] });
      const read = await readByteByByte(framed);
      expect(read.start).toEqual({ kind: "tls", names: ["blocked.test"] });
      // Every byte read is kept, to be sent on as it came.
      expect(read.bytes.equals(framed)).toBe(true);
    }
  });

  it("a ClientHello without SNI has no name (the CONNECT host's check stands)", async () => {
    const hello = await captureHello((port) => tlsConnect({ host: "127.0.0.1", port, rejectUnauthorized: false }).on("error", () => {}));
    expect(readTunnelStart(hello, false)).toEqual({ kind: "tls", names: [] });
    expect(tunnelRefusal(target, { kind: "tls", names: [] }, domains)).toBeNull();
  });

  it("reads an HTTP/1 request head's Host and absolute target, in any case and with a port", () => {
    const head = (s: string) => readTunnelStart(Buffer.from(s), false);
    expect(head("GET /x HTTP/1.1\r\nAccept: */*\r\nhOsT: Bad.Docs.Test:8080\r\n\r\n")).toEqual({ kind: "http", names: ["bad.docs.test"] });
    expect(head("GET http://other.test/x HTTP/1.1\r\nHost: docs.test\r\n\r\n")).toEqual({ kind: "http", names: ["other.test", "docs.test"] });
    expect(head("GET /x HTTP/1.0\n\n")).toEqual({ kind: "http", names: [] });
    expect(head("GET /x HTTP/1.1\r\nHost: [::1]:80\r\n\r\n")).toEqual({ kind: "http", names: ["::1"] });
    expect(head("GET /x HTTP/1.1\r\nHost: docs.test\r\n")).toEqual({ kind: "more" });
    expect(head("GE")).toEqual({ kind: "more" });
  });

  it("what is neither TLS nor HTTP reads as other; a start that is not whole within the bound reads as bad", () => {
    for (const s of ["SSH-2.0-OpenSSH_9.2\r\n", "EHLO me\r\n", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "\u0000\u0001"]) expect(readTunnelStart(Buffer.from(s), false), s).toEqual({ kind: "other" });
    expect(readTunnelStart(Buffer.alloc(0), true)).toEqual({ kind: "other" });
    const padded = Buffer.concat([Buffer.from("GET /"), Buffer.alloc(TUNNEL_READ_BOUND, "a")]);
    expect(readTunnelStart(padded, true)).toMatchObject({ kind: "bad", tls: false, why: "there is no whole request head within the first 16 KiB" });
    // A ClientHello announced longer than the bound is refused at once, not waited for.
    expect(readTunnelStart(Buffer.from([22, 3, 1, 0, 4, 1, 0, 0x50, 0]), false)).toMatchObject({ kind: "bad", tls: true, why: "the ClientHello is 20484 bytes, more than the 16 KiB read" });
    expect(readTunnelStart(Buffer.from([22, 3, 1, 0, 4, 2, 0, 0, 0]), false)).toMatchObject({ kind: "bad", why: "the first handshake message is not a ClientHello" });
  });

  it("the tenant's lists decide a name other than the CONNECT host by the same rule; the CONNECT host itself was checked already", () => {
    expect(tunnelRefusal(target, { kind: "tls", names: ["docs.test"] }, domains)).toBeNull();
    expect(tunnelRefusal(target, { kind: "tls", names: ["api.docs.test"] }, domains)).toBeNull();
    expect(tunnelRefusal(target, { kind: "tls", names: ["other.test"] }, domains)).toEqual({
      http: false,
      line: "Refused to connect to other.test:443, the TLS server name (SNI) sent inside a tunnel to docs.test:443: other.test is outside this tenant's allowed domains (allowed_domains: docs.test). A command cannot wait for a human's approval: fetch the URL with web_fetch, which asks for one, or ask the operator to add the domain to the tenant's policy (web.allowed_domains).",
    });
    expect(tunnelRefusal(target, { kind: "http", names: ["bad.docs.test"] }, domains)?.line).toContain("the HTTP Host sent inside a tunnel to docs.test:443: bad.docs.test is blocked by this tenant's web policy (blocked_domains: bad.docs.test)");
    expect(tunnelRefusal(target, { kind: "tls", names: ["127.0.0.2"] }, domains)?.line).toContain("127.0.0.2 is an IP address");
    expect(tunnelRefusal(target, { kind: "other" }, domains)).toBeNull();
    expect(tunnelRefusal(target, { kind: "bad", tls: true, why: "x" }, domains)?.line).toMatch(/^Refused the tunnel to docs\.test:443: its first bytes start a TLS handshake, but x\. With this tenant's domain lists/);
  });
});

/**
 * The egress proxy on its own (no sandbox): what the sandbox tests cannot easily show. Names
 * resolved once and the checked address dialled; this host's own addresses refused whatever
 * their range; its bounds (open and total connections, idle time) and its close; refusals told
 * one by one, then counted. Real sockets: the proxy on a unix socket, servers on 127.0.0.1.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEgressProxy, type EgressProxyOptions } from "../../../infra/container/egress-proxy.js";
import { egressRules } from "../../../infra/container/egress-rules.js";

const dir = mkdtempSync(join(tmpdir(), "toolshed-egress-proxy-"));
let seq = 0;
let echo: Server;
let echoPort = 0;
let accepted = 0;

beforeAll(async () => {
  echo = createServer((s) => {
    accepted++;
    s.on("error", () => {});
    s.pipe(s);
  });
  await new Promise<void>((r) => echo.listen(0, "127.0.0.1", r));
  echoPort = (echo.address() as { port: number }).port;
});

afterAll(() => {
  echo.close();
  rmSync(dir, { recursive: true, force: true });
});

async function proxy(opts: Partial<EgressProxyOptions> = {}) {
  const socketPath = join(dir, `p${++seq}.sock`);
  const refusals: string[] = [];
  const p = await startEgressProxy({ allowLoopback: true, socketPath, onRefusal: (l) => refusals.push(l), ...opts });
  return { ...p, socketPath, refusals };
}

/** CONNECT through the proxy: the status line, and the socket (tunnel) when it is 200, with what came after the answer's head. */
function tunnel(socketPath: string, authority: string): Promise<{ status: number; head: string; socket: Socket; rest?: string }> {
  return new Promise((resolve, reject) => {
    const s = connect(socketPath);
    let buf = "";
    s.on("error", reject);
    s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
    const onData = (c: Buffer) => {
      buf += c.toString();
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      s.removeListener("data", onData);
      const status = Number(buf.split(" ")[1]);
      if (status === 200) return resolve({ status, head: buf.slice(0, end), socket: s, rest: buf.slice(end + 4) });
      // A refusal: the whole answer (its body is one line), then the proxy closes.
      s.on("data", (more: Buffer) => (buf += more.toString()));
      s.on("end", () => resolve({ status, head: buf, socket: s }));
      s.on("data", () => {});
    };
    s.on("data", onData);
  });
}

const roundTrip = (s: Socket, text: string) =>
  new Promise<string>((resolve) => {
    s.once("data", (c: Buffer) => resolve(c.toString()));
    s.write(text);
  });

/** Calls `f` until its answer passes `ok` (at most 1000 times). */
async function until<T>(f: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  for (let i = 0; ; i++) {
    const v = await f();
    if (ok(v) || i >= 1000) return v;
  }
}

/** A minimal TLS ClientHello naming `name` in its server_name extension, in one record. */
function clientHello(name: string): Buffer {
  const u16 = (n: number) => Buffer.from([n >> 8, n & 255]);
  const host = Buffer.from(name);
  const sni = Buffer.concat([u16(0), u16(host.length + 5), u16(host.length + 3), Buffer.from([0]), u16(host.length), host]);
  const body = Buffer.concat([Buffer.from([3, 3]), Buffer.alloc(32), Buffer.from([0]), u16(2), Buffer.from([0x13, 0x01]), Buffer.from([1, 0]), u16(sni.length), sni]);
  const handshake = Buffer.concat([Buffer.from([1, 0]), u16(body.length), body]);
  return Buffer.concat([Buffer.from([22, 3, 1]), u16(handshake.length), handshake]);
}

const closed = (s: Socket) => new Promise<void>((r) => (s.destroyed ? r() : s.once("close", () => r())));

describe("egress rules", () => {
  it("refuse this host's own addresses whatever their range, and the API's address on any port", async () => {
    const rules = egressRules({ hostAddresses: () => ["8.8.4.4", "2001:4860::8844", "127.0.0.1"], apiUrl: "http://9.9.9.9:8787", resolve: async () => [{ address: "1.1.1.1", family: 4 }, { address: "8.8.4.4", family: 4 }] });
    await expect(rules.check("8.8.4.4", 443)).rejects.toThrow("8.8.4.4 is an address of the runner's own host");
    await expect(rules.check("[2001:4860:0:0:0:0:0:8844]", 443)).rejects.toThrow("an address of the runner's own host");
    await expect(rules.check("::ffff:8.8.4.4", 443)).rejects.toThrow("an address of the runner's own host");
    await expect(rules.check("9.9.9.9", 22)).rejects.toThrow("9.9.9.9 is the Toolshed API's own host");
    // One refused address among a name's addresses refuses the name (as web_fetch does).
    await expect(rules.check("mixed.example", 443)).rejects.toThrow("mixed.example resolves to 8.8.4.4, which is an address of the runner's own host");
    // Spellings WHATWG URL reads as loopback are loopback here too.
    for (const h of ["2130706433", "0x7f.1", "127.1", "[::ffff:127.0.0.1]", "0.0.0.0"]) await expect(rules.check(h, 80), h).rejects.toThrow(/loopback|this network/);
    await expect(rules.check("metadata.google.internal", 80)).rejects.toThrow("an internal name");
    // More spellings of loopback, "this host" and link-local, as a CONNECT or a URL may give them (none reaches a resolver).
    for (const h of ["[::]", "[0:0:0:0:0:0:0:0]", "0", "017700000001", "127.0.0.1.", "localhost.", "LOCALHOST", "[::1%25lo]", "[::ffff:0:127.0.0.1]", "[::127.0.0.1]", "[64:ff9b::7f00:1]", "[2002:7f00:1::]", "[fe80::1%25eth0]", "[::ffff:a9fe:a9fe]"])
      await expect(rules.check(h, 80), h).rejects.toThrow(/^Refused to connect/);
    const named = egressRules({ hostAddresses: () => [], apiUrl: "https://API.Toolshed.test:8787/v1", resolve: async () => [{ address: "1.1.1.1", family: 4 }] });
    for (const h of ["api.toolshed.test", "API.TOOLSHED.TEST", "api.toolshed.test."]) await expect(named.check(h, 443), h).rejects.toThrow("the Toolshed API's own host");
    expect(await egressRules({ hostAddresses: () => [], resolve: async () => [{ address: "1.1.1.1", family: 4 }] }).check("one.example", 443)).toEqual([{ address: "1.1.1.1", family: 4 }]);
  });

  it("refuse port 25 (SMTP relay) on every host, public ones too, before resolving; submission ports stay open", async () => {
    let resolved = 0;
    const rules = egressRules({ hostAddresses: () => [], resolve: async () => (resolved++, [{ address: "1.1.1.1", family: 4 }]) });
    for (const h of ["mx.example", "1.1.1.1", "[2606:4700::1111]"]) await expect(rules.check(h, 25), h).rejects.toThrow("port 25 (SMTP) is closed to sandboxes");
    expect(resolved).toBe(0);
    for (const port of [587, 465]) expect(await rules.check("smtp.example", port)).toEqual([{ address: "1.1.1.1", family: 4 }]);
  });
});

describe("egress proxy", () => {
  it("resolves a name once and dials the address it checked", async () => {
    let lookups = 0;
    const p = await proxy({ resolve: async () => (lookups++, [{ address: "127.0.0.1", family: 4 }]) });
    const before = accepted;
    const t = await tunnel(p.socketPath, `echo.test:${echoPort}`);
    expect(t.status).toBe(200);
    expect(await roundTrip(t.socket, "ping")).toBe("ping");
    expect(lookups).toBe(1);
    expect(accepted).toBe(before + 1);
    await p.close();
    await closed(t.socket); // close() ends the open tunnels
  });

  it("bounds open and total connections per run, with a message that says what to do", async () => {
    const p = await proxy({ maxOpen: 2, maxTotal: 3 });
    const a = await tunnel(p.socketPath, `127.0.0.1:${echoPort}`);
    const b = await tunnel(p.socketPath, `127.0.0.1:${echoPort}`);
    const c = await tunnel(p.socketPath, `127.0.0.1:${echoPort}`);
    expect([a.status, b.status, c.status]).toEqual([200, 200, 503]);
    expect(c.head).toContain("already has 2 connections open, the most one run may. Close some, or reuse connections.");
    // A slot is freed once the proxy sees a tunnel close (asked again until then: a refusal for
    // too many open connections does not count toward the total).
    a.socket.destroy();
    const d = await until(() => tunnel(p.socketPath, `127.0.0.1:${echoPort}`), (r) => r.status === 200);
    d.socket.destroy();
    const e = await until(() => tunnel(p.socketPath, `127.0.0.1:${echoPort}`), (r) => !r.head.includes("already has 2"));
    expect(e.status).toBe(503);
    expect(e.head).toContain("has opened 3 connections, the most one run may");
    b.socket.destroy();
    await p.close();
  });

  it("closes a tunnel with no traffic for idleMs", async () => {
    const p = await proxy({ idleMs: 200 });
    const t = await tunnel(p.socketPath, `127.0.0.1:${echoPort}`);
    expect(await roundTrip(t.socket, "x")).toBe("x");
    await closed(t.socket);
    await p.close();
  });

  it("tells the first 20 refusals one by one, and the number of the others at close", async () => {
    const p = await proxy({ allowLoopback: false });
    for (let i = 0; i < 23; i++) expect((await tunnel(p.socketPath, `10.0.0.${i + 1}:80`)).status).toBe(403);
    const bad = await tunnel(p.socketPath, "no-port");
    expect(bad.status).toBe(400);
    expect(bad.head).toContain("CONNECT needs host:port");
    expect(p.refusals).toHaveLength(20);
    expect(p.refusals[0]).toBe("toolshed egress: Refused to connect to 10.0.0.1:80: 10.0.0.1 is a private address (10.0.0.0/8). Commands with network reach only public internet addresses (not loopback, private, link-local or cloud metadata addresses, this runner's host or the Toolshed API).");
    await p.close();
    expect(p.refusals).toHaveLength(21);
    expect(p.refusals[20]).toBe("toolshed egress: 4 more connections were refused (the first 20 are above).");
  });

  it("reads a tunnel's first bytes only when the tenant's lists apply (a count), hears a server that speaks first meanwhile, and tells a secret of the SNI's host", async () => {
    const hello = clientHello("npm.secret.test");
    const bare = await proxy();
    const a = await tunnel(bare.socketPath, `127.0.0.1:${echoPort}`);
    expect((await roundTrip(a.socket, hello.toString("latin1"))).length).toBeGreaterThan(0);
    expect(bare.tunnelsRead()).toBe(0);
    await bare.close();

    const secrets = [{ name: "NPM_TOKEN", host: "npm.secret.test", header: "Authorization", value: "Bearer x" }];
    const listed = await proxy({ domains: { blocked_domains: ["blocked.test"] }, secrets });
    const b = await tunnel(listed.socketPath, `127.0.0.1:${echoPort}`);
    expect(Buffer.from(await roundTrip(b.socket, hello.toString("latin1")), "latin1").equals(hello)).toBe(true);
    expect(listed.tunnelsRead()).toBe(1);
    expect(listed.refusals).toEqual([expect.stringContaining("toolshed egress: npm.secret.test has the tenant's secret {{secret:NPM_TOKEN}}, added only to requests sent as http://npm.secret.test/...")]);
    // A protocol whose server speaks first (SMTP submission, SSH): its greeting comes before the client says anything, then the client's bytes go on.
    const greeter = createServer((s) => {
      s.on("error", () => {});
      s.write("220 hello\r\n");
      s.pipe(s);
    });
    await new Promise<void>((r) => greeter.listen(0, "127.0.0.1", r));
    const c = await tunnel(listed.socketPath, `127.0.0.1:${(greeter.address() as { port: number }).port}`);
    const greeting = c.rest || (await new Promise<string>((r) => c.socket.once("data", (d: Buffer) => r(d.toString()))));
    expect(greeting).toBe("220 hello\r\n");
    expect(await roundTrip(c.socket, "EHLO me\r\n")).toBe("EHLO me\r\n");
    expect(listed.tunnelsRead()).toBe(2);
    await listed.close();
    greeter.close();
  });
});

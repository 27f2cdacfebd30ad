/**
 * The tenant's domain lists inside a CONNECT tunnel (docs/sandbox-network.md): the egress proxy
 * reads the name the tunnel's first bytes ask for (a ClientHello's SNI, an HTTP request's Host) and
 * checks it as it checks the CONNECT host. From inside a real bwrap sandbox whose proxy lets test
 * loopback through and plays a DNS (every *.test name is 127.0.0.2), against real servers there:
 * a TCP server that records every byte it gets (a refused tunnel: not one) and hangs up after a
 * ClientHello, an HTTPS one and a
 * plain HTTP one. The clients are openssl s_client, curl and the sandbox's node (a TLS client that
 * writes its ClientHello one byte per write).
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapSandbox } from "../../../infra/container/sandbox.js";
import type { Resolver } from "../../../lib/shared/ssrf.js";
import type { WebDomains } from "../../../lib/shared/web-domains.js";
import { startHelloCatcher, type HelloCatcher } from "../../support/hello-catcher.js";
import { startTlsServer, type TlsServer } from "../../support/tls-server.js";
import { setup } from "./helpers.js";

const state = mkdtempSync(join(tmpdir(), "toolshed-egress-tunnel-"));
chmodSync(state, 0o711);
const resolve: Resolver = async (name) => (name.endsWith(".test") ? [{ address: "127.0.0.2", family: 4 }] : [{ address: "203.0.113.1", family: 4 }]);
const t = setup({ sandbox: bwrapSandbox({ stateDir: state, egress: { allowLoopback: true, resolve } }) }, "tenant-tunnel", "ws");

/** The raw server: every connection it took, and the bytes it got on it. */
let raw: HelloCatcher;
let rawPort = 0;
let tls: TlsServer;
let web: HttpServer;
let webPort = 0;
const webSeen: string[] = [];

beforeAll(async () => {
  raw = await startHelloCatcher("127.0.0.2");
  rawPort = raw.port;
  tls = await startTlsServer(["docs.test", "api.docs.test", "other.test"], "unused", "127.0.0.2");
  web = createHttpServer((req, res) => {
    webSeen.push(`${req.headers.host} ${req.url}`);
    res.end(`hello ${req.url}\n`);
  });
  await new Promise<void>((r) => web.listen(0, "127.0.0.2", r));
  webPort = (web.address() as { port: number }).port;
});

afterAll(async () => {
  raw.close();
  web.close();
  await Promise.all([t.cleanup(), tls.close()]);
  rmSync(state, { recursive: true, force: true });
});

const allowed: WebDomains = { allowed_domains: ["docs.test"] };
const run = (command: string, domains: WebDomains | undefined) => t.run(command, { network: true, ...(domains ? { egress_domains: domains } : {}) });

/** openssl's TLS client, through the proxy to `connect`, naming `sni` in its ClientHello. */
const openssl = (connect: string, sni: string) => `openssl s_client -proxy 127.0.0.1:3128 -connect ${connect} -servername ${sni} </dev/null >/dev/null 2>&1; echo "openssl=$?"`;

/**
 * The sandbox's node as a TLS client whose every write goes to the tunnel one byte at a time
 * (TCP_NODELAY): its ClientHello arrives in tiny pieces. It prints what the server answers to GET /split.
 */
const tinyWrites = (port: number, sni: string) => {
  const script = [
    `const net = require("net"), tls = require("tls"), { Duplex } = require("stream");`,
    `const s = net.connect(3128, "127.0.0.1", () => s.write("CONNECT docs.test:${port} HTTP/1.1\\r\\nHost: docs.test:${port}\\r\\n\\r\\n"));`,
    `s.setNoDelay(true); s.on("error", (e) => console.log("socket:", e.code)); s.on("close", () => process.exit(0));`,
    `s.once("data", () => {`,
    `  const d = new Duplex({ read() {}, write(c, _e, cb) { let i = 0; const next = () => (i < c.length ? s.write(c.subarray(i, ++i), next) : cb()); next(); } });`,
    `  s.on("data", (x) => d.push(x)); s.on("end", () => d.push(null));`,
    `  const t = tls.connect({ socket: d, servername: "${sni}", rejectUnauthorized: false }, () => t.write("GET /split HTTP/1.1\\r\\nHost: ${sni}\\r\\nConnection: close\\r\\n\\r\\n"));`,
    `  t.on("data", (x) => process.stdout.write(x)); t.on("error", (e) => console.log("tls:", e.message));`,
    `});`,
  ].join("\n");
  return `/run/toolshed/node -e '${script}'`;
};

const refusal = (stderr: string, name: string, port: number) => stderr.split("\n").find((l) => l.startsWith(`toolshed egress: Refused to connect to ${name}:${port}, the `)) ?? "";

describe("the tenant's domain lists inside a CONNECT tunnel", () => {
  it("CONNECT to an allowed host with another name in its SNI is refused and the upstream never gets a byte; the line says which name and rule", async () => {
    const from = raw.seen.length;
    const r = await run(openssl(`docs.test:${rawPort}`, "other.test"), allowed);
    expect(r.stdout).not.toContain("openssl=0");
    expect(refusal(r.stderr, "other.test", rawPort), r.stderr).toBe(
      `toolshed egress: Refused to connect to other.test:${rawPort}, the TLS server name (SNI) sent inside a tunnel to docs.test:${rawPort}: other.test is outside this tenant's allowed domains (allowed_domains: docs.test). A command cannot wait for a human's approval: fetch the URL with web_fetch, which asks for one, or ask the operator to add the domain to the tenant's policy (web.allowed_domains).`,
    );
    // The CONNECT host passed, so its upstream was dialled; not one byte of the client went there.
    expect(raw.seen.slice(from).flat()).toEqual([]);
  });

  it("a blocked SNI is refused inside an allowed tunnel (curl --connect-to), and the HTTPS server sees no request", async () => {
    const before = tls.seen.length;
    const r = await run(`curl -sS -m 5 -k https://other.test:${tls.port}/fronted --connect-to other.test:${tls.port}:docs.test:${tls.port}`, { blocked_domains: ["other.test"] });
    expect(r.stderr).toContain(`Refused to connect to other.test:${tls.port}, the TLS server name (SNI) sent inside a tunnel to docs.test:${tls.port}: other.test is blocked by this tenant's web policy (blocked_domains: other.test)`);
    expect(r.stderr).toMatch(/alert access denied/);
    expect(tls.seen.length).toBe(before);
  });

  it("a matching SNI passes, and so does another name the lists allow", async () => {
    const before = tls.seen.length;
    const r = await run(`curl -sS -m 5 -k https://docs.test:${tls.port}/same; echo; curl -sS -m 5 -k https://api.docs.test:${tls.port}/sub --connect-to api.docs.test:${tls.port}:docs.test:${tls.port}`, allowed);
    expect(r.stdout, r.stderr).toBe("ok\nok");
    expect(tls.seen.slice(before).map((s) => `${s.host.replace(/:\d+$/, "")} ${s.path}`)).toEqual(["docs.test /same", "api.docs.test /sub"]);
    expect(r.stderr).not.toContain("toolshed egress");
  });

  it("a ClientHello written one byte at a time is still read: a blocked SNI refused, the allowed one served", async () => {
    const before = tls.seen.length;
    const r = await run(`${tinyWrites(tls.port, "other.test")}; echo; ${tinyWrites(tls.port, "docs.test")}`, allowed);
    expect(refusal(r.stderr, "other.test", tls.port), r.stderr).toContain("other.test is outside this tenant's allowed domains");
    expect(r.stdout).toContain("tls:"); // the refused client's handshake failed
    expect(r.stdout).toContain("HTTP/1.1 200 OK");
    expect(tls.seen.slice(before).map((s) => `${s.host} ${s.path}`)).toEqual(["docs.test /split"]);
  });

  it("plain HTTP in a tunnel with a Host the lists refuse gets the 403 line (curl prints it); the server sees only the allowed request", async () => {
    const from = webSeen.length;
    const url = `http://docs.test:${webPort}`;
    const r = await run(`curl -sS -m 5 --proxytunnel -H 'Host: other.test' ${url}/hidden; curl -sS -m 5 --proxytunnel ${url}/open`, allowed);
    expect(r.stdout).toContain(`Refused to connect to other.test:${webPort}, the HTTP Host sent inside a tunnel to docs.test:${webPort}: other.test is outside this tenant's allowed domains`);
    expect(r.stdout).toContain("hello /open");
    expect(webSeen.slice(from)).toEqual([`docs.test:${webPort} /open`]);
    expect(refusal(r.stderr, "other.test", webPort)).not.toBe("");
  });

  it("without the lists nothing in the tunnel is read: the same fronted tunnel reaches the server", async () => {
    const from = raw.seen.length;
    const r = await run(openssl(`docs.test:${rawPort}`, "other.test"), undefined);
    expect(r.stderr).not.toContain("toolshed egress");
    // The ClientHello went on as it came (the raw server answers nothing; openssl gives up).
    const got = Buffer.concat(raw.seen.slice(from).flat());
    expect(got[0]).toBe(22);
    expect(got.includes("other.test")).toBe(true);
  });
});

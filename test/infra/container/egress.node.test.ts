/**
 * The egress policy of the bash sandbox, tried from inside a real bwrap sandbox: loopback, this
 * host's own addresses, link-local/metadata, private ranges, host names that map to loopback and
 * the API's own host are refused with and without `network`; with it, through the egress proxy
 * (infra/container/egress-proxy.ts), with the reason in the command's output. The positive
 * control: a sandbox whose proxy lets loopback through (test-only) reaches a server on
 * 127.0.0.2 with the same commands, so the refusals are the policy's and not a broken path.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createServer, type Server } from "node:net";
import { hostname, networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalInvokeServer } from "../../../infra/container/local-server.js";
import { bwrapSandbox } from "../../../infra/container/sandbox.js";
import type { Resolver } from "../../../lib/shared/ssrf.js";
import { setup } from "./helpers.js";

const t = setup({}, "tenant-egress", "ws");
const openState = mkdtempSync(join(tmpdir(), "toolshed-egress-"));
chmodSync(openState, 0o711); // bwrap, as the sandbox user, binds paths below it
/** A test DNS for the proxy: these names answer 127.0.0.2, the rest as the system says. */
const testNames = new Set(["web.test", "api.toolshed.test"]);
const resolve: Resolver = async (name) => (testNames.has(name) ? [{ address: "127.0.0.2", family: 4 }] : [{ address: "203.0.113.1", family: 4 }]);
const open = setup({ sandbox: bwrapSandbox({ stateDir: openState, egress: { allowLoopback: true, resolve } }) }, "tenant-open", "ws");

/** A TCP server on every address of this host (dual stack): a connection to it is an escape. */
let host: Server;
let hostPort = 0;
let hostConnections = 0;
/** The positive control's HTTP server, on 127.0.0.2. */
let web: HttpServer;
let webPort = 0;
const webRequests: string[] = [];
const BIG = 2 * 1024 * 1024;
/** What the web server's sockets carried, over every connection: answers written, requests read. */
const webSockets = new Set<import("node:net").Socket>();
const webWire = () => [...webSockets].reduce((w, s) => ({ written: w.written + s.bytesWritten, read: w.read + s.bytesRead }), { written: 0, read: 0 });

beforeAll(async () => {
  host = createServer((s) => {
    hostConnections++;
    s.on("error", () => {});
    s.end("HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\nhello from the host\n");
  });
  await new Promise<void>((r) => host.listen(0, "::", r));
  hostPort = (host.address() as { port: number }).port;
  web = createHttpServer((req, res) => {
    webRequests.push(`${req.method} ${req.url}`);
    if (req.url === "/big") return void res.end(Buffer.alloc(BIG, 97)); // ends right after its last byte
    res.end(`hello from web ${req.url}\n`);
  });
  web.on("connection", (s) => webSockets.add(s));
  await new Promise<void>((r) => web.listen(0, "127.0.0.2", r));
  webPort = (web.address() as { port: number }).port;
});

afterAll(async () => {
  host.close();
  web.close();
  await Promise.all([t.cleanup(), open.cleanup()]);
  rmSync(openState, { recursive: true, force: true });
});

/** This host's own non-loopback addresses, as URL hosts (link-local fe80:: needs a zone: left out). */
const ownAddresses = (): string[] =>
  Object.values(networkInterfaces())
    .flatMap((l) => l ?? [])
    .filter((i) => !i.internal && !i.address.startsWith("fe80"))
    .map((i) => (i.family === "IPv6" ? `[${i.address}]` : i.address));

/** host:port pairs no command may reach, with or without network. */
const forbidden = (): string[] => [
  `127.0.0.1:${hostPort}`,
  `[::1]:${hostPort}`,
  `localhost:${hostPort}`,
  `${hostname()}:${hostPort}`, // /etc/hosts of this machine maps it to loopback (or it is the host's address)
  ...ownAddresses().map((a) => `${a}:${hostPort}`),
  "169.254.169.254:80",
  "[fd00:ec2::254]:80",
  "10.0.0.1:80",
  "172.16.0.1:80",
  "192.168.1.1:80",
  "100.64.0.1:80",
];

/** One curl per target (its exit code after a marker), then a raw TCP attempt around any proxy. */
const tryAll = (targets: string[]) =>
  targets
    .map((hp) => {
      const [, h, p] = /^(.*):(\d+)$/.exec(hp)!;
      const raw = h!.replace(/^\[|\]$/g, "");
      // --noproxy '': not even loopback names go around the proxy (NO_PROXY would send them to the sandbox's own loopback).
      return `curl -sS -m 5 --noproxy '' http://${hp}/probe; echo "[curl ${hp} rc=$?]"; timeout 3 bash -c 'exec 3<>/dev/tcp/${raw}/${p} && cat <&3' 2>/dev/null; echo "[tcp ${hp} rc=$?]"`;
    })
    .join("; ");

describe("sandbox egress: nothing internal is reachable", () => {
  it("without network: loopback, the host's addresses, metadata and private ranges all fail, nothing connects", async () => {
    expect(ownAddresses().length).toBeGreaterThan(0); // control: the host has addresses to try
    const r = await t.run(tryAll(forbidden()), { timeout_ms: 60_000 });
    expect(r.output).not.toContain("hello from the host");
    for (const hp of forbidden()) {
      expect(r.stdout).toMatch(new RegExp(`\\[curl ${hp.replace(/[[\]().]/g, "\\$&")} rc=[1-9]`));
      expect(r.stdout).toMatch(new RegExp(`\\[tcp ${hp.replace(/[[\]().]/g, "\\$&")} rc=[1-9]`));
    }
    expect(r.stdout).not.toContain("HTTP_PROXY"); // no proxy at all without network
    expect(hostConnections).toBe(0);
  });

  it("with network: the egress proxy refuses each one and the output says why; going around it finds no route", async () => {
    const r = await t.run(`${tryAll(forbidden())}; python3 -c "import urllib.request; urllib.request.urlopen('http://10.0.0.1/')" 2>&1 | tail -1`, { network: true, timeout_ms: 60_000 });
    expect(r.output).not.toContain("hello from the host");
    expect(hostConnections).toBe(0);
    const names: Record<string, RegExp> = {
      [`127.0.0.1:${hostPort}`]: /127\.0\.0\.1 is a loopback address/,
      [`[::1]:${hostPort}`]: /::1 is the IPv6 loopback address/,
      [`localhost:${hostPort}`]: /localhost is a loopback name/,
      "169.254.169.254:80": /169\.254\.169\.254 is a link-local address .*metadata/,
      "10.0.0.1:80": /10\.0\.0\.1 is a private address/,
      "192.168.1.1:80": /192\.168\.1\.1 is a private address/,
    };
    for (const [hp, why] of Object.entries(names)) {
      const line = r.stderr.split("\n").find((l) => l.startsWith(`toolshed egress: Refused to connect to ${hp}:`));
      expect(line, `${hp}\n${r.stderr}`).toMatch(why);
    }
    // Every target, names and this host's addresses included, is refused by the proxy.
    for (const hp of forbidden()) expect(r.stderr, hp).toContain(`Refused to connect to ${hp}:`);
    expect(r.stderr).toMatch(new RegExp(`Refused to connect to ${hostname()}:${hostPort}: ${hostname()} resolves to \\S+, which is`));
    // Plain HTTP: the 403's one-line body is the command's output (curl prints it); python sees the 403.
    expect(r.stdout).toContain("Refused to connect to 10.0.0.1:80: 10.0.0.1 is a private address (10.0.0.0/8).");
    expect(r.stdout).toContain("HTTP Error 403");
    // Around the proxy (raw TCP): no route out of the sandbox's own network namespace.
    for (const hp of forbidden()) expect(r.stdout).toMatch(new RegExp(`\\[tcp ${hp.replace(/[[\]().]/g, "\\$&")} rc=[1-9]`));
  });

  it("with network, the proxy bypassed by hand: --noproxy reaches only the sandbox's own loopback, DNS resolves nothing inside", async () => {
    const r = await t.run(`curl -sS -m 5 --noproxy '*' http://127.0.0.1:${hostPort}/; echo "rc=$?"; getent hosts example.com || echo no-dns`, { network: true });
    expect(r.stdout).toMatch(/rc=[1-9]/);
    expect(r.stdout).toContain("no-dns");
    expect(r.output).not.toContain("hello from the host");
    expect(hostConnections).toBe(0);
  });
});

describe("sandbox egress: the runner's own Invoke endpoint", () => {
  it("is out of reach of every command, with and without network, through the proxy or around it", async () => {
    const invoke = await startLocalInvokeServer({ root: join(t.root, "invoke"), functionName: "toolshed-runner" });
    try {
      const url = `${invoke.url}/2015-03-31/functions/toolshed-runner/invocations`;
      const body = JSON.stringify({ version: 1, tenant: "victim", workspace: "w", command: "id" });
      const post = (proxy: string) => `curl -fsS -m 5 ${proxy} -H 'X-Amz-Tenant-Id: victim' -d '${body}' ${url}; echo "[rc=$?]"`;
      const cmd = [post("--noproxy ''"), post("--noproxy '*'")].join("; ");
      for (const network of [false, true]) {
        const r = await t.run(cmd, { network });
        expect(r.stdout.match(/\[rc=[1-9]\d*\]/g) ?? []).toHaveLength(2); // through the proxy: 403; around it: no route
        if (network) expect(r.stderr).toContain(`Refused to connect to ${new URL(invoke.url).host}: 127.0.0.1 is a loopback address`);
      }
      expect(invoke.invocations).toEqual([]);
    } finally {
      await invoke.close();
    }
  });
});

describe("sandbox egress: the allowed path (the proxy lets test loopback through)", () => {
  it("curl (plain and CONNECT), python and a name resolved by the proxy reach the server; without the test option the same commands are refused", async () => {
    const cmd = [
      `curl -sS -m 5 http://127.0.0.2:${webPort}/plain`,
      `curl -sS -m 5 --proxytunnel http://127.0.0.2:${webPort}/tunnel`,
      `python3 -c "import urllib.request; print(urllib.request.urlopen('http://web.test:${webPort}/py').read().decode().strip())"`,
    ].join("; ");
    const before = webRequests.length;
    const refused = await t.run(cmd, { network: true });
    expect(webRequests.length).toBe(before); // the production rules: nothing reached
    expect(refused.stderr).toContain(`Refused to connect to 127.0.0.2:${webPort}: 127.0.0.2 is a loopback address`);
    const allowed = await open.run(cmd, { network: true });
    expect(allowed.stdout).toContain("hello from web /plain");
    expect(allowed.stdout).toContain("hello from web /tunnel");
    expect(allowed.stdout).toContain("hello from web /py");
    expect(webRequests.slice(before, before + 3)).toEqual(["GET /plain", "GET /tunnel", "GET /py"]);
    // A large body arrives whole both ways (the server closes right after it: nothing buffered is dropped).
    const big = await open.run(`curl -sS http://127.0.0.2:${webPort}/big | wc -c; curl -sS --proxytunnel http://127.0.0.2:${webPort}/big | wc -c`, { network: true });
    expect(big.stdout.trim().split("\n")).toEqual([String(BIG), String(BIG)]);
    // The run's own loopback is reached directly (NO_PROXY), never through the proxy.
    const local = await open.run(`(python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 &); for i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:8000/ && break; sleep 0.1; done; curl -sS -o /dev/null -w '%{http_code}\\n' http://127.0.0.1:8000/`, { network: true });
    expect(local.stdout.trim().split("\n").pop()).toBe("200");
  });

  it("what a run's connections carried, plain and tunnelled, is its result's net_bytes_in / net_bytes_out: the bytes on the server's sockets; a run without network has none", async () => {
    const before = webWire();
    const r = await open.run(`curl -sS http://127.0.0.2:${webPort}/big | wc -c; curl -sS --proxytunnel http://127.0.0.2:${webPort}/big | wc -c`, { network: true });
    expect(r.stdout.trim().split("\n")).toEqual([String(BIG), String(BIG)]);
    await new Promise((done) => setTimeout(done, 50)); // the server's sockets have closed
    const after = webWire();
    expect(r.net_bytes_in).toBe(after.written - before.written);
    expect(r.net_bytes_out).toBe(after.read - before.read);
    expect(r.net_bytes_in).toBeGreaterThan(2 * BIG);
    const none = await open.run("echo no network");
    expect([none.net_bytes_in, none.net_bytes_out]).toEqual([undefined, undefined]);
    // With network and no connection: 0 both ways (the record then has none: lib/run/metering/usage.ts netUsage).
    const idle = await open.run("echo idle", { network: true });
    expect([idle.net_bytes_in, idle.net_bytes_out]).toEqual([0, 0]);
  });

  it("the API's own host is refused even where loopback is let through: by address and by name", async () => {
    const byAddress = await open.run(`curl -sS -m 5 http://127.0.0.2:${webPort}/api`, { network: true, sync: { url: `http://127.0.0.2:${webPort}`, token: "unused" } });
    expect(byAddress.stderr).toContain(`Refused to connect to 127.0.0.2:${webPort}: 127.0.0.2 is the Toolshed API's own host.`);
    const byName = await open.run(`curl -sS -m 5 http://api.toolshed.test:${webPort}/api; curl -sS -m 5 --proxytunnel http://api.toolshed.test:1/api`, { network: true, sync: { url: `https://API.toolshed.test.`, token: "unused" } });
    expect(byName.stderr).toContain(`Refused to connect to api.toolshed.test:${webPort}: api.toolshed.test is the Toolshed API's own host.`);
    expect(byName.stderr).toContain("Refused to connect to api.toolshed.test:1: api.toolshed.test is the Toolshed API's own host.");
    expect(webRequests).not.toContain("GET /api");
  });
});

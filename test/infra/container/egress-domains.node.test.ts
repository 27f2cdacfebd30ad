/**
 * The tenant's web domain lists bind commands (RunRequest.egress_domains, docs/sandbox-network.md):
 * tried from inside a real bwrap sandbox whose egress proxy lets test loopback through and plays a
 * DNS (every *.test name answers 127.0.0.2, where a test web server listens), so a refusal is the
 * domain policy's and a pass reaches the server. Plain HTTP (absolute URL) and CONNECT both; the
 * server sees no request of a refused host.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapSandbox } from "../../../infra/container/sandbox.js";
import type { Resolver } from "../../../lib/shared/ssrf.js";
import type { WebDomains } from "../../../lib/shared/web-domains.js";
import { setup } from "./helpers.js";
import { liveSetup } from "./live-helpers.js";

const state = mkdtempSync(join(tmpdir(), "toolshed-egress-domains-"));
chmodSync(state, 0o711); // bwrap, as the sandbox user, binds paths below it
const resolve: Resolver = async (name) => (name.endsWith(".test") ? [{ address: "127.0.0.2", family: 4 }] : [{ address: "203.0.113.1", family: 4 }]);
const open = setup({ sandbox: bwrapSandbox({ stateDir: state, egress: { allowLoopback: true, resolve } }) }, "tenant-domains", "ws");
const live = liveSetup({ sandbox: bwrapSandbox({ stateDir: state, egress: { allowLoopback: true, resolve } }) }, "tenant-domains-live", "ws");

let web: Server;
let port = 0;
/** What the server was asked: "host path" (the Host header without its port). */
const seen: string[] = [];

beforeAll(async () => {
  web = createServer((req, res) => {
    seen.push(`${(req.headers.host ?? "").replace(/:\d+$/, "")} ${req.url}`);
    res.end(`hello ${req.url}\n`);
  });
  await new Promise<void>((r) => web.listen(0, "127.0.0.2", r));
  port = (web.address() as { port: number }).port;
});

afterAll(async () => {
  web.close();
  await Promise.all([open.cleanup(), live.t.cleanup()]);
  rmSync(state, { recursive: true, force: true });
});

/** A plain request and a tunnelled one (CONNECT) to each host, each path naming host and way. */
const both = (hosts: string[]) =>
  hosts.flatMap((h) => [`curl -sS -m 5 http://${h}:${port}/${h}/plain`, `curl -sS -m 5 --proxytunnel http://${h}:${port}/${h}/tunnel`]).join("; ");

const run = async (hosts: string[], domains: WebDomains) => {
  const from = seen.length;
  const r = await open.run(both(hosts), { network: true, egress_domains: domains });
  return { r, reached: seen.slice(from).sort() };
};

const reachedBoth = (hosts: string[]) => hosts.flatMap((h) => [`${h} /${h}/plain`, `${h} /${h}/tunnel`]).sort();
/** The refusal line of host, told on the command's stderr (for CONNECT curl prints only "response 403"). */
const refusal = (stderr: string, host: string) => stderr.split("\n").find((l) => l.startsWith(`toolshed egress: Refused to connect to ${host}:${port}: `)) ?? "";

describe("the tenant's domain lists at a command's egress proxy", () => {
  it("blocked_domains: the domain and its subdomains are refused, plain and CONNECT, before the server sees anything; other hosts pass", async () => {
    const { r, reached } = await run(["blocked.test", "api.blocked.test", "fine.test"], { blocked_domains: ["blocked.test"] });
    expect(reached).toEqual(reachedBoth(["fine.test"]));
    for (const host of ["blocked.test", "api.blocked.test"]) {
      expect(refusal(r.stderr, host), r.stderr).toContain(`${host} is blocked by this tenant's web policy (blocked_domains: blocked.test)`);
      // The plain request's 403 body is the same line, which curl prints.
      expect(r.stdout).toContain(`Refused to connect to ${host}:${port}: ${host} is blocked`);
    }
    expect(r.stderr).toMatch(/CONNECT tunnel failed, response 403/);
    expect(r.stdout).toContain("hello /fine.test/plain");
    expect(r.stdout).toContain("hello /fine.test/tunnel");
  });

  it("allowed_domains: the domain and its subdomains pass, '*.' only subdomains; a host outside is refused and told to use web_fetch or ask the operator", async () => {
    const { r, reached } = await run(["docs.test", "api.docs.test", "a.wild.test", "wild.test", "other.test"], { allowed_domains: ["docs.test", "*.wild.test"] });
    expect(reached).toEqual(reachedBoth(["docs.test", "api.docs.test", "a.wild.test"]));
    for (const host of ["wild.test", "other.test"]) {
      const line = refusal(r.stderr, host);
      expect(line, r.stderr).toContain(`${host} is outside this tenant's allowed domains (allowed_domains: docs.test, *.wild.test).`);
      expect(line).toContain("A command cannot wait for a human's approval: fetch the URL with web_fetch, which asks for one, or ask the operator to add the domain");
    }
  });

  it("with allowed_domains an IP address is refused (it cannot match a domain), plain and CONNECT", async () => {
    const { r, reached } = await run(["127.0.0.2"], { allowed_domains: ["docs.test"] });
    expect(reached).toEqual([]);
    expect(refusal(r.stderr, "127.0.0.2"), r.stderr).toContain("127.0.0.2 is an IP address, and this tenant's web policy lets commands reach only the domains in allowed_domains (docs.test); an address cannot match a domain.");
    // Without the lists the same address is reached: the refusal is the policy's.
    const control = await run(["127.0.0.2"], {});
    expect(control.reached).toEqual(reachedBoth(["127.0.0.2"]));
  });

  it("blocked_domains win inside allowed_domains; an empty allowed list lets nothing out", async () => {
    const { r, reached } = await run(["docs.test", "bad.docs.test"], { allowed_domains: ["docs.test"], blocked_domains: ["bad.docs.test"] });
    expect(reached).toEqual(reachedBoth(["docs.test"]));
    expect(refusal(r.stderr, "bad.docs.test")).toContain("bad.docs.test is blocked by this tenant's web policy (blocked_domains: bad.docs.test)");
    const none = await run(["docs.test"], { allowed_domains: [] });
    expect(none.reached).toEqual([]);
    expect(refusal(none.r.stderr, "docs.test")).toContain("docs.test is outside this tenant's allowed domains (allowed_domains: none).");
  });

  it("a live sandbox's proxy enforces the lists it was started with, for every command of it", async () => {
    const domains = { allowed_domains: ["docs.test"] };
    const s = live.startLive({}, { network: true, egress_domains: domains });
    const from = seen.length;
    const a = await s.cmd(both(["docs.test", "other.test"]), { network: true });
    const b = await s.cmd(both(["other.test"]), { network: true });
    expect(seen.slice(from).sort()).toEqual(reachedBoth(["docs.test"]));
    for (const r of [a, b]) expect(refusal(r.stderr, "other.test"), r.stderr).toContain("other.test is outside this tenant's allowed domains (allowed_domains: docs.test).");
    await s.end();
  });
});

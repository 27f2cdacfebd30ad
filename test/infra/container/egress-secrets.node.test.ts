/**
 * A tenant secret at the sandbox's egress (docs/secrets.md), in a real bwrap sandbox through the
 * signed invocation: the command asks the proxy for http://npm.secret.test/private (plain http, as
 * the secrets' door for commands works), the proxy goes on over TLS to a real HTTPS server on
 * 127.0.0.2 that answers only with the secret, and adds the header. The value is nowhere the
 * command can look: its environment, /proc/self/environ, every file of the sandbox (the read-only
 * host /usr aside), its output, the workspace written back, nor the runner's own directories.
 * A CONNECT to the same host goes through without it, and says how to get it; a host not bound gets nothing.
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapSandbox } from "../../../infra/container/sandbox.js";
import type { Resolver } from "../../../lib/shared/ssrf.js";
import { startTlsServer, type TlsServer } from "../../support/tls-server.js";
import { setup } from "./helpers.js";

const VALUE = "npm_tok_5be0c2d9a7f14e3b86";
const [HEAD, TAIL] = [VALUE.slice(0, 10), VALUE.slice(10)];
let tls: TlsServer;
const state = mkdtempSync(join(tmpdir(), "toolshed-egress-secrets-"));
chmodSync(state, 0o711);
const resolve: Resolver = async (name) => (name.endsWith(".secret.test") || name === "other.test" ? [{ address: "127.0.0.2", family: 4 }] : [{ address: "203.0.113.1", family: 4 }]);
let t: ReturnType<typeof setup>;

beforeAll(async () => {
  // 127.0.0.2: the API's own host (the sync URL's, 127.0.0.1) stays refused even with loopback let through.
  tls = await startTlsServer(["npm.secret.test", "other.test"], VALUE, "127.0.0.2");
  t = setup({ sandbox: bwrapSandbox({ stateDir: state, egress: { allowLoopback: true, resolve, tlsCa: tls.ca } }) }, "tenant-secrets", "ws");
});
afterAll(async () => {
  await t.cleanup();
  await tls.close();
  rmSync(state, { recursive: true, force: true });
});

/** Every file below `dir` (host side) whose bytes hold the value. */
function filesHolding(dir: string, value: string): string[] {
  const hits: string[] = [];
  const walk = (d: string) => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const n of names) {
      const p = join(d, n);
      let st;
      try {
        st = statSync(p);
      } catch {
        continue;
      }
      if (st.isDirectory()) walk(p);
      else if (st.isFile() && st.size < 50_000_000 && readFileSync(p).includes(value)) hits.push(p);
    }
  };
  walk(dir);
  return hits;
}

describe("secrets at the sandbox's egress proxy", () => {
  it("the request that needs the secret succeeds; the value is in no environment, file, output or runner directory", async () => {
    const secrets = [{ name: "NPM_TOKEN", host: "npm.secret.test", header: "Authorization", value: `Bearer ${VALUE}` }];
    const before = tls.seen.length;
    // The value is assembled inside the shell (never exported), so the command's own argv never holds it whole.
    const command = [
      `curl -sS -m 10 -o /workspace/out.txt -w 'status=%{http_code}\\n' http://npm.secret.test:${tls.port}/private`,
      `cat /workspace/out.txt; echo`,
      `curl -sS -m 10 -o /dev/null -w 'other=%{http_code}\\n' -k https://other.test:${tls.port}/private`,
      `curl -sS -m 10 -o /dev/null -w 'tunnel=%{http_code}\\n' -k https://npm.secret.test:${tls.port}/private`,
      `V="$(printf %s ${HEAD})$(printf %s ${TAIL})"`,
      `env | grep -cF "$V" | sed 's/^/env_hits=/'`,
      // /proc/self/environ as the kernel keeps it (read by cat: its own environment, inherited from the shell).
      `cat /proc/self/environ | wc -c | sed 's/^/environ_bytes=/'`,
      `cat /proc/self/environ | tr '\\0' '\\n' | grep -cF "$V" | sed 's/^/environ_hits=/'`,
      `grep -rlF "$V" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr 2>/dev/null | sed 's/^/file_hit=/'`,
      `echo scan-done`,
    ].join("\n");
    const r = await t.run(command, { network: true, egress_secrets: secrets });
    const out = `${r.stdout}\n${r.stderr}`;
    expect(out, out).toContain("status=200");
    expect(out).toContain("private ok");
    expect(out).toContain("other=401");
    expect(out).toContain("tunnel=401");
    expect(out).toContain("env_hits=0");
    expect(out).toContain("environ_hits=0");
    expect(Number(/environ_bytes=(\d+)/.exec(out)?.[1])).toBeGreaterThan(100);
    expect(out).toContain("scan-done");
    expect(out).not.toContain("file_hit=");
    // The CONNECT's hint names the placeholder and says what to do.
    expect(r.stderr).toContain("npm.secret.test has the tenant's secret {{secret:NPM_TOKEN}}");
    expect(out).not.toContain(VALUE);
    // The server saw the header on the plain-http request (sent on over TLS), and on nothing else.
    const seen = tls.seen.slice(before);
    expect(seen.map((s) => [s.host.split(":")[0], s.headers.authorization === `Bearer ${VALUE}`])).toEqual([
      ["npm.secret.test", true],
      ["other.test", false],
      ["npm.secret.test", false],
    ]);
    // Written back: the page, not the secret; the runner's directories (stage, slots, state) hold it nowhere.
    expect(await t.read("out.txt")).toBe("private ok");
    expect(filesHolding(t.root, VALUE)).toEqual([]);
    expect(filesHolding(state, VALUE)).toEqual([]);
  });

  it("without the secret (another tenant's run) the same request gets no header", async () => {
    const before = tls.seen.length;
    const r = await t.run(`curl -sS -m 10 -w '\\nstatus=%{http_code}\\n' http://npm.secret.test:${tls.port}/private`, { network: true });
    // Without a secret for the host the proxy forwards plain http as it is: to the TLS port, which fails.
    expect(r.stdout).not.toContain("status=200");
    expect(tls.seen.slice(before).every((s) => s.headers.authorization === undefined)).toBe(true);
  });
});

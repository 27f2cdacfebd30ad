/**
 * The image's real Lambda entry (`handler` of the bundled dist/container/handler.mjs) in
 * conditions like Lambda's: an outer bubblewrap with `--disable-userns` leaves no user
 * namespaces to the entry (so its own bubblewrap cannot start, as on Lambda), and the
 * entry and its commands run as one non-root user. The entry must fall back to the process
 * sandbox, run commands, kill what they leave behind, and survive its own reap.
 */
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signEvent } from "../../../lib/exec/runner-auth.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import { storageSyncClient } from "../../../lib/sync/storage.js";
import type { ExecResponse } from "../../../lib/sync/types.js";
import { filesPrefix } from "../../../lib/layout/paths.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { workspaceRecord } from "../../support/workspace-record.js";
import { RUNNER_SECRET, startSyncServer } from "./helpers.js";

const SECRET = "entry-test-secret-0123456789";
const driver = memoryDriver();
const dir = mkdtempSync(join(tmpdir(), "toolshed-entry-"));
let sync: Awaited<ReturnType<typeof startSyncServer>>;

beforeAll(async () => {
  chmodSync(dir, 0o755);
  sync = await startSyncServer(driver, SECRET);
  await build({
    entryPoints: ["infra/container/handler.ts"], outfile: join(dir, "handler.mjs"), bundle: true, platform: "node", target: "node22", format: "esm", logLevel: "silent",
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  });
  // Calls the entry with each event (and its TenantId, unless the event says none), one JSON answer per line.
  writeFileSync(join(dir, "drive.mjs"), [
    "const { handler } = await import(process.argv[2]);",
    "const { readFileSync } = await import('node:fs');",
    "for (const e of JSON.parse(readFileSync(process.argv[3], 'utf8'))) {",
    "  const { noTenant, ...event } = e;",
    "  console.log(JSON.stringify(await handler(event, noTenant ? {} : { tenantId: event.tenant })));",
    "}",
  ].join("\n"));
}, 60_000);

afterAll(() => {
  sync.close();
  rmSync(dir, { recursive: true, force: true });
});

/** An event as the API sends it: signed with the runner secret. */
async function event(command: string, extra: Record<string, unknown> = {}) {
  const key = `entry-${Math.random().toString(36).slice(2)}`;
  await workspaceRecord(driver, "acme", "main");
  const token = await mintSyncToken(SECRET, { t: "acme", w: "main", r: key }, 300);
  return signEvent(RUNNER_SECRET, { action: "run", version: 1, idempotency_key: key, tenant: "acme", workspace: "main", command, timeout_ms: 20_000, sync: { url: sync.url, token }, ...extra });
}

/**
 * Runs the entry in a Lambda-like jail: no user namespaces left, uid 993 (a stand-in for sbx_user1051), private /tmp.
 * The runner secret comes as the image's entrypoint hands it over: in a file (TOOLSHED_RUNNER_SECRET_FILE).
 */
function runEntry(events: unknown[]): Promise<ExecResponse[]> {
  const secretDir = join(dir, "secret");
  mkdirSync(secretDir, { recursive: true, mode: 0o700 });
  chmodSync(secretDir, 0o777); // the jail's uid 993 deletes the file once read
  writeFileSync(join(secretDir, "runner-secret"), RUNNER_SECRET, { mode: 0o644 });
  const args = [
    "--unshare-user", "--disable-userns", "--unshare-pid", "--die-with-parent", "--uid", "993", "--gid", "993",
    "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--ro-bind", dir, dir, "--bind", secretDir, secretDir,
    // node itself may live under /tmp (a checkout there, node from node_modules): the private /tmp would hide it.
    "--ro-bind", dirname(process.execPath), dirname(process.execPath),
    "--setenv", "TOOLSHED_RUNNER_EGRESS", "none", "--setenv", "TOOLSHED_RUNNER_SECRET_FILE", join(secretDir, "runner-secret"), "--setenv", "TOOLSHED_RUNNER_ROOT", "/tmp/toolshed",
    process.execPath, join(dir, "drive.mjs"), join(dir, "handler.mjs"), join(dir, "events.json"),
  ];
  // In a file, not in argv: the commands' pgrep would find their own text in the driver's argv.
  writeFileSync(join(dir, "events.json"), JSON.stringify(events));
  return new Promise((resolve, reject) => {
    const p = spawn("bwrap", args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (c) => (out += c));
    p.stderr.on("data", (c) => (err += c));
    p.on("close", (code) => (code === 0 ? resolve(out.trim().split("\n").map((l) => JSON.parse(l) as ExecResponse)) : reject(new Error(`entry exited ${code}: ${err}`))));
  });
}

const pgrep = (pattern: string): string => {
  try {
    return execFileSync("pgrep", ["-af", pattern]).toString();
  } catch {
    return "";
  }
};

describe("the Lambda entry where user namespaces are refused", () => {
  it("falls back to the process sandbox, writes back, kills leftovers, survives its own reap, and refuses calls without a tenant", async () => {
    await storageSyncClient(driver, "acme", "main").put("a.txt", new TextEncoder().encode("one\n"), {});
    const answers = await runEntry([
      // The entry's own bubblewrap cannot start here (control: the command below would fail under it).
      await event("unshare -U true 2>/dev/null && echo userns || echo no-userns; id -u; cat a.txt; echo two > b.txt; sleep 998877 & setsid sleep 998878 & echo started"),
      await event("pgrep -f 'sleep 99887[78]' || echo no-leftovers; cat b.txt"),
      { ...(await event("echo hi > c.txt")), noTenant: true },
    ]);
    expect(answers).toHaveLength(3);
    const [first, second, third] = answers as [ExecResponse, ExecResponse, ExecResponse];
    expect(first).toMatchObject({ ok: true, result: { stdout: "no-userns\n993\none\nstarted\n", files_changed: ["b.txt"] } });
    // The handler answered the second call: it survived the reap that killed the sleeps.
    expect(second).toMatchObject({ ok: true, result: { stdout: "no-leftovers\ntwo\n" } });
    expect(third).toMatchObject({ ok: false, error: { code: "UNAVAILABLE", details: { reason: "tenant_isolation_missing" } } });
    expect(pgrep("sleep 99887[78]")).toBe("");
    const ws = storageSyncClient(driver, "acme", "main");
    expect(await new Response((await ws.fetch("b.txt"))!.body).text()).toBe("two\n");
    expect(await ws.fetch("c.txt")).toBeNull();
  }, 60_000);

  it("refuses unsigned and altered events; the secret is nowhere a command can read it", async () => {
    const signed = await event("echo never > unsigned.txt");
    const { auth: _auth, ...unsigned } = signed;
    const altered = { ...(await event("echo never > altered.txt")), command: "echo altered > altered.txt" };
    // The pattern goes through a file: in argv, grep would find its own command line.
    const [half1, half2] = [RUNNER_SECRET.slice(0, 10), RUNNER_SECRET.slice(10)];
    const search = await event(`printf %s '${half1}' > /tmp/p; printf %s '${half2}' >> /tmp/p; grep -lsF -f /tmp/p /proc/[0-9]*/environ /proc/[0-9]*/cmdline /proc/[0-9]*/task/*/environ | wc -l; ls -A ${join(dir, "secret")} | wc -l`);
    const [a, b, c] = await runEntry([unsigned, altered, search]);
    expect(a).toMatchObject({ ok: false, error: { code: "UNAVAILABLE", details: { reason: "invocation_unsigned" } } });
    expect(b).toMatchObject({ ok: false, error: { code: "UNAVAILABLE", details: { reason: "invocation_bad_signature" } } });
    expect(c).toMatchObject({ ok: true, result: { stdout: "0\n0\n" } });
    const ws = storageSyncClient(driver, "acme", "main");
    expect(await ws.fetch("unsigned.txt")).toBeNull();
    expect(await ws.fetch("altered.txt")).toBeNull();
    expect(existsSync(join(dir, "secret", "runner-secret"))).toBe(false);
  }, 60_000);
});

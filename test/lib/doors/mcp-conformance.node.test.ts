/**
 * The official MCP conformance runner (@modelcontextprotocol/conformance) against a workspace's
 * MCP door, served over real HTTP on 127.0.0.1. The runner takes only a URL, so an auth proxy
 * (test/support/auth-proxy.ts) adds the API key. Scenarios that need the runner's own demo tools
 * (test_simple_text, prompts, resources, sampling, elicitation) do not apply to a tool server
 * with a fixed tool set and are not run.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { createApp } from "../../../lib/api/app.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { startAuthProxy, type AuthProxy } from "../../support/auth-proxy.js";
import { serveFetch, type Served } from "../../support/serve-fetch.js";

const ADMIN = "conformance-admin";
const app = createApp({ storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN }, tools);
let server: Served;
let proxy: AuthProxy;
const out = mkdtempSync(join(tmpdir(), "toolshed-mcp-conformance-"));

beforeAll(async () => {
  server = await serveFetch((req) => app.fetch(req));
  const post = (path: string, body: unknown, auth: string) => fetch(`${server.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${auth}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  expect((await post("/v1/admin/tenants", { id: "mcp" }, ADMIN)).status).toBe(201);
  const key = ((await (await post("/v1/admin/tenants/mcp/keys", {}, ADMIN)).json()) as { key: string }).key;
  expect((await post("/v1/workspaces", { id: "conf" }, key)).status).toBe(201);
  proxy = await startAuthProxy(server.url, key);
});
afterAll(async () => {
  await proxy?.close();
  await server?.close();
  rmSync(out, { recursive: true, force: true });
});

/** The runner's verdicts for one scenario: every check it wrote, with its status. */
async function runScenario(scenario: string): Promise<{ id: string; status: string; errorMessage?: string }[]> {
  const dir = join(out, scenario);
  // Exits non-zero when a check fails; the verdicts are in the files it writes either way.
  await promisify(execFile)(process.execPath, [RUNNER, "server", "--url", `${proxy.url}/v1/workspaces/conf/mcp`, "--scenario", scenario, "-o", dir], { timeout: 60_000 }).catch(() => {});
  const files = readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith("checks.json"));
  expect(files.length, `the runner wrote no checks for ${scenario}`).toBeGreaterThan(0);
  return files.flatMap((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as { id: string; status: string; errorMessage?: string }[]);
}

const RUNNER = "node_modules/@modelcontextprotocol/conformance/dist/index.js";
/**
 * What applies to Toolshed's door. Not run: logging-set-level and completion-complete (optional
 * capabilities the door does not declare; it answers -32601 as the spec asks), and the scenarios
 * that call the runner's own demo tools, prompts and resources.
 */
const SCENARIOS = ["server-initialize", "ping", "tools-list", "tools-call-error"];

for (const scenario of SCENARIOS) {
  it(`passes ${scenario}`, async () => {
    const checks = await runScenario(scenario);
    expect(checks.filter((c) => c.status !== "SUCCESS")).toEqual([]);
  }, 90_000);
}

// DNS rebinding: a rebound name (Host and Origin both evil.example.com) is refused, a localhost origin accepted.
it("passes dns-rebinding-protection", async () => {
  const checks = await runScenario("dns-rebinding-protection");
  expect(checks.map((c) => c.id.trim()).sort()).toEqual(["localhost-host-rebinding-rejected", "localhost-host-valid-accepted"]);
  expect(checks.filter((c) => c.status !== "SUCCESS")).toEqual([]);
}, 90_000);

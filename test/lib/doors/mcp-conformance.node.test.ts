/**
 * The official MCP conformance runner (@modelcontextprotocol/conformance 0.1.16) against a
 * workspace's MCP endpoint, served over real HTTP on 127.0.0.1. The runner takes only a URL, so an
 * auth proxy (test/support/auth-proxy.ts) adds the API key. The suite's fixture tools
 * (test_simple_text, test_error_handling, json_schema_2020_12_tool) are this test-only tenant's
 * custom tools: webhooks answered by a fixture server on 127.0.0.1 (web_fetch's allowLoopback).
 *
 * Revisions: the suite's server scenarios are all 2025-era; its client (SDK 1.x) opens with
 * initialize offering 2025-11-25, which this endpoint answers with the 2025 door. 0.1.16 has no
 * 2026-07-28 scenario, so the 2026-07-28 door is covered by the official 2.x client instead
 * (test/lib/doors/mcp-2026.test.ts). The scenario × revision table: docs/mcp-and-providers.md.
 */
import { execFile } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
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
const app = createApp({ storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, webFetch: { allowLoopback: true } }, tools);
let server: Served;
let proxy: AuthProxy;
let fixtures: Server;

/** What the suite's fixture tools answer (the webhook protocol of docs/custom-tools.md). */
const FIXTURE_ANSWERS: Record<string, unknown> = {
  test_simple_text: { content: [{ type: "text", text: "This is a simple text response for testing." }] },
  test_error_handling: { content: [{ type: "text", text: "This tool intentionally returns an error for testing" }], is_error: true },
  json_schema_2020_12_tool: { content: [{ type: "text", text: "ok" }] },
};
const JSON_SCHEMA_2020_12 = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  $defs: { address: { type: "object", properties: { street: { type: "string" }, city: { type: "string" } } } },
  properties: { name: { type: "string" }, address: { $ref: "#/$defs/address" } },
  additionalProperties: false,
};

/** The fixture tools as this tenant's webhook custom tools, answered by a server on 127.0.0.1. */
async function addFixtureTools(): Promise<void> {
  fixtures = createServer((req, res) => {
    let raw = "";
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      const answer = FIXTURE_ANSWERS[(JSON.parse(raw) as { tool: string }).tool];
      res.writeHead(answer ? 200 : 404, { "content-type": "application/json" }).end(JSON.stringify(answer ?? { error: "no such fixture" }));
    });
  });
  await new Promise<void>((ok) => fixtures.listen(0, "127.0.0.1", ok));
  const url = `http://127.0.0.1:${(fixtures.address() as AddressInfo).port}/`;
  for (const name of Object.keys(FIXTURE_ANSWERS)) {
    const input_schema = name === "json_schema_2020_12_tool" ? JSON_SCHEMA_2020_12 : { type: "object", properties: {} };
    const res = await fetch(`${server.url}/v1/admin/tenants/mcp/tools/custom`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify({ name, description: `Conformance fixture ${name}`, input_schema, backend: { type: "webhook", url } }) });
    expect(res.status, await res.text()).toBe(201);
  }
}
const out = mkdtempSync(join(tmpdir(), "toolshed-mcp-conformance-"));

beforeAll(async () => {
  server = await serveFetch((req) => app.fetch(req));
  const post = (path: string, body: unknown, auth: string) => fetch(`${server.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${auth}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  expect((await post("/v1/admin/tenants", { id: "mcp" }, ADMIN)).status).toBe(201);
  // network: the fixture tools are webhooks.
  const key = ((await (await post("/v1/admin/tenants/mcp/keys", { scopes: ["read", "write", "execute", "network"] }, ADMIN)).json()) as { key: string }).key;
  expect((await post("/v1/workspaces", { id: "conf" }, key)).status).toBe(201);
  await addFixtureTools();
  proxy = await startAuthProxy(server.url, key);
});
afterAll(async () => {
  await proxy?.close();
  await new Promise<void>((ok) => (fixtures ? fixtures.close(() => ok()) : ok()));
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
 * What applies to Toolshed's door and passes. Not run (the table in docs/mcp-and-providers.md says
 * why for each): logging and completion (capabilities the door does not declare), prompts and
 * resources (none), the fixture tools whose content a webhook cannot give (image, audio, embedded
 * resource, mixed content, progress, logging, sampling, elicitation), SSE polling and multiple
 * streams (a stateless door keeps no stream).
 */
const SCENARIOS = ["server-initialize", "ping", "tools-list", "tools-call-simple-text", "tools-call-error"];

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

// SEP-1613: a custom tool's declared schema is listed as written: $schema, $defs, additionalProperties.
it("passes json-schema-2020-12", async () => {
  const checks = await runScenario("json-schema-2020-12");
  expect(checks.find((c) => c.id === "json-schema-2020-12-tool-found")?.status).toBe("SUCCESS");
  expect(checks.filter((c) => c.status !== "SUCCESS")).toEqual([]);
}, 90_000);

/**
 * The Python client (clients/python/, package `toolshed`) against the real local server as `npm
 * start` runs it: the app in the Workers runtime (wrangler dev) and bash through the local Invoke
 * stand-in in its bubblewrap sandbox. The machine's python3 runs the package's unittest modules
 * (PYTHONPATH at clients/python/src: nothing is installed) and the Python blocks of the README and
 * docs/python-client.md, the agent loop with a scripted model among them, so the examples cannot rot.
 */
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalInvokeServer, type LocalInvokeServer } from "../../infra/container/local-server.js";
import { RUNNER_SECRET } from "../infra/container/helpers.js";
import { freePort, startWorker, type WorkerProcess } from "../support/wrangler-dev.js";

const PACKAGE = resolve("clients/python");
const PYTHON = process.env.PYTHON ?? "python3";

let w: WorkerProcess;
let runner: LocalInvokeServer;
let root: string;
let scratch: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "toolshed-python-client-"));
  chmodSync(root, 0o711);
  scratch = mkdtempSync(join(tmpdir(), "toolshed-python-cwd-"));
  runner = await startLocalInvokeServer({ root, port: await freePort(), secret: RUNNER_SECRET });
  const port = await freePort();
  w = await startWorker({
    port,
    vars: { TOOLSHED_SYNC_SECRET: "python-client-test-secret-0123456789", TOOLSHED_RUNNER_SECRET: RUNNER_SECRET, TOOLSHED_RUNNER_URL: runner.url, TOOLSHED_PUBLIC_URL: `http://127.0.0.1:${port}` },
  });
}, 120_000);

afterAll(async () => {
  await w?.stop();
  await runner?.close();
  for (const dir of [root, scratch]) if (dir) rmSync(dir, { recursive: true, force: true });
});

async function admin(path: string, body: unknown): Promise<any> {
  const r = await fetch(`${w.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${w.adminToken}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  const json = await r.json();
  if (!r.ok) throw new Error(`${path}: ${r.status} ${JSON.stringify(json)}`);
  return json;
}

/** A tenant of its own and the keys the Python side uses: the agent's (default scopes), the app's (approve), a rate-limited one. */
async function tenantEnv(tenant: string): Promise<Record<string, string>> {
  await admin("/v1/admin/tenants", { id: tenant });
  const key = async (body: unknown) => (await admin(`/v1/admin/tenants/${tenant}/keys`, body)).key as string;
  return {
    TOOLSHED_URL: w.url,
    TOOLSHED_KEY: await key({ name: "agent" }),
    TOOLSHED_APPROVE_KEY: await key({ name: "app", scopes: ["read", "write", "approve"] }),
    TOOLSHED_LIMITED_KEY: await key({ name: "limited", limits: { calls_per_minute: 60 } }),
  };
}

/** Runs python3 without blocking this process (the bash runner lives in it). */
function python(args: string[], env: Record<string, string>, cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((done, fail) => {
    const child = spawn(PYTHON, args, { cwd, env: { ...process.env, ...env, PYTHONPATH: join(PACKAGE, "src"), PYTHONDONTWRITEBYTECODE: "1", PYTHONUNBUFFERED: "1" }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.once("error", fail);
    child.once("close", (code) => done({ code, output }));
  });
}

/** The ```python blocks of a Markdown page. */
const pythonBlocks = (page: string) => [...readFileSync(page, "utf8").matchAll(/^```python\n([\s\S]*?)^```/gm)].map((m) => m[1]!);

describe("the Python client's tests (python3 -m unittest)", () => {
  const modules = ["test_sse", "test_tools", "test_files", "test_archive_versions", "test_pending", "test_stream_errors"];
  for (const [i, module] of modules.entries()) {
    it(module, async () => {
      const env = await tenantEnv(`py${i}`);
      const r = await python(["-m", "unittest", "-v", `tests.${module}`], env, PACKAGE);
      expect(r.code, r.output).toBe(0);
      const ran = Number(/^Ran (\d+) tests? in/m.exec(r.output)?.[1] ?? 0);
      expect(ran, r.output).toBeGreaterThan(0);
      expect(r.output, "no test may be skipped").not.toMatch(/skipped/);
      expect(r.output.trimEnd().endsWith("OK"), r.output).toBe(true);
    }, 240_000);
  }
});

describe("the examples", () => {
  it("README: the Python quick start runs", async () => {
    const [block, ...more] = pythonBlocks("README.md");
    expect(more).toEqual([]);
    const r = await python(["-c", block!], await tenantEnv("pyreadme"), scratch);
    expect(r.code, r.output).toBe(0);
    expect(r.output).toMatch(/^hello\n/);
    expect(r.output).toContain("NOT_FOUND 404 File not found: missing.py");
  }, 120_000);

  it("docs/python-client.md: every block, in order, ending with the agent loop of a scripted model", async () => {
    const blocks = pythonBlocks("docs/python-client.md");
    expect(blocks.length).toBeGreaterThanOrEqual(8);
    expect(blocks.at(-1)).toContain("def model(items, tools)");
    const r = await python(["-c", blocks.join("\n")], await tenantEnv("pydocs"), scratch);
    expect(r.code, r.output).toBe(0);
    expect(r.output).toContain("FILE_MODIFIED 409");
    expect(r.output).toContain("what ran was {\"path\":\"build/cache\",\"recursive\":true}");
    // the loop: the scripted model fixed calc.py through the client and the test passed in the sandbox
    expect(r.output).toContain("Fixed add(): the test passes.\ndef add(a, b):\n    return a + b\n");
  }, 240_000);
});

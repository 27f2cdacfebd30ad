/**
 * The client as another program gets it: `toolshed/client` resolves through package.json
 * `exports`, and `npm run client:build`'s single ES module (esbuild, platform neutral) imports no
 * Node built-ins and works with the platform's own fetch against the app served over real HTTP
 * on 127.0.0.1 (Content-Length set by fetch, SSE read off the socket). The README's example runs
 * as written, with Node (type stripping) in a child process.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { build } from "esbuild";
import { afterAll, beforeAll, expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { createApp } from "../../../lib/app.js";
import * as source from "../../../lib/client/index.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { serveFetch, type Served } from "../../support/serve-fetch.js";

const ADMIN = "bundle-test-admin";
const app = createApp({ storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN }, tools);
const out = mkdtempSync(join(tmpdir(), "toolshed-client-bundle-"));
let server: Served;
let apiKey: string;

beforeAll(async () => {
  server = await serveFetch((req) => app.fetch(req));
  const admin = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  expect((await admin("/v1/admin/tenants", { id: "bundle" })).status).toBe(201);
  apiKey = ((await (await admin("/v1/admin/tenants/bundle/keys", {})).json()) as { key: string }).key;
});
afterAll(async () => {
  await server?.close();
  rmSync(out, { recursive: true, force: true });
});

it("toolshed/client resolves to lib/client/index.ts through package.json exports", async () => {
  const viaPackage = await import("toolshed/client");
  expect(viaPackage.createClient).toBe(source.createClient);
});

it("bundles to one ES module without Node built-ins that works over real HTTP", async () => {
  const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { scripts: Record<string, string> };
  expect(pkg.scripts["client:build"]).toContain("--platform=neutral");
  await build({ entryPoints: ["lib/client/index.ts"], bundle: true, format: "esm", platform: "neutral", target: "es2022", outfile: join(out, "client.js"), logLevel: "error" });
  const code = readFileSync(join(out, "client.js"), "utf8");
  expect(code).not.toMatch(/from\s*["']node:|require\(/);
  const { createClient, ToolshedError } = (await import(pathToFileURL(join(out, "client.js")).href)) as typeof source;

  const ts = createClient({ baseUrl: `${server.url}/`, apiKey });
  await ts.workspaces.create({ id: "net" });
  const up = await ts.files.put("net", "docs/read me.md", "# Title\nneedle here\n");
  expect(up).toMatchObject({ size: 20, created: true });
  expect((await ts.files.get("net", "docs/read me.md")).text()).toBe("# Title\nneedle here\n");
  const r = await ts.tools.call("net", "read", { file_path: "docs/read me.md" }, { session: "a" });
  expect(r.data.total_lines).toBe(2);
  await ts.tools.call("net", "edit", { file_path: "docs/read me.md", old_string: "needle", new_string: "pin" }, { session: "a" });
  const stream = ts.tools.stream("net", "grep", { pattern: "pin", output_mode: "content" });
  let step = await stream.next();
  while (!step.done) step = await stream.next();
  expect(step.value.output).toContain("pin here");
  const e = await ts.tools.call("net", "edit", { file_path: "docs/read me.md", old_string: "absent", new_string: "x" }, { session: "a" }).catch((err: unknown) => err);
  expect(e).toBeInstanceOf(ToolshedError);
  expect(e).toMatchObject({ code: "NO_MATCH", status: 422 });
});

it("runs the README's TypeScript client example as written, with Node", async () => {
  const readme = readFileSync("README.md", "utf8");
  const section = readme.slice(readme.indexOf("### TypeScript client"));
  const example = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  expect(example).toContain('from "toolshed/client"');
  // Inside the repository, so "toolshed/client" resolves through package.json exports as for a user.
  const dir = mkdtempSync(join(process.cwd(), ".client-example-"));
  try {
    writeFileSync(join(dir, "example.ts"), example!);
    const { stdout } = await promisify(execFile)(process.execPath, [join(dir, "example.ts")], { env: { ...process.env, TOOLSHED_URL: server.url, TOOLSHED_KEY: apiKey, NODE_NO_WARNINGS: "1" }, timeout: 20_000 });
    const lines = stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^\S+ 1$/); // etag, total_lines
    expect(stdout).toMatch(/src\/a\.ts\n1:\d+:export const a = 2;/); // grep: path, then line:column:text
    expect(stdout).toContain("NOT_FOUND 404 File not found: src/b.ts. Did you mean: src/a.ts?");
    expect(lines.at(-1)).toBe("export const a = 2;");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

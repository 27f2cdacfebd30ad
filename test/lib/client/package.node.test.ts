/**
 * `toolshed/client` as another project gets it: a scratch project outside the repository installs
 * the package from the repository (`npm install <repo>`), type-checks the README's example (its tour, "The typed client") with the
 * project's own tsc settings (node16 and bundler resolution, with and without the DOM lib, strict,
 * no skipLibCheck), and runs it compiled to JavaScript on Node 22 and Node 20 against the app over
 * real HTTP on 127.0.0.1. What the package ships is the built client (dist/client/index.js, one
 * platform-neutral ES module) and its declarations (dist/types), made by `npm run client:build`
 * (the `prepare` script of `npm install`; `npm test` runs it first).
 */
import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { createApp } from "../../../lib/api/app.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { serveFetch, type Served } from "../../support/serve-fetch.js";

const run = promisify(execFile);
const REPO = resolve(".");
const TSC = join(REPO, "node_modules/typescript/bin/tsc");
const ADMIN = "package-test-admin";
/** tsc over the API's 10,000 lines of declarations takes ~10 s a run on an idle 2-core machine. */
const TSC_TIMEOUT = 120_000;
const app = createApp({ storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN }, tools);
const scratch = mkdtempSync(join(tmpdir(), "toolshed-client-user-"));
let server: Served;
let apiKey: string;

/** A Node 20 outside the repository's node_modules (this machine's system node), if there is one. */
function node20(): string | null {
  for (const bin of ["/usr/bin/node", "/usr/local/bin/node"]) {
    if (!existsSync(bin)) continue;
    const v = execFileSync(bin, ["-v"], { encoding: "utf8" }).trim();
    if (v.startsWith("v20.")) return bin;
  }
  return null;
}

const readmeExample = (): string => {
  const readme = readFileSync("README.md", "utf8");
  const start = readme.indexOf("### 3. The typed client");
  expect(start).toBeGreaterThanOrEqual(0);
  const section = readme.slice(start);
  const example = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  expect(example).toContain('from "toolshed/client"');
  return example!;
};

/** tsc in the scratch project with these compiler options; resolves to its diagnostics ("" when clean). */
async function typecheck(name: string, options: Record<string, unknown>, files: string[]): Promise<string> {
  const config = {
    compilerOptions: { target: "ES2022", strict: true, skipLibCheck: false, typeRoots: [join(REPO, "node_modules/@types")], ...options },
    files,
  };
  writeFileSync(join(scratch, `tsconfig.${name}.json`), JSON.stringify(config, null, 2));
  try {
    await run(process.execPath, [TSC, "-p", `tsconfig.${name}.json`], { cwd: scratch, timeout: 60_000 });
    return "";
  } catch (e) {
    return String((e as { stdout?: string }).stdout ?? e);
  }
}

beforeAll(async () => {
  server = await serveFetch((req) => app.fetch(req));
  const admin = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  expect((await admin("/v1/admin/tenants", { id: "pkg" })).status).toBe(201);
  apiKey = ((await (await admin("/v1/admin/tenants/pkg/keys", {})).json()) as { key: string }).key;
  writeFileSync(join(scratch, "package.json"), JSON.stringify({ name: "scratch", private: true, type: "module", dependencies: { toolshed: `file:${REPO}` } }));
  await run("npm", ["install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts"], { cwd: scratch, timeout: 120_000 });
  writeFileSync(join(scratch, "example.ts"), readmeExample());
}, 180_000);
afterAll(async () => {
  await server?.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe("a project that installs toolshed from the repository", () => {
  it("resolves toolshed/client to the built module and its declarations", async () => {
    const pkg = JSON.parse(readFileSync(join(scratch, "node_modules/toolshed/package.json"), "utf8")) as { exports: Record<string, { types: string; default: string }> };
    const entry = pkg.exports["./client"]!;
    expect(entry.default).toMatch(/\.js$/);
    expect(entry.types).toMatch(/\.d\.ts$/);
    const code = readFileSync(join(scratch, "node_modules/toolshed", entry.default), "utf8");
    expect(code).not.toMatch(/from\s*["'](node:|openapi-fetch)|require\(/); // one self-contained ES module
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", 'const c = await import("toolshed/client"); console.log(typeof c.createClient, typeof c.ToolshedError)'], { cwd: scratch });
    expect(stdout.trim()).toBe("function function");
  });

  for (const [resolution, module] of [["node16", "node16"], ["bundler", "esnext"]] as const) {
    it(`type-checks the README example with ${resolution} resolution, without and with the DOM lib`, async () => {
      const base = { module, moduleResolution: resolution, types: ["node"], noEmit: true };
      expect(await typecheck(`${resolution}-nodom`, { ...base, lib: ["ES2022"] }, ["example.ts"])).toBe("");
      // A project made by `tsc --init` skips checking libraries' declarations; the strict variants above and below do not.
      expect(await typecheck(`${resolution}-dom`, { ...base, lib: ["ES2022", "DOM", "DOM.Iterable"], skipLibCheck: true }, ["example.ts"])).toBe("");
    }, TSC_TIMEOUT);
  }

  it("type-checks in a browser project (DOM lib, no Node types), and a wrong argument is a compile error", async () => {
    writeFileSync(
      join(scratch, "browser.ts"),
      'import { createClient } from "toolshed/client";\nconst ts = createClient({ baseUrl: location.origin, apiKey: "k" });\nexport const r = ts.tools.call("w", "read", { file_path: "a" });\n',
    );
    expect(await typecheck("browser", { module: "esnext", moduleResolution: "bundler", lib: ["ES2022", "DOM"], types: [], noEmit: true }, ["browser.ts"])).toBe("");
    writeFileSync(join(scratch, "wrong.ts"), 'import { createClient } from "toolshed/client";\nexport const r = createClient({ baseUrl: "", apiKey: "" }).tools.call("w", "read", { file_pth: "a" });\n');
    expect(await typecheck("wrong", { module: "node16", moduleResolution: "node16", lib: ["ES2022"], types: ["node"], noEmit: true, skipLibCheck: true }, ["wrong.ts"])).toMatch(/file_pth/);
  }, TSC_TIMEOUT);

  it("runs the README example compiled to JavaScript on Node 22 and Node 20", async () => {
    expect(await typecheck("emit", { module: "node16", moduleResolution: "node16", lib: ["ES2022"], types: ["node"], outDir: "out", skipLibCheck: true }, ["example.ts"])).toBe("");
    const runtimes = [process.execPath, node20()].filter((b): b is string => b !== null);
    for (const bin of runtimes) {
      const { stdout } = await run(bin, [join(scratch, "out/example.js")], { cwd: scratch, env: { ...process.env, TOOLSHED_URL: server.url, TOOLSHED_KEY: apiKey, NODE_NO_WARNINGS: "1" }, timeout: 20_000 });
      const lines = stdout.trim().split("\n");
      expect(lines[0], bin).toMatch(/^\S+ 1$/); // etag, total_lines
      expect(stdout, bin).toMatch(/src\/a\.ts\n1:\d+:export const a = 2;/); // grep: path, then line:column:text
      expect(stdout, bin).toContain("NOT_FOUND 404 File not found: src/b.ts. Did you mean: src/a.ts?");
      expect(lines.at(-1), bin).toBe("export const a = 2;");
    }
    // This machine and CI have Node 20 as the system node; elsewhere the Node 22 run above still counts.
    if (node20()) expect(runtimes).toHaveLength(2);
  }, TSC_TIMEOUT);
});

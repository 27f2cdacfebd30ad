/**
 * The README's tour and the ```sh blocks of docs/ run as pasted, against the stack `npm start` runs
 * (wrangler dev with local R2/KV and the real runner in bubblewrap: test/support/worker-with-runner.ts).
 *
 * The reader: a directory holding what `npm start` leaves beside the repository (`.toolshed-dev.json`
 * with the `dev` tenant's key, `.dev.vars` with the admin token) and the repository's files the blocks
 * name (package.json, scripts/, …). The server's address is the reader's `PORT`: `http://127.0.0.1:8787`
 * in a block becomes the test's (a recording proxy in front of the server, which sees every answer).
 * The README's blocks run in order in one bash (the tour); then each page's blocks, in order, in a
 * fresh bash that starts from the variables the tour set (`B`, `H`, `TOOLSHED_KEY`, …).
 *
 * The rule, per block (test/support/shell-run.ts, `blockFailures`):
 * - no `set -e`, but every command whose status the block does not test itself must succeed (an ERR
 *   trap; `cmd || …`, `cmd && …` and `if cmd` are the block's own checks; with `pipefail`, a curl
 *   failing at the head of a pipe fails too), and bash ends with status 0;
 * - no answer of the server is a Toolshed error (an `"error":{"code":…}` envelope, `"ok":false`, a
 *   failed call of a compat door or MCP: `is_error`, `status: "failed"`, `isError`; any HTTP status
 *   ≥ 400), unless a comment of the block names its code or its status: `# held: 202 NEEDS_APPROVAL`,
 *   `# a second answer: 409 CONFLICT`. Curl's own failure (no server, a bad URL) is a failed command;
 * - a code or status (400 and up) a comment names is one the block was answered: a comment promising
 *   an error is a claim.
 * A block that cannot run here is in SKIPPED, by page and a phrase of it, with the reason.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPassThroughProxy, type PassThroughProxy, type ProxiedAnswer } from "../support/pass-through-proxy.js";
import { answerError, blockFailures, namedCodes, runPage, type PastedBlock } from "../support/shell-run.js";
import { shellBlocks, variablesSet } from "../support/shell-snippets.js";
import { startWorkerWithRunner, type WorkerWithRunner } from "../support/worker-with-runner.js";

/** Blocks that cannot run on this machine: page, a phrase only that block has, why. */
const SKIPPED: { page: string; phrase: string; reason: string }[] = [
  { page: "README.md", phrase: "npm install && npm start", reason: "installs and starts the stack: this test started the same one; npm test is the suite this test is part of" },
  { page: "README.md", phrase: "claude mcp add", reason: "Claude Code's CLI" },
  { page: "README.md", phrase: "pip install ./clients/python", reason: "installs into the reader's Python, its build backend fetched from PyPI; test/clients/python-client.node.test.ts runs the client and the README's Python" },
  { page: "docs/agent-frameworks.md", phrase: "claude mcp add", reason: "Claude Code's CLI" },
  { page: "docs/architecture.md", phrase: "npm run lint:arch", reason: "the repository's own checks, not the API, and 45 s of them (load 7-9): test/architecture.node.test.ts, in npm test, runs the same rules" },
  { page: "docs/deploying-aws.md", phrase: "deploy:aws -- --dry-run", reason: "synthesizes the AWS stack into cdk.out beside the repository (41 s, load 8): test/infra/aws-stack.node.test.ts synthesizes it offline and checks the template" },
  { page: "docs/deploying-aws.md", phrase: "aws-cdk@2 bootstrap", reason: "deploys to an AWS account" },
  { page: "docs/deploying-aws.md", phrase: "docker build", reason: "docker, and a base image from a registry" },
  { page: "docs/deploying-aws.md", phrase: "OutputKey=='ApiUrl'", reason: "a deployed AWS stack" },
  { page: "docs/deploying-aws.md", phrase: "aws sns subscribe", reason: "a deployed AWS stack" },
  { page: "docs/deploying-aws.md", phrase: "aws secretsmanager put-secret-value", reason: "a deployed AWS stack" },
  { page: "docs/mcp-and-providers.md", phrase: "claude mcp add", reason: "Claude Code's CLI" },
  { page: "docs/oauth.md", phrase: "acme.eu.auth0.com", reason: "an authorization server: its metadata is read when the issuer is saved (on npm start a host name is BLOCKED, and the tenant is dev: the page says so)" },
  { page: "docs/python-client.md", phrase: "pip install ./clients/python", reason: "as the README's: installs into the reader's Python from PyPI" },
  { page: "docs/secrets.md", phrase: "wrangler secret put TOOLSHED_SECRETS_KEY", reason: "a Cloudflare account" },
  { page: "docs/ssrf.md", phrase: "wrangler secret put TOOLSHED_WEB_EGRESS", reason: "a Cloudflare account" },
  { page: "docs/subagents.md", phrase: "api.openai.com", reason: "a model provider's endpoint and key (the task runs a model)" },
  { page: "docs/tracing.md", phrase: "jaegertracing/all-in-one", reason: "docker, and an image from a registry" },
  { page: "docs/tracing.md", phrase: "otel/opentelemetry-collector", reason: "docker, and an image from a registry" },
  { page: "docs/tracing.md", phrase: "bench/trace-overhead.ts", reason: "a benchmark (docs/benchmarks.md): measured by hand, never in a test" },
];

/** The repository's files the blocks read, copied into the reader's directory (a link to a directory is what `tar czf - scripts` would pack), and its git directory, linked (`git archive HEAD`). */
const REPOSITORY_FILES = ["package.json", "scripts"];
/** Where `npm start` serves, as the pages write it; the reader's PORT replaces it. */
const NPM_START_URL = "http://127.0.0.1:8787";

const pages = readdirSync("docs").filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`);

function pastedBlocks(page: string): PastedBlock[] {
  return shellBlocks(readFileSync(page, "utf8"))
    .filter((b) => !SKIPPED.some((s) => s.page === page && b.text.includes(s.phrase)))
    .map((b) => ({ label: `${page}:${b.line}`, text: b.text }));
}

describe("the README's tour and the docs' shell blocks, run as pasted", () => {
  let stack: WorkerWithRunner;
  let proxy: PassThroughProxy;
  let reader: string;
  const answers: ProxiedAnswer[] = [];
  const tourVariables = [...new Set(shellBlocks(readFileSync("README.md", "utf8")).flatMap((b) => [...variablesSet(b.text)]))];
  let env: Record<string, string>;
  const tourFile = () => join(reader, "..", "tour.vars");

  beforeAll(async () => {
    stack = await startWorkerWithRunner("docs-shell", { TOOLSHED_SECRETS_KEY: "docs-shell-secrets-key-0123456789abcdef0123456789" });
    proxy = await startPassThroughProxy(stack.worker.url, { onAnswer: (a) => answers.push(a) });
    const admin = (path: string, body: unknown) => fetch(`${stack.worker.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${stack.worker.adminToken}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    // what npm start makes on its first start (scripts/dev.mjs)
    expect((await admin("/v1/admin/tenants", { id: "dev", name: "Local development" })).status).toBe(201);
    const key = ((await (await admin("/v1/admin/tenants/dev/keys", { name: "npm start", scopes: ["read", "write", "execute"] })).json()) as { key: string }).key;
    reader = join(mkdtempSync(join(tmpdir(), "toolshed-docs-shell-")), "reader");
    mkdirSync(reader);
    for (const f of REPOSITORY_FILES) cpSync(f, join(reader, f), { recursive: true });
    if (existsSync(".git")) symlinkSync(resolve(".git"), join(reader, ".git"));
    writeFileSync(join(reader, ".toolshed-dev.json"), JSON.stringify({ tenant: "dev", key }, null, 2));
    writeFileSync(join(reader, ".dev.vars"), `TOOLSHED_ADMIN_TOKEN=${stack.worker.adminToken}\n`);
    env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined && !tourVariables.includes(e[0]) && !e[0].startsWith("TOOLSHED_")));
    env.PATH = `${dirname(process.execPath)}:${resolve("node_modules/.bin")}:${process.env.PATH}`;
  }, 120_000);

  afterAll(async () => {
    await proxy?.close();
    await stack?.stop();
    if (reader) rmSync(dirname(reader), { recursive: true, force: true });
  });

  const run = (blocks: PastedBlock[], prelude: string, epilogue?: string) =>
    runPage({ blocks: blocks.map((b) => ({ ...b, text: b.text.replaceAll(NPM_START_URL, proxy.url) })), prelude, epilogue, cwd: reader, env, proxy: proxy.url, answers, timeoutMs: 60_000 });

  const expectRan = (page: Awaited<ReturnType<typeof run>>) => {
    expect(page.blocks.flatMap(blockFailures), page.stderr).toEqual([]);
    expect(page.status, page.stderr).toBe(0);
  };

  it("README.md: the tour, in one bash", async () => {
    const page = await run(pastedBlocks("README.md"), "", `declare -p ${tourVariables.join(" ")} > ${JSON.stringify(tourFile())}`);
    expectRan(page);
    expect(readFileSync(tourFile(), "utf8")).toMatch(/MANAGE_KEY="tsk_/);
  }, 90_000);

  for (const page of pages) {
    const blocks = pastedBlocks(page);
    if (blocks.length === 0) continue;
    it(`${page}: every shell block, in order, after the tour`, async () => {
      expectRan(await run(blocks, `source ${JSON.stringify(tourFile())}`));
    }, 90_000);
  }

  it("every skipped block is one block of its page", () => {
    for (const s of SKIPPED) expect(shellBlocks(readFileSync(s.page, "utf8")).filter((b) => b.text.includes(s.phrase)).length, `${s.page}: ${s.phrase}`).toBe(1);
  });

  describe("the rule", () => {
    const planted = (text: string): PastedBlock[] => [{ label: "planted:1", text }];

    it("a curl answered with a Toolshed error fails its block, unless a comment names the code", async () => {
      const broken = await run(planted(`curl -s $B/v1/workspaces/no-such-ws/tools/read "\${H[@]}" -d '{"file_path":"a.txt"}'`), `source ${JSON.stringify(tourFile())}`);
      expect(broken.blocks.flatMap(blockFailures)).toEqual([expect.stringMatching(/^planted:1: POST \/v1\/workspaces\/no-such-ws\/tools\/read: NOT_FOUND \(404\)/)]);
      const shown = await run(planted(`# 404 NOT_FOUND: no such workspace\ncurl -s $B/v1/workspaces/no-such-ws/tools/read "\${H[@]}" -d '{"file_path":"a.txt"}'`), `source ${JSON.stringify(tourFile())}`);
      expect(shown.blocks.flatMap(blockFailures)).toEqual([]);
      const promised = await run(planted(`# the 6th: HTTP/1.1 429 with Retry-After\ncurl -s $B/v1/workspaces "\${H[@]}"`), `source ${JSON.stringify(tourFile())}`);
      expect(promised.blocks.flatMap(blockFailures)).toEqual(["planted:1: a comment names 429, which no answer of the block was"]);
    });

    it("curl's own failure and an unchecked failed command fail their block; a checked one does not", async () => {
      const page = await run(planted(`curl -s http://127.0.0.1:1/v1/workspaces\nfalse || echo checked\nfalse | cat\nif false; then :; fi`), "");
      expect(page.blocks.flatMap(blockFailures)).toEqual(["planted:1: line 0: status 7: curl -s http://127.0.0.1:1/v1/workspaces", "planted:1: line 2: status 1: cat"]);
    });

    it("reads an error from an envelope, an event stream, a compat answer and a status; codes from comments only", () => {
      const answer = (status: number, contentType: string, body: string): ProxiedAnswer => ({ method: "POST", path: "/x", status, contentType, body });
      expect(answerError(answer(202, "application/json", '{"ok":false,"tool":"bash","error":{"code":"NEEDS_APPROVAL"}}'))).toBe("NEEDS_APPROVAL");
      expect(answerError(answer(200, "text/event-stream", 'event: result\ndata: {"ok":false,"error":{"code":"TIMEOUT"}}\n\n'))).toBe("TIMEOUT");
      expect(answerError(answer(200, "application/json", '{"type":"tool_result","is_error":true}'))).toBe("is_error");
      expect(answerError(answer(200, "application/json", '{"type":"tool_result","content":[],"is_error":false}'))).toBe("tool_result without tool_use_id");
      expect(answerError(answer(200, "application/json", '{"type":"tool_result","tool_use_id":"toolu_1","content":[],"is_error":false}'))).toBeNull();
      expect(answerError(answer(200, "application/json", '{"type":"apply_patch_call_output","status":"failed","output":"…"}'))).toBe("is_error");
      expect(answerError(answer(200, "application/json", '{"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[]}}'))).toBe("is_error");
      expect(answerError(answer(200, "application/json", '{"jsonrpc":"2.0","id":1,"error":{"code":-32602}}'))).toBe("-32602");
      expect(answerError(answer(502, "text/plain", "bad gateway"))).toBe("HTTP 502");
      expect(answerError(answer(200, "application/octet-stream", '{"ok":false}'))).toBeNull();
      expect([...namedCodes(`curl -d '{"x":"NOT_FOUND"}' # 409 CONFLICT, then\n# held: 202 NEEDS_APPROVAL, at most 200`)].sort()).toEqual(["409", "CONFLICT", "NEEDS_APPROVAL"]);
    });
  });
});

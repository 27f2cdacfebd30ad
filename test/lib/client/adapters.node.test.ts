/**
 * toolshed/ai-sdk and toolshed/openai-agents driven by each framework's own scripted model through
 * an edit-and-test loop against the real local server (wrangler dev, bash on the local runner):
 * run the failing test → edit before reading (NOT_READ reaches the model as text) → read → edit →
 * run the test again, which passes. The file changed in the workspace, and each tool result the
 * model was sent is asserted. docs/agent-frameworks.md's JS examples run here too, as the built
 * package (`toolshed/ai-sdk` resolves to dist/ through package.json "exports"; `npm test` builds it
 * first), with the scripted model in place of the provider's.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { transform } from "esbuild";
import { afterAll, beforeAll, expect, it } from "vitest";
import { generateText, isStepCount, streamText } from "ai";
import { convertArrayToReadableStream, MockLanguageModelV4 } from "ai/test";
import { Agent, run, setTracingDisabled } from "@openai/agents";
import { startLocalInvokeServer, type LocalInvokeServer } from "../../../infra/container/local-server.js";
import { RUNNER_SECRET } from "../../infra/container/helpers.js";
import { freePort, setupTenant, startWorker, type WorkerProcess } from "../../support/wrangler-dev.js";
import { agentToolResults, aiSdkToolResults, scriptedAgentModel, scriptedAiSdkModel } from "../../support/scripted-models.js";
import { createClient } from "../../../lib/client/index.js";
import { toolshedTools, type ToolshedToolOutput } from "../../../lib/client/adapters/ai-sdk.js";
import { toolshedAgentTools } from "../../../lib/client/adapters/openai-agents.js";

let w: WorkerProcess;
let runner: LocalInvokeServer;
let root: string;
/** Where the docs' examples are written to run: inside the repository, so "toolshed/…" and the frameworks resolve (gitignored). */
const EXAMPLES = resolve(".client-example-adapters");

beforeAll(async () => {
  setTracingDisabled(true);
  root = mkdtempSync(join(tmpdir(), "toolshed-adapters-"));
  chmodSync(root, 0o711);
  runner = await startLocalInvokeServer({ root, port: await freePort(), secret: RUNNER_SECRET });
  const port = await freePort();
  w = await startWorker({
    port,
    vars: { TOOLSHED_SYNC_SECRET: "adapters-test-secret-0123456789ab", TOOLSHED_RUNNER_SECRET: RUNNER_SECRET, TOOLSHED_RUNNER_URL: runner.url, TOOLSHED_PUBLIC_URL: `http://127.0.0.1:${port}` },
  });
}, 120_000);

afterAll(async () => {
  await w?.stop();
  await runner?.close();
  if (root) rmSync(root, { recursive: true, force: true });
  rmSync(EXAMPLES, { recursive: true, force: true });
});

/** A workspace (`ws`) with a failing test: add() subtracts. */
async function failingProject(tenant: string, ws = "main") {
  const t = await setupTenant(w, tenant, ws);
  await t.call("write", { file_path: "calc.py", content: "def add(a, b):\n    return a - b\n" });
  await t.call("write", { file_path: "test_calc.py", content: 'from calc import add\nassert add(2, 3) == 5, "add(2, 3) should be 5"\nprint("tests passed")\n' });
  const client = createClient({ baseUrl: w.url, apiKey: t.key });
  return { ...t, calc: async () => (await client.files.get(ws, "calc.py")).text() };
}
const FIXED = "def add(a, b):\n    return a + b\n";

/** The loop every model follows: run the test, edit before reading, read, edit, run the test. */
const LOOP = [
  ["bash", { command: "python3 test_calc.py" }],
  ["edit", { file_path: "calc.py", old_string: "a - b", new_string: "a + b" }],
  ["read", { file_path: "calc.py" }],
  ["edit", { file_path: "calc.py", old_string: "a - b", new_string: "a + b" }],
  ["bash", { command: "python3 test_calc.py" }],
] as const;

/** What the model must have been sent after each step of LOOP. `errorPrefix`: how the door writes an error (MCP: "CODE: message"). */
function expectLoopResults(texts: string[], errorPrefix = "Error NOT_READ: ") {
  expect(texts).toHaveLength(5);
  expect(texts[0]).toContain("add(2, 3) should be 5");
  expect(texts[1]).toContain(errorPrefix);
  expect(texts[1]).toContain("Read it with the read tool first");
  expect(texts[2]).toContain("return a - b");
  expect(texts[3]).not.toContain("NOT_READ");
  expect(texts[4]).toContain("tests passed");
}

/** The docs' JS examples, with the provider's model replaced by `scriptedModel` (declared as `declaration` for the type check). */
const DOC_EXAMPLES = [
  { heading: "## Vercel AI SDK", n: 0, replace: [['import { openai } from "@ai-sdk/openai"; // any AI SDK provider\n', ""], ['openai("gpt-5.1")', "scriptedModel"]], declaration: 'import type { LanguageModel } from "ai";\ndeclare const scriptedModel: LanguageModel;' },
  { heading: "## OpenAI Agents SDK (JS)", n: 0, replace: [['model: "gpt-5.1"', "model: scriptedModel"]], declaration: 'import type { Model } from "@openai/agents";\ndeclare const scriptedModel: Model;' },
  { heading: "## OpenAI Agents SDK (JS)", n: 1, replace: [['model: "gpt-5.1"', "model: scriptedModel"]], declaration: 'import type { Model } from "@openai/agents";\ndeclare const scriptedModel: Model;' },
] as const;

/** Example `i` of DOC_EXAMPLES: the `n`th ts block after its heading in docs/agent-frameworks.md, with its replacements (each must be found). */
function docExample(i: number): string {
  const { heading, n, replace } = DOC_EXAMPLES[i]!;
  const doc = readFileSync("docs/agent-frameworks.md", "utf8");
  const at = doc.indexOf(heading);
  expect(at, heading).toBeGreaterThanOrEqual(0);
  let code = [...doc.slice(at).matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!)[n]!;
  for (const [from, to] of replace) {
    expect(code, `the example has ${from}`).toContain(from);
    code = code.replace(from, to);
  }
  return code;
}

/** Runs example `i` as an ES module with `env` and `scriptedModel` set; resolves to what it logged. */
async function runDocExample(i: number, scriptedModel: unknown, env: Record<string, string>) {
  const js = (await transform(docExample(i), { loader: "ts", format: "esm", target: "es2022" })).code;
  mkdirSync(EXAMPLES, { recursive: true });
  const file = join(EXAMPLES, `example-${i}-${Date.now()}.mjs`);
  writeFileSync(file, js);
  Object.assign(process.env, env);
  (globalThis as { scriptedModel?: unknown }).scriptedModel = scriptedModel;
  const logs: unknown[] = [];
  const log = console.log;
  console.log = (...a: unknown[]) => void logs.push(a.join(" "));
  try {
    await import(pathToFileURL(file).href);
  } finally {
    console.log = log;
    delete (globalThis as { scriptedModel?: unknown }).scriptedModel;
  }
  return logs;
}

it("toolshed/ai-sdk: generateText with MockLanguageModelV4 fixes the test; the NOT_READ error reaches the model as error-text", async () => {
  const t = await failingProject("aisdk");
  const tools = await toolshedTools({ baseUrl: w.url, apiKey: t.key, workspace: "main", sessionId: "agent-1", tools: ["read", "edit", "bash"] });
  expect(Object.keys(tools)).toEqual(["read", "edit", "bash"]);
  const prompts: unknown[][] = [];
  const r = await generateText({ model: scriptedAiSdkModel(LOOP, prompts), tools, stopWhen: isStepCount(10), prompt: "Make test_calc.py pass." });
  expect(r.text).toBe("fixed");
  expect(r.steps).toHaveLength(6);
  const sent = aiSdkToolResults(prompts);
  expect(sent.map((o) => o.type)).toEqual(["text", "error-text", "text", "text", "text"]);
  expectLoopResults(sent.map((o) => o.value));
  expect(await t.calc()).toBe(FIXED);
}, 180_000);

it("toolshed/ai-sdk: streamText emits a bash call's progress as preliminary tool results before its outcome; an unknown name in options.tools is refused", async () => {
  const t = await failingProject("aisdkprog");
  const tools = await toolshedTools({ baseUrl: w.url, apiKey: t.key, workspace: "main", tools: ["bash"] });
  const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
  const model = new MockLanguageModelV4({
    doStream: async () => ({
      stream: convertArrayToReadableStream([
        { type: "stream-start", warnings: [] },
        { type: "tool-call", toolCallId: "p1", toolName: "bash", input: JSON.stringify({ command: "echo first; sleep 1; echo second" }) },
        { type: "finish", finishReason: { unified: "tool-calls", raw: undefined }, usage },
      ] as never[]),
    }),
  });
  const result = streamText({ model, tools, stopWhen: isStepCount(1), prompt: "Run it." });
  const parts: { preliminary?: boolean; output: ToolshedToolOutput }[] = [];
  for await (const part of result.fullStream) if (part.type === "tool-result") parts.push(part as never);
  const preliminary = parts.filter((p) => p.preliminary).map((p) => p.output);
  expect(preliminary.some((o) => "status" in o && o.status === "running" && o.output.includes("first"))).toBe(true);
  const seen = parts.map((p) => p.output);
  const last = seen.at(-1)!;
  expect(parts.at(-1)!.preliminary).toBeFalsy();
  expect(last).toMatchObject({ ok: true, tool: "bash" });
  expect((last as { output: string }).output).toContain("first\nsecond");
  const running = seen.filter((o) => "status" in o);
  expect(running.length).toBeGreaterThan(0);
  expect(running[0]).toMatchObject({ status: "running", tool: "bash" });
  await expect(toolshedTools({ baseUrl: w.url, apiKey: t.key, workspace: "main", tools: ["bsah"] })).rejects.toMatchObject({ code: "NOT_FOUND", message: expect.stringContaining("'bsah'") });
}, 120_000);

it("toolshed/openai-agents: run() with a scripted Model fixes the test; the NOT_READ error is the tool's output text", async () => {
  const t = await failingProject("agents");
  const tools = await toolshedAgentTools({ baseUrl: w.url, apiKey: t.key, workspace: "main", sessionId: "agent-1", tools: ["read", "edit", "bash"] });
  expect(tools.map((x) => [x.name, x.strict])).toEqual([["read", true], ["edit", true], ["bash", true]]);
  const inputs: unknown[] = [];
  const agent = new Agent({ name: "fixer", instructions: "Fix the failing test.", model: scriptedAgentModel(LOOP, inputs), tools });
  const result = await run(agent, "Make test_calc.py pass.", { maxTurns: 10 });
  expect(result.finalOutput).toBe("fixed");
  expectLoopResults(agentToolResults(inputs));
  expect(await t.calc()).toBe(FIXED);
}, 180_000);

it("docs/agent-frameworks.md: the Vercel AI SDK example runs (built toolshed/ai-sdk, scripted model)", async () => {
  const t = await failingProject("docaisdk", "demo");
  const prompts: unknown[][] = [];
  const logs = await runDocExample(0, scriptedAiSdkModel(LOOP, prompts), { TOOLSHED_URL: w.url, TOOLSHED_KEY: t.key });
  expect(logs).toEqual(["fixed"]);
  expectLoopResults(aiSdkToolResults(prompts).map((o) => o.value));
  expect(await t.calc()).toBe(FIXED);
}, 180_000);

it("docs/agent-frameworks.md: the OpenAI Agents SDK examples run, function tools and the MCP door (scripted Model)", async () => {
  const t = await failingProject("docagents", "demo");
  const inputs: unknown[] = [];
  expect(await runDocExample(1, scriptedAgentModel(LOOP, inputs), { TOOLSHED_URL: w.url, TOOLSHED_KEY: t.key })).toEqual(["fixed"]);
  expectLoopResults(agentToolResults(inputs));
  expect(await t.calc()).toBe(FIXED);

  const m = await failingProject("docagentsmcp", "demo");
  const mcpInputs: unknown[] = [];
  expect(await runDocExample(2, scriptedAgentModel(LOOP, mcpInputs), { TOOLSHED_URL: w.url, TOOLSHED_KEY: m.key })).toEqual(["fixed"]);
  expectLoopResults(agentToolResults(mcpInputs), "NOT_READ: ");
  expect(await m.calc()).toBe(FIXED);
}, 180_000);

it("docs/agent-frameworks.md: the JS examples type-check against the built declarations (node16 resolution, strict)", async () => {
  mkdirSync(EXAMPLES, { recursive: true });
  const files = DOC_EXAMPLES.map((e, i) => {
    const file = `typed-${i}.ts`;
    writeFileSync(join(EXAMPLES, file), `${e.declaration}\n${docExample(i)}\nexport {};\n`);
    return file;
  });
  // skipLibCheck: the frameworks' own declarations need types we do not install (ai's json-schema); ours are checked through their use.
  writeFileSync(join(EXAMPLES, "tsconfig.json"), JSON.stringify({ compilerOptions: { target: "ES2022", module: "node16", moduleResolution: "node16", strict: true, skipLibCheck: true, noEmit: true, types: ["node"] }, files }));
  const r = spawnSync(process.execPath, [resolve("node_modules/typescript/bin/tsc"), "-p", EXAMPLES], { encoding: "utf8", timeout: 120_000 });
  expect(r.stdout + r.stderr).toBe("");
  expect(r.status).toBe(0);
}, 180_000);

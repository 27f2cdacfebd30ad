/**
 * toolshed/ai-sdk and toolshed/openai-agents driven by each framework's own scripted model through
 * an edit-and-test loop against the real local server (wrangler dev, bash on the local runner):
 * run the failing test → edit before reading (NOT_READ reaches the model as text) → read → edit →
 * run the test again, which passes. The file changed in the workspace, and each tool result the
 * model was sent is asserted.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { generateText, isStepCount } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { Agent, run, setTracingDisabled, Usage, type Model, type ModelRequest, type ModelResponse } from "@openai/agents";
import { startLocalInvokeServer, type LocalInvokeServer } from "../../../infra/container/local-server.js";
import { RUNNER_SECRET } from "../../infra/container/helpers.js";
import { freePort, setupTenant, startWorker, type WorkerProcess } from "../../support/wrangler-dev.js";
import { createClient } from "../../../lib/client/index.js";
import { toolshedTools, type ToolshedToolOutput } from "../../../lib/client/adapters/ai-sdk.js";
import { toolshedAgentTools } from "../../../lib/client/adapters/openai-agents.js";

let w: WorkerProcess;
let runner: LocalInvokeServer;
let root: string;

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
});

/** A workspace with a failing test: add() subtracts. */
async function failingProject(tenant: string) {
  const t = await setupTenant(w, tenant);
  await t.call("write", { file_path: "calc.py", content: "def add(a, b):\n    return a - b\n" });
  await t.call("write", { file_path: "test_calc.py", content: 'from calc import add\nassert add(2, 3) == 5, "add(2, 3) should be 5"\nprint("tests passed")\n' });
  return { ...t, client: createClient({ baseUrl: w.url, apiKey: t.key }) };
}

/** The loop both models follow: [tool, arguments] per step, then a final answer. */
const LOOP: [string, Record<string, unknown>][] = [
  ["bash", { command: "python3 test_calc.py" }],
  ["edit", { file_path: "calc.py", old_string: "a - b", new_string: "a + b" }],
  ["read", { file_path: "calc.py" }],
  ["edit", { file_path: "calc.py", old_string: "a - b", new_string: "a + b" }],
  ["bash", { command: "python3 test_calc.py" }],
];

/** What the model must have been sent after each step of LOOP. */
function expectLoopResults(texts: string[]) {
  expect(texts).toHaveLength(5);
  expect(texts[0]).toContain("add(2, 3) should be 5");
  expect(texts[1]).toMatch(/^Error NOT_READ: /);
  expect(texts[2]).toContain("return a - b");
  expect(texts[3]).not.toMatch(/^Error/);
  expect(texts[4]).toContain("tests passed");
}

it("toolshed/ai-sdk: generateText with MockLanguageModelV4 fixes the test; the NOT_READ error reaches the model as error-text", async () => {
  const t = await failingProject("aisdk");
  const tools = await toolshedTools({ baseUrl: w.url, apiKey: t.key, workspace: "main", sessionId: "agent-1", tools: ["read", "edit", "bash"] });
  expect(Object.keys(tools)).toEqual(["read", "edit", "bash"]);
  const prompts: unknown[][] = [];
  let step = 0;
  const model = new MockLanguageModelV4({
    doGenerate: async (options) => {
      prompts.push(options.prompt as unknown[]);
      const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
      const next = LOOP[step++];
      if (!next) return { content: [{ type: "text", text: "fixed" }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] };
      return { content: [{ type: "tool-call", toolCallId: `c${step}`, toolName: next[0], input: JSON.stringify(next[1]) }], finishReason: { unified: "tool-calls", raw: undefined }, usage, warnings: [] };
    },
  });
  const r = await generateText({ model, tools, stopWhen: isStepCount(10), prompt: "Make test_calc.py pass." });
  expect(r.text).toBe("fixed");
  expect(r.steps).toHaveLength(6);
  // What the model was sent: each step's tool result, as the next call's last prompt message.
  const sent = prompts.slice(1).map((p) => (p.at(-1) as { role: string; content: { type: string; output: { type: string; value: string } }[] }));
  expect(sent.every((m) => m.role === "tool")).toBe(true);
  const outputs = sent.map((m) => m.content.find((c) => c.type === "tool-result")!.output);
  expect(outputs.map((o) => o.type)).toEqual(["text", "error-text", "text", "text", "text"]);
  expectLoopResults(outputs.map((o) => o.value));
  expect((await t.client.files.get("main", "calc.py")).text()).toBe("def add(a, b):\n    return a + b\n");
}, 180_000);

it("toolshed/ai-sdk: a streamed bash call yields progress (preliminary results) before its outcome", async () => {
  const t = await failingProject("aisdkprog");
  const tools = await toolshedTools({ baseUrl: w.url, apiKey: t.key, workspace: "main", tools: ["bash"] });
  const seen: ToolshedToolOutput[] = [];
  const results = tools.bash!.execute!({ command: "echo first; sleep 1; echo second" }, { toolCallId: "p1", messages: [], context: {} });
  for await (const o of results as AsyncIterable<ToolshedToolOutput>) seen.push(o);
  const last = seen.at(-1)!;
  expect(last).toMatchObject({ ok: true, tool: "bash" });
  expect((last as { output: string }).output).toContain("first\nsecond");
  const running = seen.filter((o) => "status" in o);
  expect(running.length).toBeGreaterThan(0);
  expect(running[0]).toMatchObject({ status: "running", tool: "bash" });
}, 120_000);

/** An Agents SDK Model that plays LOOP as Responses-style function calls and records what it was sent. */
function scriptedAgentModel(requests: ModelRequest[]): Model {
  let step = 0;
  return {
    async getResponse(request: ModelRequest): Promise<ModelResponse> {
      requests.push(structuredClone(request.input) as never);
      const next = LOOP[step++];
      if (!next) return { usage: new Usage(), output: [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "fixed" }] }] };
      return { usage: new Usage(), output: [{ type: "function_call", callId: `c${step}`, name: next[0], arguments: JSON.stringify(next[1]), status: "completed" }] };
    },
    // eslint-disable-next-line require-yield
    async *getStreamedResponse() {
      throw new Error("the scripted model only answers getResponse");
    },
  };
}

it("toolshed/openai-agents: run() with a scripted Model fixes the test; the NOT_READ error is the tool's output text", async () => {
  const t = await failingProject("agents");
  const tools = await toolshedAgentTools({ baseUrl: w.url, apiKey: t.key, workspace: "main", sessionId: "agent-1", tools: ["read", "edit", "bash"] });
  expect(tools.map((x) => [x.name, x.strict])).toEqual([["read", true], ["edit", true], ["bash", true]]);
  const inputs: ModelRequest[] = [];
  const agent = new Agent({ name: "fixer", instructions: "Fix the failing test.", model: scriptedAgentModel(inputs), tools });
  const result = await run(agent, "Make test_calc.py pass.", { maxTurns: 10 });
  expect(result.finalOutput).toBe("fixed");
  const calls = result.newItems.filter((i) => i.type === "tool_call_output_item").map((i) => (i as unknown as { output: unknown }).output);
  const texts = calls.map((o) => (typeof o === "string" ? o : (o as { text: string }).text));
  expectLoopResults(texts);
  // The model was sent the same texts: the last request's input holds every function_call_result.
  const lastInput = JSON.stringify(inputs.at(-1));
  expect(lastInput).toContain("Error NOT_READ: ");
  expect(lastInput).toContain("tests passed");
  expect((await t.client.files.get("main", "calc.py")).text()).toBe("def add(a, b):\n    return a + b\n");
}, 180_000);

/**
 * The lines that tell the model what a call did beyond its plain answer reach the text the model reads
 * through every door, not only the HTTP tool route (invariant 11: never only in a data field): bash's
 * write-back lines (lib/exec/write-back-notes.ts) through Anthropic's bash, OpenAI's shell and a
 * subagent's tool messages; a stopped run's discarded changes through bash_output and OpenAI's shell;
 * read's closing notes through a subagent's tool messages (cut in the middle, never at the head).
 * The real sandbox (local executor), and a scripted chat-completions model on 127.0.0.1 for the subagent.
 * The same lines through MCP: test/functions/bash-tree-notes.node.test.ts; the file tools' lines
 * through MCP and the compat routes in workerd: model-lines.test.ts.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { localExecutor } from "../../../infra/container/local-executor.js";
import { createApp } from "../../../lib/api/app.js";
import type { AppDeps } from "../../../lib/api/deps.js";
import { httpSyncClient } from "../../../lib/sync/http.js";
import { httpRunRecords } from "../../../lib/sync/runs.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { checkOutputs } from "../../support/output-check.js";
import { compat, textOf } from "../api/routes/compat-helpers.js";

const ADMIN = "admin-token-for-tests";

let app: ReturnType<typeof createApp>;
let executor: ReturnType<typeof localExecutor>;
let root: string;
let key: string;
let tenant: string;
const t = { ws: "main", req: async (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string>) } }) };
const call = async (tool: string, args: unknown): Promise<any> => {
  const res = await t.req(`/v1/workspaces/main/tools/${tool}`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify(args) });
  const body = (await res.json()) as any;
  expect(res.status, JSON.stringify(body).slice(0, 600)).toBe(200);
  return body;
};
const admin = async (path: string, body: unknown, method = "POST") => (await app.request(path, { method, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json() as Promise<any>;

/** The scripted model: each request's messages are kept; `script` answers the n-th request. */
let script: (n: number) => unknown = () => answer("done");
const seen: { messages: { role: string; content: string | null }[] }[] = [];
let server: Server;
const answer = (content: string) => ({ choices: [{ message: { role: "assistant", content } }], usage: { prompt_tokens: 1, completion_tokens: 1 } });
const toolCall = (name: string, args: unknown) => ({ choices: [{ message: { role: "assistant", content: null, tool_calls: [{ id: "call_0", type: "function", function: { name, arguments: JSON.stringify(args) } }] } }], usage: { prompt_tokens: 1, completion_tokens: 1 } });
async function bodyOf(req: IncomingMessage): Promise<string> {
  let s = "";
  for await (const chunk of req) s += chunk;
  return s;
}
/** What the subagent's model was handed as the result of its one tool call. */
async function subagentSees(name: string, args: unknown): Promise<string> {
  seen.length = 0;
  script = (n) => (n === 0 ? toolCall(name, args) : answer("done"));
  await call("task", { prompt: "do it" });
  const tool = seen[1]!.messages.find((m) => m.role === "tool");
  return tool!.content!;
}

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const parsed = JSON.parse(await bodyOf(req));
    seen.push({ messages: parsed.messages });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(script(seen.length - 1)));
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  root = mkdtempSync(join(tmpdir(), "toolshed-model-lines-"));
  chmodSync(root, 0o711);
  const viaApp = ((u: string, i: RequestInit) => app.request(u, i)) as typeof fetch;
  executor = localExecutor({ root, syncClient: (req) => httpSyncClient({ ...req.sync, fetch: viaApp }), runRecords: (req) => httpRunRecords({ ...req.sync, fetch: viaApp }) });
  const deps = { storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, executor, syncSecret: "sync-secret-for-tests-0123456789", syncUrl: "http://toolshed.internal", webFetch: { allowLoopback: true } } as AppDeps;
  app = checkOutputs(createApp(deps, tools), tools);
  tenant = "acme";
  await admin("/v1/admin/tenants", { id: tenant });
  // No approval gate: these tests are about what the model reads of calls that ran.
  await admin(`/v1/admin/tenants/${tenant}/policy`, { gate: [] }, "PUT");
  key = (await admin(`/v1/admin/tenants/${tenant}/keys`, {})).key;
  await admin(`/v1/admin/tenants/${tenant}/model`, { base_url: `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`, api_key: "sk-test-model-key-0123", model: "scripted-1" }, "PUT");
  expect((await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "main" }) })).status).toBe(201);
});

afterAll(async () => {
  await executor.handler.close();
  rmSync(root, { recursive: true, force: true });
  await new Promise<void>((ok) => server.close(() => ok()));
});

describe("bash's write-back lines reach the model by every door", () => {
  it("Anthropic's bash: in the tool_result's text, after the command's output", async () => {
    const r = await compat(t, "anthropic", "bash", { command: "echo out && ln -s a an1 && mkdir an1dir" });
    expect(textOf(r)).toBe("out\n\n[symlinks made or repointed: an1]\n[empty directories kept: an1dir/]");
  });

  it("OpenAI's shell: after the command's stderr (its stdout stays the program's own); an ordinary command's streams are its own", async () => {
    const r = await compat(t, "openai", "shell", { type: "shell_call", call_id: "c1", action: { commands: ["echo out && echo err >&2 && ln -s a op1 && mkdir op1dir", "echo plain"] } });
    const [made, plain] = r.body.output;
    expect(made.stdout).toBe("out\n");
    // bash's own lines (its data.notes), as its HTTP output has them.
    expect(made.stderr).toBe("err\n[symlinks made or repointed: op1]\n[empty directories kept: op1dir/]\n");
    expect(made.outcome).toEqual({ type: "exit", exit_code: 0 });
    expect(plain).toEqual({ stdout: "plain\n", stderr: "", outcome: { type: "exit", exit_code: 0 } });
  });

  it("OpenAI's shell: a removed symlink has bash's own line, not the line of made, repointed or removed ones", async () => {
    const r = await compat(t, "openai", "shell", { commands: ["ln -s a op2", "rm op2 && ln -sfn b op1"] });
    const [, removed] = r.body.output;
    expect(removed.stderr).toBe("[symlinks made or repointed: op1]\n[symlinks removed: op2]\n");
    const http = await call("bash", { command: "ln -s c op3 && rm op3 && true" });
    expect(http.data.notes ?? "").toBe("");
  });

  it("OpenAI's shell: a command stopped by its timeout names the changes it made, which are not in the workspace", async () => {
    const r = await compat(t, "openai", "shell", { commands: ["touch slow.txt && sleep 30"], timeout_ms: 1000 });
    const [entry] = r.body.output;
    expect(entry.outcome).toEqual({ type: "timeout" });
    expect(entry.stderr).toContain("[not written back: the command timed out before it ended, so its change (slow.txt) is NOT in the workspace. Run it again with a larger timeout_ms.]");
    expect((await t.req("/v1/workspaces/main/files/slow.txt")).status).toBe(404);
  });

  it("a subagent: in its tool message, as the HTTP route answers", async () => {
    const content = await subagentSees("bash", { command: "ln -s a sub1 && mkdir sub1dir" });
    expect(content).toBe("(no output)\n[symlinks made or repointed: sub1]\n[empty directories kept: sub1dir/]");
  });
});

describe("a background run stopped before it ended: bash_output names what it discarded", () => {
  it("killed: its change is named as not written back; the file is not in the workspace", async () => {
    const started = await call("bash", { command: "touch killed.txt && echo ready && sleep 60", run_in_background: true });
    const id = started.data.task_id as string;
    // Killed once the file is made: its "ready" is in the output (each poll waits up to 1 s for the task's end, which never comes before the kill).
    let seenSoFar = "";
    for (let i = 0; i < 30 && !seenSoFar.includes("ready"); i++) seenSoFar += (await call("bash_output", { task_id: id, wait: true, timeout: 1 })).output;
    expect(seenSoFar).toContain("ready");
    await call("kill_shell", { task_id: id });
    const r = await call("bash_output", { task_id: id, wait: true, timeout: 30 });
    expect(r.data.status).toBe("killed");
    expect(r.output).toContain("[not written back: the command was killed before it ended, so its change (killed.txt) is NOT in the workspace. Run it again to make them.]");
    expect((await t.req("/v1/workspaces/main/files/killed.txt")).status).toBe(404);
  });

  it("a run that ends is as before: no such line", async () => {
    const started = await call("bash", { command: "touch done.txt", run_in_background: true });
    const r = await call("bash_output", { task_id: started.data.task_id, wait: true, timeout: 30 });
    expect(r.data.status).toBe("completed");
    expect(r.output).not.toContain("not written back");
  });
});

describe("read's closing notes reach a subagent's model whole", () => {
  it("a page over the subagent's 30,000-byte cut keeps its end: the note on where to continue and the cut-line note", async () => {
    const long = "y".repeat(2500);
    const lines = Array.from({ length: 2000 }, (_, i) => (i === 3 ? long : `line ${i + 1} ${"x".repeat(40)}`));
    await call("write", { file_path: "big.txt", content: `${lines.join("\n")}\n` });
    const content = await subagentSees("read", { file_path: "big.txt" });
    expect(content.length).toBeLessThan(32_000);
    expect(content).toMatch(/\n\[Showing lines 1-\d+(?: of 2000)? \(output reached 50 KB\)\. Call read with offset=\d+ to continue\.\]\n\[1 line longer than 2000 characters was cut \(the first: line 4\)/);
    expect(content).toMatch(/output cut: [\d,]+ of [\d,]+ bytes omitted/); // the middle cut says what it left out
    expect(content.startsWith("     1\tline 1 ")).toBe(true);
  });
});

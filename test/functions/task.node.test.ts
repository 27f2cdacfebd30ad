/**
 * task / task_output through the HTTP API, in Node, against a stand-in chat-completions server on
 * 127.0.0.1 that plays a scripted model. The app allows loopback through the test-only switch.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../functions/index.js";
import { createApp } from "../../lib/api/app.js";
import type { AppDeps } from "../../lib/api/deps.js";
import { memoryDriver } from "../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../lib/storage/kv-over-storage.js";
import type { UsageRecord } from "../../lib/run/metering/record.js";
import { checkOutputs } from "../support/output-check.js";
import { readEvents, statusEvents } from "../support/sse-events.js";

const ADMIN = "admin-task-test";
const KEY = "sk-test-SECRET-model-key-9f3a";

type Reply = { status?: number; delayMs?: number; body: unknown };
type Script = (req: { messages: any[]; tools: any[]; model: string; auth: string | undefined }) => Reply;
let script: Script = () => ({ body: answer("nothing scripted") });
const seen: { messages: any[]; tools: any[]; model: string; auth: string | undefined }[] = [];
let server: Server;
let baseUrl = "";

const answer = (content: string, usage = { prompt_tokens: 10, completion_tokens: 5 }) => ({ choices: [{ message: { role: "assistant", content } }], usage });
const calls = (...c: { name: string; args: unknown | string }[]) => ({
  choices: [{ message: { role: "assistant", content: null, tool_calls: c.map((x, i) => ({ id: `call_${i}`, type: "function", function: { name: x.name, arguments: typeof x.args === "string" ? x.args : JSON.stringify(x.args) } })) } }],
  usage: { prompt_tokens: 10, completion_tokens: 5 },
});

async function body(req: IncomingMessage): Promise<string> {
  let s = "";
  for await (const chunk of req) s += chunk;
  return s;
}

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const parsed = JSON.parse(await body(req));
    const r = { messages: parsed.messages, tools: parsed.tools, model: parsed.model, auth: req.headers.authorization };
    seen.push(r);
    const reply = script(r);
    if (reply.delayMs) await new Promise((ok) => setTimeout(ok, reply.delayMs));
    if (res.destroyed) return;
    res.writeHead(reply.status ?? 200, { "content-type": "application/json" });
    res.end(typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body));
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
});
afterAll(() => new Promise<void>((ok) => server.close(() => ok())));

const texts: string[] = [];
/** Every usage record the app wrote. */
const usage: UsageRecord[] = [];
/** Every look at a background subagent's stop flag (a HEAD of its key), by key. */
const stopChecks: string[] = [];
function app() {
  const files = memoryDriver();
  const storage = { ...files, head: (k: string) => (k.endsWith(".stop.json") && stopChecks.push(k), files.head(k)) };
  const deps: AppDeps = { storage, kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, webFetch: { allowLoopback: true }, onUsage: (u) => void usage.push(u) };
  return checkOutputs(createApp(deps, tools), tools);
}
const a = app();
const adm = async (path: string, b?: unknown, method = "POST") => {
  const res = await a.request(path, { method, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, ...(b === undefined ? {} : { body: JSON.stringify(b) }) });
  const text = await res.text();
  texts.push(text);
  return { status: res.status, body: JSON.parse(text) as any };
};

async function tenant(scopes = ["read", "write", "execute"]) {
  const id = `t${Math.random().toString(36).slice(2, 10)}`;
  await adm("/v1/admin/tenants", { id });
  const key = (await adm(`/v1/admin/tenants/${id}/keys`, { scopes })).body.key as string;
  const ws = await a.request("/v1/workspaces", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ id: "main" }) });
  expect(ws.status).toBe(201);
  const call = async (tool: string, args: unknown) => {
    const res = await a.request(`/v1/workspaces/main/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(args) });
    const text = await res.text();
    texts.push(text);
    return { status: res.status, body: JSON.parse(text) as any };
  };
  /** The call with Accept: text/event-stream: its events (progress, then the result). */
  const stream = async (tool: string, args: unknown) => {
    const res = await a.request(`/v1/workspaces/main/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "text/event-stream" }, body: JSON.stringify(args) });
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    return readEvents(res);
  };
  const model = (cfg: Record<string, unknown> = {}) => adm(`/v1/admin/tenants/${id}/model`, { base_url: baseUrl, api_key: KEY, model: "scripted-1", ...cfg }, "PUT");
  const undo = async (b: Record<string, unknown> = {}) => {
    const res = await a.request("/v1/workspaces/main/undo", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(b) });
    return { status: res.status, body: (await res.json()) as any };
  };
  /** A file's bytes through the raw files route (null: no such file). */
  const raw = async (path: string) => {
    const res = await a.request(`/v1/workspaces/main/files/${path}`, { headers: { authorization: `Bearer ${key}` } });
    return res.status === 200 ? res.text() : null;
  };
  /** Puts a file through the raw files route (not journaled: no undo record). */
  const upload = async (path: string, text: string) => expect((await a.request(`/v1/workspaces/main/files/${path}`, { method: "PUT", headers: { authorization: `Bearer ${key}`, "content-length": String(Buffer.byteLength(text)) }, body: text })).status).toBeLessThan(300);
  return { id, key, call, stream, model, undo, raw, upload };
}

const fails = (r: { status: number; body: any }, code: string, status: number) => {
  expect(r.body.error?.code, JSON.stringify(r.body).slice(0, 600)).toBe(code);
  expect(r.status).toBe(status);
  return r.body.error as { code: string; message: string; details: any };
};
const ok = (r: { status: number; body: any }) => {
  expect(r.status, JSON.stringify(r.body).slice(0, 600)).toBe(200);
  return r.body.data;
};

describe("without a model endpoint", () => {
  it("task answers LLM_ASSIST_REQUIRED (501) with the prompt, and names the admin route", async () => {
    const t = await tenant();
    const e = fails(await t.call("task", { prompt: "Summarize README.md" }), "LLM_ASSIST_REQUIRED", 501);
    expect(e.details.prompt).toBe("Summarize README.md");
    expect(e.message).toContain(`/v1/admin/tenants/${t.id}/model`);
  });
});

describe("model endpoint configuration", () => {
  it("GET never shows the key (api_key_set, last 4); base_url goes through the SSRF guard; DELETE removes it; API keys cannot read it", async () => {
    const t = await tenant();
    const put = await t.model();
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ base_url: baseUrl, model: "scripted-1", max_steps: 20, max_seconds: 300, api_key_set: true, api_key_last4: "9f3a" });
    const got = await adm(`/v1/admin/tenants/${t.id}/model`, undefined, "GET");
    expect(got.body.api_key_last4).toBe("9f3a");
    expect(JSON.stringify(got.body)).not.toContain(KEY);
    // A key under 16 characters shows no last 4 (too much of it would be given away).
    expect((await t.model({ api_key: "short-key-12345" })).body).toMatchObject({ api_key_set: true, api_key_last4: "" });
    expect((await t.model({ api_key: "sixteen-chars-ab" })).body.api_key_last4).toBe("s-ab");
    expect((await t.model({ base_url: "http://169.254.169.254/latest" })).status).toBe(403);
    expect((await t.model({ base_url: "http://[::ffff:a9fe:a9fe]/v1" })).status).toBe(403);
    // A tenant's own key cannot read or set it (admin routes).
    const asTenant = await a.request(`/v1/admin/tenants/${t.id}/model`, { headers: { authorization: `Bearer ${t.key}` } });
    expect([401, 403]).toContain(asTenant.status);
    expect(await asTenant.text()).not.toContain(KEY);
    expect((await adm(`/v1/admin/tenants/${t.id}/model`, undefined, "DELETE")).status).toBe(200);
    expect((await adm(`/v1/admin/tenants/${t.id}/model`, undefined, "GET")).status).toBe(404);
  });
});

describe("a scripted subagent", () => {
  it("reads then edits a file over several steps: the file changed, files_changed and usage add up", async () => {
    const t = await tenant();
    await t.model();
    ok(await t.call("write", { file_path: "src/app.txt", content: "greeting = hello\n" }));
    seen.length = 0;
    script = ({ messages }) => {
      const step = messages.filter((m) => m.role === "assistant").length;
      if (step === 0) return { body: calls({ name: "read", args: { file_path: "src/app.txt" } }) };
      if (step === 1) return { body: calls({ name: "edit", args: { file_path: "src/app.txt", old_string: "hello", new_string: "goodbye" } }) };
      return { body: answer("Changed the greeting to goodbye.") };
    };
    const d = ok(await t.call("task", { prompt: "Change the greeting in src/app.txt to goodbye", description: "edit greeting" }));
    expect(d).toMatchObject({ status: "completed", answer: "Changed the greeting to goodbye.", steps: 3, files_changed: ["src/app.txt"], usage: { prompt_tokens: 30, completion_tokens: 15 } });
    const reread = await t.call("read", { file_path: "src/app.txt" });
    expect(reread.body.output).toContain("greeting = goodbye");
    // What the model was sent: the key as bearer, this workspace's tools in chat-completions format, never task/task_output/ask_user.
    expect(seen[0]!.auth).toBe(`Bearer ${KEY}`);
    expect(seen[0]!.model).toBe("scripted-1");
    const names = seen[0]!.tools.map((x: any) => x.function.name);
    expect(names).toContain("edit");
    for (const n of ["task", "task_output", "ask_user"]) expect(names).not.toContain(n);
    expect(seen[1]!.messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_0" });
    expect(seen[1]!.messages.at(-1).content).toContain("greeting = hello");
    // The record is there for task_output too.
    expect(ok(await t.call("task_output", { task_id: d.task_id }))).toMatchObject({ status: "completed", files_changed: ["src/app.txt"] });
    // The model endpoint's bytes are the task call's (three exchanges); its subagent's own calls reached no network.
    const records = usage.filter((u) => u.tenant === t.id);
    const taskRecord = records.find((u) => u.tool === "task")!;
    expect(taskRecord.net_bytes_in).toBeGreaterThan(3 * 100);
    expect(taskRecord.net_bytes_out).toBeGreaterThan(JSON.stringify(seen[2]!.messages).length);
    expect(records.filter((u) => u.tool === "read" || u.tool === "edit").map((u) => u.net_bytes_in)).toEqual([undefined, undefined, undefined]);
  });

  it("over SSE, each step is a status event (the tools it called, step of max_steps) before the result; a background task reports none", async () => {
    const t = await tenant();
    await t.model({ max_steps: 5 });
    ok(await t.call("write", { file_path: "a.txt", content: "one\n" }));
    script = ({ messages }) => {
      const step = messages.filter((m) => m.role === "assistant").length;
      if (step === 0) return { body: calls({ name: "read", args: { file_path: "a.txt" } }, { name: "ls", args: {} }, { name: "read", args: { file_path: "a.txt" } }) };
      if (step === 1) return { body: calls({ name: "edit", args: { file_path: "a.txt", old_string: "one", new_string: "two" } }) };
      return { body: answer("Done.") };
    };
    const events = await t.stream("task", { prompt: "change one to two" });
    expect(statusEvents(events)).toEqual([
      { kind: "status", message: "step 1: called read, ls", done: 1, total: 5 },
      { kind: "status", message: "step 2: called edit", done: 2, total: 5 },
      { kind: "status", message: "step 3: answered", done: 3, total: 5 },
    ]);
    expect(events.at(-1)!.data).toMatchObject({ ok: true, data: { status: "completed", steps: 3, files_changed: ["a.txt"] } });
    const bg = await t.stream("task", { prompt: "change one to two", background: true });
    expect(bg.map((e) => e.event)).toEqual(["result"]);
    const id = bg[0]!.data.data.task_id;
    for (let i = 0; i < 100 && ok(await t.call("task_output", { task_id: id })).status === "running"; i++) await new Promise((r) => setTimeout(r, 20));
  });

  it("malformed tool calls (arguments not JSON, an unknown tool, task inside a task) are answered to the model as tool errors", async () => {
    const t = await tenant();
    await t.model();
    seen.length = 0;
    script = ({ messages }) =>
      messages.some((m) => m.role === "tool")
        ? { body: answer("done") }
        : { body: calls({ name: "read", args: "{not json" }, { name: "no_such_tool", args: {} }, { name: "task", args: { prompt: "again" } }, { name: "ls", args: { path: "/", bogus: 1 } }) };
    const d = ok(await t.call("task", { prompt: "look around" }));
    expect(d.status).toBe("completed");
    const toolMsgs = seen[1]!.messages.filter((m: any) => m.role === "tool").map((m: any) => JSON.parse(m.content));
    expect(toolMsgs.map((m: any) => m.error.code)).toEqual(["INVALID_ARGUMENT", "NOT_FOUND", "NOT_FOUND", "INVALID_ARGUMENT"]);
  });

  it("the subagent is given the tenant's custom tools the caller may use, with their schemas, and calls them through the same path (its gate)", async () => {
    const t = await tenant(["read", "write", "execute", "network"]);
    await t.model();
    const hook = { name: "acme_hook", description: "Ask the ACME hook.", input_schema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] }, backend: { type: "webhook", url: "https://1.1.1.1/hook" } };
    expect((await adm(`/v1/admin/tenants/${t.id}/tools/custom`, hook)).status).toBe(201);
    await adm(`/v1/admin/tenants/${t.id}/policy`, { gate: [{ tool: "acme_hook" }] }, "PUT");
    seen.length = 0;
    script = ({ messages }) => (messages.some((m) => m.role === "tool") ? { body: answer("asked") } : { body: calls({ name: "acme_hook", args: { q: "x" } }) });
    const d = ok(await t.call("task", { prompt: "ask the hook" }));
    const sent = seen[0]!.tools.find((x: any) => x.function.name === "acme_hook");
    expect(sent?.function.parameters).toMatchObject({ properties: { q: { type: "string" } }, required: ["q"] });
    expect(d.pending_ids).toHaveLength(1);
    const toolMsgs = seen[1]!.messages.filter((m: any) => m.role === "tool").map((m: any) => JSON.parse(m.content));
    expect(toolMsgs.map((m: any) => m.error.code)).toEqual(["NEEDS_APPROVAL"]);
    // A key without the network scope: the subagent is not given it.
    const narrow = await tenant();
    await narrow.model();
    expect((await adm(`/v1/admin/tenants/${narrow.id}/tools/custom`, hook)).status).toBe(201);
    seen.length = 0;
    script = () => ({ body: answer("nothing") });
    ok(await narrow.call("task", { prompt: "look" }));
    expect(seen[0]!.tools.map((x: any) => x.function.name)).not.toContain("acme_hook");
  });

  it("a call the tenant's gate holds is not run: NEEDS_APPROVAL goes to the model, the step's later calls are skipped", async () => {
    const t = await tenant();
    await t.model();
    await adm(`/v1/admin/tenants/${t.id}/policy`, { gate: [{ tool: "write" }] }, "PUT");
    seen.length = 0;
    script = ({ messages }) =>
      messages.some((m) => m.role === "tool") ? { body: answer("write waits for approval") } : { body: calls({ name: "write", args: { file_path: "x.txt", content: "x" } }, { name: "ls", args: {} }) };
    const d = ok(await t.call("task", { prompt: "write x" }));
    expect(d.pending_ids).toHaveLength(1);
    expect(d.files_changed).toEqual([]);
    const toolMsgs = seen[1]!.messages.filter((m: any) => m.role === "tool").map((m: any) => JSON.parse(m.content));
    expect(toolMsgs.map((m: any) => m.error.code)).toEqual(["NEEDS_APPROVAL", "SKIPPED"]);
    fails(await t.call("read", { file_path: "x.txt" }), "NOT_FOUND", 404);
  });

  it("each call of the subagent that changed files is undoable: data.call_ids in order, a session undo walks them back newest first", async () => {
    const t = await tenant();
    await t.model();
    await t.upload("b.txt", "beta one\n");
    ok(await t.call("write", { file_path: "own.txt", content: "the caller's own\n" }));
    script = ({ messages }) => {
      const step = messages.filter((m) => m.role === "assistant").length;
      if (step === 0) return { body: calls({ name: "read", args: { file_path: "b.txt" } }) };
      // Both in one step: they may land in the same millisecond, and must still undo in order.
      if (step === 1) return { body: calls({ name: "write", args: { file_path: "a.txt", content: "alpha\n" } }, { name: "edit", args: { file_path: "b.txt", old_string: "one", new_string: "two" } }) };
      return { body: answer("wrote a.txt, edited b.txt") };
    };
    const d = ok(await t.call("task", { prompt: "write a.txt, edit b.txt" }));
    expect(d.files_changed).toEqual(["a.txt", "b.txt"]);
    expect(d.call_ids).toHaveLength(2);
    expect(new Set(d.call_ids).size).toBe(2);
    expect(ok(await t.call("task_output", { task_id: d.task_id })).call_ids).toEqual(d.call_ids);
    expect(await t.raw("a.txt")).toBe("alpha\n");
    expect(await t.raw("b.txt")).toBe("beta two\n");
    const edit = await t.undo();
    expect(edit.body, JSON.stringify(edit.body)).toMatchObject({ call_id: d.call_ids[1], tool: "edit", restored: [{ path: "b.txt", action: "restored" }] });
    expect(await t.raw("b.txt")).toBe("beta one\n");
    const write = await t.undo();
    expect(write.body).toMatchObject({ call_id: d.call_ids[0], tool: "write", restored: [{ path: "a.txt", action: "deleted" }] });
    expect(await t.raw("a.txt")).toBeNull();
    // The walk goes on into the caller's own calls of the session: its write of own.txt.
    const own = await t.undo();
    expect(own.body, JSON.stringify(own.body)).toMatchObject({ tool: "write", restored: [{ path: "own.txt", action: "deleted" }] });
    expect(await t.raw("own.txt")).toBeNull();
  });

  it("undo of a subagent's call whose file changed since is refused (FILE_MODIFIED), nothing written", async () => {
    const t = await tenant();
    await t.model();
    script = ({ messages }) => (messages.some((m) => m.role === "tool") ? { body: answer("done") } : { body: calls({ name: "write", args: { file_path: "c.txt", content: "from the subagent\n" } }) });
    const d = ok(await t.call("task", { prompt: "write c.txt" }));
    expect(d.call_ids).toHaveLength(1);
    ok(await t.call("read", { file_path: "c.txt" }));
    ok(await t.call("write", { file_path: "c.txt", content: "changed since\n" }));
    const r = await t.undo({ call_id: d.call_ids[0] });
    expect(r.status).toBe(409);
    expect(r.body.error).toMatchObject({ code: "FILE_MODIFIED", details: { files: ["c.txt"] } });
    expect(await t.raw("c.txt")).toBe("changed since\n");
  });

  it("an endpoint 500 is UNAVAILABLE with the status and an excerpt, never the key (even when the endpoint echoes it)", async () => {
    const t = await tenant();
    await t.model();
    script = () => ({ status: 500, body: { error: { message: `internal error for key ${KEY}` } } });
    const e = fails(await t.call("task", { prompt: "x" }), "UNAVAILABLE", 503);
    expect(e.message).toContain("HTTP 500");
    expect(e.message).toContain("internal error");
    expect(JSON.stringify(e)).not.toContain(KEY);
    expect(e.details.task_id).toMatch(/^task_/);
    const rec = ok(await t.call("task_output", { task_id: e.details.task_id }));
    expect(rec.status).toBe("failed");
  });

  it("an endpoint slower than max_seconds is TIMEOUT", async () => {
    const t = await tenant();
    await t.model({ max_seconds: 1 });
    script = () => ({ delayMs: 2500, body: answer("too late") });
    const started = Date.now();
    fails(await t.call("task", { prompt: "x" }), "TIMEOUT", 408);
    expect(Date.now() - started).toBeLessThan(2400);
  });

  it("max_steps stops a model that never answers (status max_steps)", async () => {
    const t = await tenant();
    await t.model({ max_steps: 2 });
    script = () => ({ body: calls({ name: "ls", args: {} }) });
    const d = ok(await t.call("task", { prompt: "loop forever" }));
    expect(d).toMatchObject({ status: "max_steps", steps: 2 });
  });

  it("background: true returns running at once; task_output waits for the outcome; another tenant gets NOT_FOUND", async () => {
    const t = await tenant();
    await t.model();
    script = ({ messages }) => (messages.some((m) => m.role === "tool") ? { delayMs: 300, body: answer("background done") } : { delayMs: 300, body: calls({ name: "write", args: { file_path: "bg.txt", content: "made in background\n" } }) });
    const started = ok(await t.call("task", { prompt: "make bg.txt", background: true }));
    expect(started).toEqual({ task_id: expect.stringMatching(/^task_/), status: "running" });
    const early = ok(await t.call("task_output", { task_id: started.task_id, wait: false }));
    expect(early.status).toBe("running");
    const done = ok(await t.call("task_output", { task_id: started.task_id, timeout: 20 }));
    expect(done).toMatchObject({ status: "completed", answer: "background done", files_changed: ["bg.txt"], call_ids: [expect.stringContaining("~")], steps: 2 });
    // Its stop flag was looked at once before each model turn (2) and each tool call (1): one HEAD each, nothing more.
    expect(stopChecks.filter((k) => k.includes(`/${t.id}/`) && k.includes(started.task_id))).toHaveLength(3);
    const other = await tenant();
    fails(await other.call("task_output", { task_id: started.task_id }), "NOT_FOUND", 404);
    fails(await t.call("task_output", { task_id: "task_nonexistent0000000000" }), "NOT_FOUND", 404);
  });

  it("a background task whose key is revoked stops at its next call: failed UNAUTHORIZED, that call not run, no more model turns; what it did stays", async () => {
    const t = await tenant();
    await t.model();
    const keyId = t.key.split("_")[1]!;
    const reader = (await adm(`/v1/admin/tenants/${t.id}/keys`, { scopes: ["read"] })).body.key as string;
    const file = async (path: string) => (await a.request(`/v1/workspaces/main/files/${path}`, { headers: { authorization: `Bearer ${reader}` } })).status;
    let turns = 0;
    let revoked: Promise<number> | null = null;
    // Each turn asks for one more write; the key is revoked while the second turn's reply is on its way.
    script = () => {
      turns++;
      if (turns === 2) revoked = adm(`/v1/admin/tenants/${t.id}/keys/${keyId}`, undefined, "DELETE").then((r) => r.status);
      return { delayMs: turns === 2 ? 300 : 0, body: calls({ name: "write", args: { file_path: `step${turns}.txt`, content: `${turns}\n` } }) };
    };
    ok(await t.call("task", { prompt: "write files", background: true }));
    let rec: UsageRecord | undefined;
    for (const end = Date.now() + 20_000; !rec && Date.now() < end; ) {
      await new Promise((r) => setTimeout(r, 50));
      rec = usage.find((u) => u.tenant === t.id && u.route === "background subagent");
    }
    expect(await revoked).toBe(200);
    expect(rec).toMatchObject({ ok: false, code: "UNAUTHORIZED", key: keyId });
    expect(turns).toBe(2); // no model turn after the refused call
    // The first step's write stands; the second, asked after the revocation, never ran.
    expect(await file("step1.txt")).toBe(200);
    expect(await file("step2.txt")).toBe(404);
  });

  it("a background task nobody reads is billed for its work where it ends, once, to the key that started it; a failed one with its code", async () => {
    const t = await tenant();
    await t.model();
    const mine = () => usage.filter((u) => u.tenant === t.id);
    /** The tenant's records once `found` holds (polled every 50 ms, at most 30 s: the subagent ends on its own time). */
    const until = async (found: (rs: UsageRecord[]) => boolean) => {
      for (const end = Date.now() + 30_000; !found(mine()) && Date.now() < end; ) await new Promise((r) => setTimeout(r, 50));
      return mine();
    };
    script = ({ messages }) => (messages.some((m) => m.role === "tool") ? { delayMs: 300, body: answer("done") } : { delayMs: 300, body: calls({ name: "write", args: { file_path: "w.txt", content: "x\n" } }) });
    const started = ok(await t.call("task", { prompt: "make w.txt", background: true }));
    // Nobody calls task_output: the subagent's end alone makes its record.
    const records = await until((rs) => rs.some((u) => u.route === "background subagent"));
    const work = records.filter((u) => u.route === "background subagent");
    expect(work).toEqual([expect.objectContaining({ workspace: "main", key: t.key.split("_")[1], ok: true, bytes_read: 0, bytes_written: 0 })]);
    expect(work[0]!.ms).toBeGreaterThanOrEqual(600); // two model replies of 300 ms each
    expect(work[0]!.sandbox_ms).toBeUndefined();
    // Its model endpoint's bytes are in its own record, none in the call's (answered before the first reply).
    expect(work[0]!.net_bytes_in).toBeGreaterThan(0);
    expect(work[0]!.net_bytes_out).toBeGreaterThan(0);
    expect(records.find((u) => u.tool === "task")!.net_bytes_in).toBeUndefined();
    // The call was billed when it started, and the subagent's own call as the tool it is.
    expect(records.filter((u) => u.tool).map((u) => u.tool).sort()).toEqual(["task", "write"]);
    // Reading its outcome afterwards bills no more work.
    expect(ok(await t.call("task_output", { task_id: started.task_id, timeout: 20 })).status).toBe("completed");
    expect(mine().filter((u) => u.route === "background subagent")).toHaveLength(1);

    script = () => ({ status: 500, body: "model down" });
    ok(await t.call("task", { prompt: "fail", background: true }));
    const failed = (await until((rs) => rs.filter((u) => u.route === "background subagent").length === 2)).filter((u) => u.route === "background subagent")[1];
    expect(failed).toMatchObject({ ok: false, code: "UNAVAILABLE" });
  });

  it("the key never appears in any response of these tests", () => {
    expect(texts.length).toBeGreaterThan(20);
    for (const x of texts) expect(x).not.toContain(KEY);
  });
});

describe("task records are swept", () => {
  it("a new task deletes the records of tasks that ended more than 24 h ago; the new one stays", async () => {
    let now = Date.now();
    const storage = memoryDriver();
    const b = createApp({ storage, kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, webFetch: { allowLoopback: true }, task: { now: () => now } }, tools);
    const req = async (path: string, auth: string, body?: unknown, method = "POST") => {
      const res = await b.request(path, { method, headers: { authorization: `Bearer ${auth}`, "content-type": "application/json" }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      return { status: res.status, body: (await res.json()) as any };
    };
    await req("/v1/admin/tenants", ADMIN, { id: "sweep" });
    const key = (await req("/v1/admin/tenants/sweep/keys", ADMIN, {})).body.key as string;
    expect((await req("/v1/workspaces", key, { id: "main" })).status).toBe(201);
    expect((await req("/v1/admin/tenants/sweep/model", ADMIN, { base_url: baseUrl, api_key: KEY, model: "scripted-1" }, "PUT")).status).toBe(200);
    script = () => ({ body: answer("done") });
    const run = async () => ok(await req("/v1/workspaces/main/tools/task", key, { prompt: "say done" })).task_id as string;
    const output = async (id: string) => (await req("/v1/workspaces/main/tools/task_output", key, { task_id: id, wait: false })).status;
    const first = await run();
    now += 24 * 3600_000 - 60_000;
    const second = await run(); // the first's deadline (start + 300 s) lies less than 24 h back: kept
    expect(await output(first)).toBe(200);
    now += 400_000; // now more than 24 h back (the recent-one-stays case at the record level: test/lib/run/pending/sweep.test.ts)
    const third = await run();
    expect(await output(first)).toBe(404);
    expect(await output(third)).toBe(200);
  });
});

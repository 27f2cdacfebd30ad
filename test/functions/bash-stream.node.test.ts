/**
 * bash and run_code over SSE with the real sandbox (lib/exec/stream-run.ts): output arrives as
 * progress events while the command runs, the result event carries the same data as a plain
 * call, and a client that goes away kills the command (nothing written back). Both executors:
 * local (handler in process) and lambda (asynchronous Invoke through the local stand-in).
 */
import { LambdaClient } from "@aws-sdk/client-lambda";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import bash from "../../functions/bash.js";
import bash_output from "../../functions/bash_output.js";
import { tools as fileTools } from "../../functions/index.js";
import kill_shell from "../../functions/kill_shell.js";
import run_code from "../../functions/run_code.js";
import { localExecutor } from "../../infra/container/local-executor.js";
import { startLocalInvokeServer, type LocalInvokeServer } from "../../infra/container/local-server.js";
import { RUNNER_SECRET } from "../infra/container/helpers.js";
import { createApp } from "../../lib/api/app.js";
import type { AppDeps } from "../../lib/api/deps.js";
import { lambdaExecutor } from "../../lib/exec/lambda.js";
import { httpSyncClient } from "../../lib/sync/http.js";
import { httpRunRecords } from "../../lib/sync/runs.js";
import type { Executor } from "../../lib/exec/types.js";
import { memoryDriver } from "../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../lib/storage/kv-over-storage.js";
import { assertOutput, checkOutputs } from "../support/output-check.js";
import { readEvents, type SseEvent } from "../support/sse-events.js";

const ADMIN = "admin-token-for-tests";
const SECRET = "sync-secret-for-tests-0123456789";
const tools = [...fileTools, bash, run_code, bash_output, kill_shell];

interface Env {
  storage: ReturnType<typeof memoryDriver>;
  /** An MCP client of the workspace, over the app. */
  mcp: () => Promise<Client>;
  call: (tool: string, args: unknown, opts?: { sse?: boolean; signal?: AbortSignal }) => Promise<Response>;
  close: () => Promise<void>;
}

async function makeEnv(kind: "local" | "lambda"): Promise<Env> {
  const root = mkdtempSync(join(tmpdir(), `toolshed-stream-${kind}-`));
  chmodSync(root, 0o711);
  const storage = memoryDriver();
  let app: ReturnType<typeof createApp>;
  let server: Server | null = null;
  let invoke: LocalInvokeServer | null = null;
  let executor: Executor;
  let syncUrl: string;
  if (kind === "local") {
    syncUrl = "http://toolshed.internal";
    const viaApp = ((u: string, i: RequestInit) => app.request(u, i)) as typeof fetch;
    executor = localExecutor({ root, syncClient: (req) => httpSyncClient({ ...req.sync, fetch: viaApp }), runRecords: (req) => httpRunRecords({ ...req.sync, fetch: viaApp }) });
  } else {
    server = createServer(async (req, res) => {
      const hasBody = req.method !== "GET" && req.method !== "HEAD";
      const r = await app.request(`http://127.0.0.1${req.url}`, { method: req.method!, headers: req.headers as Record<string, string>, ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream, duplex: "half" } : {}) } as RequestInit);
      res.writeHead(r.status, Object.fromEntries(r.headers));
      if (r.body) for await (const c of r.body as unknown as AsyncIterable<Uint8Array>) res.write(c);
      res.end();
    });
    await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
    syncUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    invoke = await startLocalInvokeServer({ secret: RUNNER_SECRET, root, functionName: "runner" });
    executor = lambdaExecutor({ secret: RUNNER_SECRET, client: new LambdaClient({ endpoint: invoke.url, region: "us-east-1", credentials: { accessKeyId: "x", secretAccessKey: "x" } }), functionName: "runner" });
  }
  const deps = { storage, kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, executor, syncSecret: SECRET, syncUrl } as AppDeps;
  app = checkOutputs(createApp(deps, tools), tools);
  const admin = async (path: string, body: unknown) =>
    (await app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json() as Promise<any>;
  await admin("/v1/admin/tenants", { id: "acme" });
  const { key } = await admin("/v1/admin/tenants/acme/keys", {});
  const ws = await app.request("/v1/workspaces", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ id: "main" }) });
  expect(ws.status).toBe(201);
  return {
    storage,
    mcp: async () => {
      const client = new Client({ name: "t", version: "1.0.0" });
      const url = new URL("http://127.0.0.1/v1/workspaces/main/mcp");
      await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${key}` } }, fetch: async (input, init) => app.request(String(input), init as RequestInit) }));
      return client;
    },
    call: async (tool, args, opts = {}) =>
      app.request(`/v1/workspaces/main/tools/${tool}`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": "s1", ...(opts.sse ? { accept: "text/event-stream" } : {}) },
        body: JSON.stringify(args),
        ...(opts.signal ? { signal: opts.signal } : {}),
      }),
    close: async () => {
      await invoke?.close();
      server?.close();
      if (kind === "local") await (executor as ReturnType<typeof localExecutor>).handler.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Keys of run records in the workspace (x/runs/<id>/...). */
async function runKeys(storage: Env["storage"]): Promise<string[]> {
  const keys: string[] = [];
  let cursor: string | undefined;
  do {
    const r = await storage.list({ prefix: "", ...(cursor ? { cursor } : {}) });
    keys.push(...r.objects.map((o) => o.key).filter((k) => /\/runs\/r[0-9a-f]{15}\//.test(k)));
    cursor = r.cursor;
  } while (cursor);
  return keys;
}

const progressText = (events: SseEvent[]) => events.filter((e) => e.event === "progress").map((e) => e.data.text).join("");

describe.each(["local", "lambda"] as const)("bash over SSE (%s executor)", (kind) => {
  let env: Env;
  beforeAll(async () => {
    env = await makeEnv(kind);
  });
  afterAll(() => env.close());

  it("output reaches the client while the command runs; the result is the plain call's, and no run record is left", async () => {
    const res = await env.call("bash", { command: "echo first; sleep 2; echo second; echo made > streamed.txt" }, { sse: true });
    expect(res.status).toBe(200);
    const events = await readEvents(res);
    const first = events.find((e) => e.event === "progress" && e.data.text.includes("first"));
    const result = events.at(-1)!;
    expect(result.event).toBe("result");
    expect(events.filter((e) => e.event === "result")).toHaveLength(1);
    expect(first, JSON.stringify(events.map((e) => e.data))).toBeDefined();
    expect(first!.data).toMatchObject({ kind: "output", stream: "merged" });
    expect(first!.data.text).not.toContain("second"); // sent before the command went on
    expect(result.at - first!.at).toBeGreaterThanOrEqual(1000);
    expect(progressText(events)).toContain("second");
    expect(result.data).toMatchObject({ ok: true, tool: "bash", output: "first\nsecond\n", data: { exit_code: 0, files_changed: ["streamed.txt"], files_deleted: [], conflicts: [] } });
    assertOutput(bash, result.data.data);
    // The same call without SSE answers the same shape of data.
    const plain = (await (await env.call("bash", { command: "echo first; echo second; echo made > plain.txt" })).json()) as any;
    expect(Object.keys(result.data.data).sort()).toEqual(Object.keys(plain.data).sort());
    expect(await runKeys(env.storage)).toEqual([]);
    const read = (await (await env.call("read", { file_path: "streamed.txt" })).json()) as any;
    expect(read.ok).toBe(true);
  });

  it("run_code streams too, and a non-zero exit is the result's", async () => {
    const res = await env.call("run_code", { language: "python", code: "import sys, time\nprint('one', flush=True)\ntime.sleep(1.5)\nprint('two')\nsys.exit(3)" }, { sse: true });
    const events = await readEvents(res);
    const one = events.find((e) => e.event === "progress" && e.data.text.includes("one"));
    const result = events.at(-1)!;
    expect(one).toBeDefined();
    expect(result.at - one!.at).toBeGreaterThanOrEqual(700);
    expect(result.data).toMatchObject({ ok: true, data: { exit_code: 3, stdout: "one\ntwo\n" } });
    assertOutput(run_code, result.data.data);
  });

  it("a timeout over SSE is the same TIMEOUT error as without", async () => {
    const res = await env.call("bash", { command: "echo before; touch t.txt; sleep 10", timeout: 1 }, { sse: true });
    const events = await readEvents(res);
    expect(events.at(-1)!.data).toMatchObject({ ok: false, error: { code: "TIMEOUT", details: { output: expect.stringContaining("before") } } });
    const read = (await (await env.call("read", { file_path: "t.txt" })).json()) as any;
    expect(read.error?.code).toBe("NOT_FOUND");
  });

  it("MCP: a tools/call with a progress token gets the output as notifications/progress before the result", async () => {
    const client = await env.mcp();
    const seen: { message?: string; at: number }[] = [];
    const r = await client.callTool({ name: "bash", arguments: { command: "echo alpha; sleep 1.5; echo beta" } }, undefined, { onprogress: (p) => seen.push({ ...(p.message !== undefined ? { message: p.message } : {}), at: Date.now() }) });
    const done = Date.now();
    expect(r.structuredContent).toMatchObject({ exit_code: 0, stdout: "alpha\nbeta\n" });
    const alpha = seen.find((p) => p.message?.includes("alpha"));
    expect(alpha, JSON.stringify(seen)).toBeDefined();
    expect(done - alpha!.at).toBeGreaterThanOrEqual(700);
    await client.close();
  });

  it("a client that goes away kills the command; nothing is written back", async () => {
    const ctrl = new AbortController();
    const res = await env.call("bash", { command: "touch killed.txt; echo started; sleep 30; echo never" }, { sse: true, signal: ctrl.signal });
    expect(res.status).toBe(200);
    const t0 = Date.now();
    let abortedAt = 0;
    await readEvents(res, (e) => {
      if (e.event === "progress" && e.data.text.includes("started")) {
        abortedAt = Date.now();
        ctrl.abort();
      }
    });
    expect(abortedAt, "no progress event before the abort").toBeGreaterThan(0);
    expect(abortedAt - t0).toBeLessThan(15_000);
    // The run record's result says killed within a few seconds of the abort.
    let result: any = null;
    while (!result && Date.now() - abortedAt < 5000) {
      const key = (await runKeys(env.storage)).find((k) => k.endsWith("/result.json"));
      if (key) result = JSON.parse(await new Response((await env.storage.get(key))!.body).text());
      else await new Promise((r) => setTimeout(r, 100));
    }
    expect(result, "no result in the run record 5 s after the abort").not.toBeNull();
    expect(result).toMatchObject({ ok: true, result: { killed: true, exit_code: null } });
    expect(result.result.output).not.toContain("never");
    expect(result.result.duration_ms).toBeLessThan(10_000);
    const read = (await (await env.call("read", { file_path: "killed.txt" })).json()) as any;
    expect(read.error?.code).toBe("NOT_FOUND");
  });
});

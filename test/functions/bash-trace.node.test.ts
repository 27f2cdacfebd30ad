/**
 * The span tree of a bash call (docs/tracing.md), through the real app and the real sandbox
 * (local executor, bubblewrap), exported over OTLP/HTTP JSON to a receiver on 127.0.0.1:
 * caller's traceparent → the call's server span → storage/KV spans, runner.invoke → (runner)
 * runner.run → sync_in / command / write_back → sync.* → the API's /v1/sync server spans →
 * their storage spans. One trace id throughout; nothing secret or written in any attribute.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import bash from "../../functions/bash.js";
import { tools as fileTools } from "../../functions/index.js";
import { localExecutor } from "../../infra/container/local-executor.js";
import { createApp } from "../../lib/api/app.js";
import type { AppDeps } from "../../lib/api/deps.js";
import { otlpTracer } from "../../lib/shared/otlp.js";
import { memoryDriver } from "../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../lib/storage/kv-over-storage.js";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "../support/otlp-receiver.js";

const ADMIN = "admin-token-for-trace-tests";
const SECRET = "sync-secret-for-trace-tests-0123";
const RUNNER_SECRET = "runner-secret-for-trace-tests-0123";
const CONTENT = "zebra-contents-never-in-a-span";
const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";
const tools = [...fileTools, bash];

let app: ReturnType<typeof createApp>;
let key: string;
let root: string;
let executor: ReturnType<typeof localExecutor>;
let receiver: OtlpReceiver;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  root = mkdtempSync(join(tmpdir(), "toolshed-bash-trace-"));
  chmodSync(root, 0o711);
  const viaApp = ((u: string, i: RequestInit) => app.request(u, i)) as typeof fetch;
  // The runner exports on its own, as a deployed runner does with TOOLSHED_OTLP_ENDPOINT in its env.
  executor = localExecutor({ root, secret: RUNNER_SECRET, fetch: viaApp, tracer: otlpTracer({ endpoint: receiver.url, service: "toolshed-runner" }) });
  const deps: AppDeps = { storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, executor, syncSecret: SECRET, syncUrl: "http://toolshed.internal", tracer: otlpTracer({ endpoint: receiver.url, service: "toolshed-api" }) };
  app = createApp(deps, tools);
  const admin = async (path: string, body: unknown) => (await app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json() as Promise<any>;
  await admin("/v1/admin/tenants", { id: "acme" });
  key = (await admin("/v1/admin/tenants/acme/keys", {})).key;
  const made = await app.request("/v1/workspaces", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ id: "main" }) });
  expect(made.status).toBe(201);
  const wrote = await app.request("/v1/workspaces/main/tools/write", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ file_path: "in.txt", content: `${CONTENT}\n` }) });
  expect(wrote.status).toBe(200);
});
afterAll(async () => {
  await executor?.handler.close();
  await receiver?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

describe("the span tree of a bash call", () => {
  it("runs from the caller's traceparent through the API, the runner and its write-back, in one trace", async () => {
    const res = await app.request("/v1/workspaces/main/tools/bash", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", traceparent: `00-${TRACE}-${CALLER_SPAN}-01` },
      body: JSON.stringify({ command: "cat in.txt > out.txt && echo done" }),
    });
    const body = (await res.json()) as any;
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.data.files_changed).toEqual(["out.txt"]);

    const spans = receiver.spans.filter((s) => s.traceId === TRACE);
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const parentOf = (s: ReceivedSpan) => (s.parentSpanId ? byId.get(s.parentSpanId) : undefined);
    const children = (p: ReceivedSpan) => spans.filter((s) => s.parentSpanId === p.spanId);
    const one = (name: string, pred: (s: ReceivedSpan) => boolean = () => true) => {
      const found = spans.filter((s) => s.name === name && pred(s));
      expect(found.map((s) => s.name), `${name} in ${spans.map((s) => s.name).join(", ")}`).toHaveLength(1);
      return found[0]!;
    };

    // The call: a server span, child of the caller's span.
    const call = one("POST /v1/workspaces/:ws/tools/bash");
    expect(call).toMatchObject({ service: "toolshed-api", kind: 2, parentSpanId: CALLER_SPAN, status: { code: 1 } });
    expect(call.attributes).toMatchObject({ "http.route": "/v1/workspaces/:ws/tools/bash", "http.response.status_code": 200, "toolshed.tenant": "acme", "toolshed.workspace": "main", "toolshed.tool": "bash" });
    expect(typeof call.attributes["toolshed.key_id"]).toBe("string");
    // Its own storage and KV operations (auth, workspace record, policy...) are its children.
    expect(children(call).filter((s) => /^(storage|kv)\./.test(s.name)).length).toBeGreaterThan(0);

    // The invocation, and the runner continuing the trace under it.
    const invoke = one("runner.invoke");
    expect(parentOf(invoke)).toBe(call);
    expect(invoke).toMatchObject({ kind: 3, service: "toolshed-api" });
    const run = one("runner.run");
    expect(run).toMatchObject({ service: "toolshed-runner", parentSpanId: invoke.spanId, status: { code: 1 } });
    const syncIn = one("runner.sync_in");
    const command = one("runner.command");
    const writeBack = one("runner.write_back");
    for (const phase of [syncIn, command, writeBack]) expect(parentOf(phase)).toBe(run);
    expect(syncIn.end <= command.start + 1_000_000n).toBe(true);
    expect(command.end <= writeBack.start + 1_000_000n).toBe(true);
    expect(command.attributes["toolshed.exit_code"]).toBe(0);

    // Sync-in: the manifest with the run's claim carried along (and the download of in.txt) under runner.sync_in; write-back: out.txt's batch under runner.write_back.
    const syncCalls = spans.filter((s) => s.name.startsWith("sync.") && s.service === "toolshed-runner");
    expect(syncCalls.filter((s) => s.parentSpanId === syncIn.spanId).map((s) => s.name)).toContain("sync.manifestWithClaim");
    const writes = syncCalls.filter((s) => s.parentSpanId === writeBack.spanId && /^sync\.(put|putMany|stage|commit)$/.test(s.name));
    expect(writes.length).toBeGreaterThan(0);

    // Each sync request is a server span of the API, child of the runner's sync span, with storage spans of its own.
    const syncServer = spans.filter((s) => s.service === "toolshed-api" && s.kind === 2 && s.name.includes("/v1/sync/"));
    expect(syncServer.length).toBeGreaterThan(0);
    for (const s of syncServer) expect(parentOf(s)?.service, s.name).toBe("toolshed-runner");
    const writeServer = syncServer.filter((s) => writes.some((w) => w.spanId === s.parentSpanId));
    expect(writeServer.length).toBeGreaterThan(0);
    expect(writeServer.flatMap((s) => children(s)).some((c) => c.name === "storage.put")).toBe(true);

    // Every span of the trace reaches the caller's span; no attribute holds a credential or file contents.
    for (const s of spans) {
      let p: ReceivedSpan | undefined = s;
      for (let i = 0; p && i < 20; i++) {
        if (p.parentSpanId === CALLER_SPAN) break;
        p = parentOf(p);
      }
      expect(p?.parentSpanId, `${s.name} is not under the call`).toBe(CALLER_SPAN);
    }
    const everything = JSON.stringify(receiver.posts.map((p) => p.body));
    for (const secret of [key, key.slice(4), ADMIN, SECRET, RUNNER_SECRET, CONTENT]) expect(everything).not.toContain(secret);
    expect(everything).not.toMatch(/Bearer|tst_[A-Za-z0-9]{10}/);
  });
});

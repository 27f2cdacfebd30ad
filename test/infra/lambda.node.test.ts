/**
 * The AWS Lambda entry (infra/lambda.ts) driven with function URL events through response streaming
 * (lambda-local's awslambda.streamifyResponse), over the S3 driver against a real S3 server (s3rver on 127.0.0.1). Same app as on Workers: admin, workspaces,
 * raw files (binary, base64 in the event), tools and their error envelope.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Readable } from "node:stream";
import { eventV2, invokeStreaming, invokeWhole, type EventV2Options } from "../support/lambda-invoke.js";
import { lambdaEnv, type LambdaEnv } from "../support/lambda-env.js";

let aws: LambdaEnv;
let handler: unknown;
const ADMIN = "lambda-admin-token";

beforeAll(async () => {
  aws = await lambdaEnv({ bucket: "toolshed-lambda", adminToken: ADMIN, table: false });
  ({ handler } = await import("../../infra/lambda.js"));
});

afterAll(async () => {
  await aws?.stop();
});

const event = (method: string, path: string, opts: EventV2Options = {}) => eventV2(method, path, opts);

/** One invocation through response streaming (lambda-local), its body read whole and the handler returned. */
const call = (e: ReturnType<typeof eventV2>) => invokeWhole(handler, e);

it("serves the whole API from a Lambda handler over S3", async () => {
  const t = await call(event("POST", "/v1/admin/tenants", { token: ADMIN, json: { id: "acme" } }));
  expect(t.status).toBe(201);
  const k = await call(event("POST", "/v1/admin/tenants/acme/keys", { token: ADMIN, json: {} }));
  expect(k.status).toBe(201);
  const key = k.json.key as string;
  expect(key.startsWith("tsk_")).toBe(true);

  expect((await call(event("POST", "/v1/workspaces", { token: key, json: { id: "proj" } }))).status).toBe(201);
  const list = await call(event("GET", "/v1/workspaces", { token: key }));
  expect(list.json.workspaces.map((w: { id: string }) => w.id)).toEqual(["proj"]);

  // Binary upload through the raw files route (base64 in the event), byte-identical download.
  const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
  const put = await call(event("PUT", "/v1/workspaces/proj/files/bin/all.bytes", { token: key, body: bytes }));
  expect(put.status).toBe(201);
  const got = await call(event("GET", "/v1/workspaces/proj/files/bin/all.bytes", { token: key }));
  expect(got.status).toBe(200);
  expect([...got.raw]).toEqual([...bytes]);

  // Tools: write, read, edit, and an error envelope.
  const w = await call(event("POST", "/v1/workspaces/proj/tools/write", { token: key, json: { file_path: "src/a.ts", content: "export const a = 1;\n" } }));
  expect(w.json).toMatchObject({ ok: true, tool: "write", data: { created: true } });
  const r = await call(event("POST", "/v1/workspaces/proj/tools/read", { token: key, json: { file_path: "/src/a.ts" } }));
  expect(r.json.output).toBe("     1\texport const a = 1;");
  const e = await call(event("POST", "/v1/workspaces/proj/tools/edit", { token: key, json: { file_path: "src/a.ts", old_string: "= 1", new_string: "= 2" } }));
  expect(e.json).toMatchObject({ ok: true, data: { replacements: 1 } });
  const again = await call(event("POST", "/v1/workspaces/proj/tools/read", { token: key, json: { file_path: "src/a.ts" } }));
  expect(again.json.output).toBe("     1\texport const a = 2;");
  const missing = await call(event("POST", "/v1/workspaces/proj/tools/read", { token: key, json: { file_path: "src/b.ts" } }));
  expect(missing.status).toBe(404);
  expect(missing.json).toMatchObject({ ok: false, tool: "read", error: { code: "NOT_FOUND" } });

  // Unauthenticated and cross-tenant calls.
  expect((await call(event("GET", "/v1/workspaces"))).status).toBe(401);
  await call(event("POST", "/v1/admin/tenants", { token: ADMIN, json: { id: "other" } }));
  const other = (await call(event("POST", "/v1/admin/tenants/other/keys", { token: ADMIN, json: {} }))).json.key as string;
  const cross = await call(event("POST", "/v1/workspaces/proj/tools/read", { token: other, json: { file_path: "src/a.ts" } }));
  expect(cross.status).toBe(404);
  expect(cross.json.error.code).toBe("NOT_FOUND");
});

it("layers over S3: import, checkpoint, fork, checkpoint delete, then GC (the admin route's collector and the scheduled gcHandler) frees only what nothing uses", async () => {
  const { tar } = await import("../lib/archive/archives.js");
  const { collectGarbage } = await import("../../lib/layers/gc.js");
  const { gcHandler } = (await import("../../infra/lambda.js")) as unknown as { gcHandler: () => Promise<{ tenants: number; cursor: string | null }> };
  const { fromAwsEnv } = await import("../../lib/runtime/aws.js");
  const storage = fromAwsEnv(process.env).storage;
  expect((await call(event("POST", "/v1/admin/tenants", { token: ADMIN, json: { id: "layers" } }))).status).toBe(201);
  const key = (await call(event("POST", "/v1/admin/tenants/layers/keys", { token: ADMIN, json: {} }))).json.key as string;
  expect((await call(event("POST", "/v1/workspaces", { token: key, json: { id: "origin" } }))).status).toBe(201);
  const imp = await call(event("POST", "/v1/workspaces/origin/import", { token: key, body: tar([{ name: "a.txt", body: "alpha\n" }, { name: "b.txt", body: "beta\n" }]), headers: { "content-type": "application/x-tar" } }));
  expect(imp.status, JSON.stringify(imp.json)).toBe(200);
  expect((await call(event("PUT", "/v1/workspaces/origin/files/c.txt", { token: key, body: new TextEncoder().encode("gamma\n") }))).status).toBe(201);
  const cp = await call(event("POST", "/v1/workspaces/origin/checkpoints", { token: key, json: { name: "one" } }));
  expect(cp.status, JSON.stringify(cp.json)).toBe(201);
  const fork = await call(event("POST", "/v1/workspaces", { token: key, json: { id: "fork", from_workspace: "origin", checkpoint: cp.json.id } }));
  expect(fork.status, JSON.stringify(fork.json)).toBe(201);
  expect((await call(event("DELETE", `/v1/workspaces/origin/checkpoints/${cp.json.id}`, { token: key }))).status).toBe(200);
  expect((await call(event("DELETE", "/v1/workspaces/origin", { token: key }))).status).toBe(200);

  const layerKeys = async () => {
    const out: string[] = [];
    for (const p of ["t/layers/manifests/", "t/layers/packs/"]) {
      let cursor: string | undefined;
      do {
        const r = await storage.list({ prefix: p, ...(cursor ? { cursor } : {}) });
        out.push(...r.objects.map((o) => o.key));
        cursor = r.cursor;
      } while (cursor);
    }
    return out.sort();
  };
  const before = await layerKeys();
  expect(before.length).toBeGreaterThanOrEqual(3); // the import's manifest and pack, the checkpoint's manifest (+ its pack)
  // The scheduled handler visits the tenant; within the grace period it deletes nothing.
  const tick = await gcHandler();
  expect(tick.tenants).toBeGreaterThanOrEqual(1);
  expect(await layerKeys()).toEqual(before);
  // Past the grace period: the import's manifest (replaced by the checkpoint's) goes; the fork's base and its packs stay.
  const r = await collectGarbage(storage, "layers", { now: Date.now() + 2 * 3600 * 1000 });
  expect(r.missing_manifests).toEqual([]);
  expect(r.manifests_deleted).toBeGreaterThanOrEqual(1);
  const read = async (p: string) => (await call(event("POST", "/v1/workspaces/fork/tools/read", { token: key, json: { file_path: p } }))).json.output;
  expect(await read("a.txt")).toBe("     1\talpha");
  expect(await read("c.txt")).toBe("     1\tgamma");
  // Once the fork is deleted too, everything goes.
  expect((await call(event("DELETE", "/v1/workspaces/fork", { token: key }))).status).toBe(200);
  await collectGarbage(storage, "layers", { now: Date.now() + 2 * 3600 * 1000 });
  expect(await layerKeys()).toEqual([]);
});

/** The JSON-RPC messages of an SSE body. */
const sseMessages = (raw: Buffer): any[] => raw.toString("utf8").split("\n").filter((l: string) => l.startsWith("data: ")).map((l: string) => JSON.parse(l.slice(6)));

/** Reads an SSE body as it streams: `waitFor` settles with the first complete message that matches, while the stream may still be open. */
function sseReader(body: Readable) {
  let text = "";
  const checks = new Set<() => void>();
  const ended = new Promise<void>((resolve, reject) => body.on("end", resolve).on("error", reject));
  body.on("data", (c: Buffer) => {
    text += c.toString("utf8");
    for (const check of [...checks]) check();
  });
  const complete = () => sseMessages(Buffer.from(text.slice(0, text.lastIndexOf("\n\n") + 2)));
  const waitFor = (pred: (m: any) => boolean) =>
    new Promise<any>((resolve, reject) => {
      const check = () => {
        const m = complete().find(pred);
        if (m) checks.delete(check), resolve(m);
      };
      checks.add(check);
      check();
      const atEnd = () => {
        if (!checks.has(check)) return;
        check();
        if (checks.delete(check)) reject(new Error(`the stream ended without it: ${text}`));
      };
      void ended.then(atEnd, reject);
    });
  return { waitFor, ended, all: () => complete() };
}

it("MCP ask_user for a client that declares elicitation: the question streams while the call waits, the answer (another invocation) is stored, and the call answers with it", async () => {
  await call(event("POST", "/v1/admin/tenants", { token: ADMIN, json: { id: "asks" } }));
  const key = (await call(event("POST", "/v1/admin/tenants/asks/keys", { token: ADMIN, json: {} }))).json.key as string;
  expect((await call(event("POST", "/v1/workspaces", { token: key, json: { id: "main" } }))).status).toBe(201);
  const mcpEvent = (json: unknown, headers: Record<string, string> = {}) =>
    event("POST", "/v1/workspaces/main/mcp", { token: key, json, headers: { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25", ...headers } });
  const init = await call(mcpEvent({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: { elicitation: { form: {} } }, clientInfo: { name: "raw", version: "1" } } }));
  const session = init.headers["mcp-session-id"] as string;
  expect(session).toMatch(/^ask-/);
  const asking = await invokeStreaming(handler, mcpEvent({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "ask_user", arguments: { question: "Which region?" } } }, { "mcp-session-id": session }));
  let returned = false;
  void asking.returned.then(() => (returned = true));
  const sse = sseReader(asking.body);
  // The question arrives on the open stream: the call is still waiting for its answer.
  const question = await sse.waitFor((m) => m.method === "elicitation/create");
  expect(question.params.message).toBe("Which region?");
  expect(sse.all().some((m: any) => m.id === 1)).toBe(false);
  expect(returned).toBe(false);
  const taken = await call(mcpEvent({ jsonrpc: "2.0", id: question.id, result: { action: "accept", content: { answer: "eu-west-1" } } }, { "mcp-session-id": session }));
  expect(taken.status).toBe(202);
  // The waiting call reads the stored answer and answers with it; its stream ends, then the handler returns.
  const result = (await sse.waitFor((m) => m.id === 1)).result;
  await sse.ended;
  await asking.returned;
  expect(result.isError).toBeFalsy();
  expect(JSON.stringify(result)).toContain("eu-west-1");
}, 120_000);

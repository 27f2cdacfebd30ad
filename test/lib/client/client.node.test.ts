/**
 * The typed client (lib/client/) against the real app in Node over the memory driver, its fetch
 * being app.fetch: workspaces, tool calls typed per tool, raw files, error codes as ToolshedError,
 * SSE streams. The `@ts-expect-error` lines are the type-level tests: `npm test` runs tsc first,
 * and tsc fails if any of them stops being an error.
 */
import { z } from "@hono/zod-openapi";
import { beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import { tools as allTools } from "../../../functions/index.js";
import { createApp } from "../../../lib/api/app.js";
import { createClient, ToolshedError, type ProgressEvent, type ToolData, type ToolName } from "../../../lib/client/index.js";
import { readSse } from "../../../lib/client/sse.js";
import { ToolError } from "../../../lib/shared/errors.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { defineTool, type ProgressEvent as ServerProgressEvent, type Tool } from "../../../lib/contract/tool.js";

const ADMIN = "client-test-admin";

/** A test tool that reports progress twice, then answers (or fails with NO_MATCH). */
const ticker = defineTool({
  name: "ticker",
  description: "Test tool: reports progress.\nReturns: {n}",
  summary: "Test tool: reports progress.",
  annotations: { title: "Ticker", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  output: z.object({ n: z.number() }),
  category: "file",
  permission: "read",
  input: z.object({ fail: z.boolean().optional() }),
  async execute(args, ctx) {
    ctx.progress?.({ kind: "output", stream: "stdout", text: "first\n" });
    ctx.progress?.({ kind: "status", message: "half", done: 1, total: 2 });
    if (args.fail) throw new ToolError("NO_MATCH", "nothing matched; try another pattern");
    return { title: "ticker", output: "done", data: { n: 2 } };
  },
}) as Tool;

const app = createApp({ storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN }, [...allTools, ticker]);
const adminPost = async (path: string, body: unknown) => {
  const res = await app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  expect(res.status, await res.clone().text()).toBe(201);
  return (await res.json()) as Record<string, any>;
};

let apiKey: string;
const client = () => createClient({ baseUrl: "http://toolshed.test", apiKey, fetch: (req) => app.fetch(req) });

beforeAll(async () => {
  await adminPost("/v1/admin/tenants", { id: "acme" });
  apiKey = (await adminPost("/v1/admin/tenants/acme/keys", { name: "client-test" })).key;
});

/** The error a promise rejects with, asserted to be a ToolshedError. */
async function failure(p: Promise<unknown>): Promise<ToolshedError> {
  const e = await p.then(() => undefined, (err: unknown) => err);
  expect(e).toBeInstanceOf(ToolshedError);
  return e as ToolshedError;
}

describe("toolshed/client", () => {
  it("creates, lists, gets and deletes workspaces", async () => {
    const ts = client();
    const ws = await ts.workspaces.create({ id: "lifecycle", name: "Lifecycle" });
    expect(ws).toMatchObject({ id: "lifecycle", name: "Lifecycle" });
    expect((await ts.workspaces.list()).workspaces.map((w) => w.id)).toContain("lifecycle");
    expect((await ts.workspaces.get("lifecycle")).id).toBe("lifecycle");
    // Routes without a helper: the typed openapi-fetch client underneath.
    const cp = await ts.api.POST("/v1/workspaces/{ws}/checkpoints", { params: { path: { ws: "lifecycle" } }, body: {} });
    expect(cp.response.status, JSON.stringify(cp.error)).toBe(201);
    expect(await ts.workspaces.delete("lifecycle")).toMatchObject({ deleted: true, id: "lifecycle" });
    const gone = await failure(ts.workspaces.get("lifecycle"));
    expect(gone).toMatchObject({ code: "NOT_FOUND", status: 404 });
    expect(gone.message).toMatch(/workspace/i);
  });

  it("writes, reads, edits and greps with typed arguments and results", async () => {
    const ts = client();
    await ts.workspaces.create({ id: "code" });
    const w = await ts.tools.call("code", "write", { file_path: "src/a.ts", content: "export const a = 1;\n" }, { session: "s1" });
    expect(w.ok).toBe(true);
    const r = await ts.tools.call("code", "read", { file_path: "src/a.ts" }, { session: "s1" });
    expect(r.output).toContain("export const a = 1;");
    expectTypeOf(r.data.etag).toEqualTypeOf<string>();
    expect(r.data.etag).toMatch(/\S/);
    const e = await ts.tools.call("code", "edit", { file_path: "src/a.ts", old_string: "= 1", new_string: "= 2" }, { session: "s1" });
    expect(e.tool).toBe("edit");
    const read = ts.tool("read");
    expect((await read("code", { file_path: "src/a.ts" }, { session: "s1" })).output).toContain("= 2;");
    const g = await ts.tools.call("code", "grep", { pattern: "const a", output_mode: "content" });
    expect(g.output).toContain("src/a.ts");
    expect(g.usage).toMatchObject({ ms: expect.any(Number) });
  });

  it("puts and gets raw files, binary-safe, with paths that need encoding", async () => {
    const ts = client();
    await ts.workspaces.create({ id: "raw" });
    const bytes = new Uint8Array([0, 1, 2, 255, 254]);
    const up = await ts.files.put("raw", "bin/a b#1.dat", bytes);
    expect(up).toMatchObject({ path: "bin/a b#1.dat", size: 5, created: true });
    const down = await ts.files.get("raw", "bin/a b#1.dat");
    expect([...down.bytes]).toEqual([...bytes]);
    expect(down.etag).toBe(up.etag);
    await ts.files.put("raw", "/notes/hello.txt", "héllo\n");
    expect((await ts.files.get("raw", "notes/hello.txt")).text()).toBe("héllo\n");
    // The raw file is what the tools see.
    expect((await ts.tools.call("raw", "read", { file_path: "notes/hello.txt" })).output).toContain("héllo");
    expect((await ts.files.list("raw", "", { recursive: true })).entries.map((e) => e.path)).toEqual(expect.arrayContaining(["bin/a b#1.dat", "notes/hello.txt"]));
    expect(await failure(ts.files.get("raw", "notes"))).toMatchObject({ code: "IS_DIRECTORY" });
    await ts.files.delete("raw", "notes/hello.txt");
    expect(await failure(ts.files.get("raw", "notes/hello.txt"))).toMatchObject({ code: "NOT_FOUND", status: 404 });
  });

  it("uploads a directory tree in batches (text and binary), and a refused batch (mode all) as a ToolshedError with nothing written", async () => {
    const ts = client();
    await ts.workspaces.create({ id: "batch" });
    const tree = [
      { path: "src/a.ts", content: "export const a = 1;\n" },
      { path: "src/deep/ü.md", content: new TextEncoder().encode("naïve 🚀\n") },
      { path: "bin/x.bin", content: new Uint8Array([0, 255, 128, 1]) },
      { path: "empty", content: "" },
      { path: "z.txt", content: "z" },
    ];
    const r = await ts.files.uploadDirectory("batch", tree, { prefix: "repo", batchFiles: 2 });
    expect(r).toMatchObject({ written: 5, failed: 0 });
    expect(r.files.map((f) => f.path)).toEqual(tree.map((f) => `repo/${f.path}`));
    expect([...(await ts.files.get("batch", "repo/bin/x.bin")).bytes]).toEqual([0, 255, 128, 1]);
    expect((await ts.files.get("batch", "repo/src/deep/ü.md")).text()).toBe("naïve 🚀\n");
    const e = await failure(ts.files.upload("batch", [{ path: "new.txt", content: "n" }, { path: "repo/z.txt", content: "again", create: true }]));
    expect(e).toMatchObject({ code: "ALREADY_EXISTS", status: 409 });
    expect(await failure(ts.files.get("batch", "new.txt"))).toMatchObject({ code: "NOT_FOUND" });
    const each = await ts.files.upload("batch", [{ path: "new.txt", content: "n" }, { path: "repo/z.txt", content: "again", create: true }], { mode: "each" });
    expect(each.files.map((f) => f.ok)).toEqual([true, false]);
  });

  it("throws the API's error codes as ToolshedError, with details and the agent's next step", async () => {
    const ts = client();
    await ts.workspaces.create({ id: "errors" });
    const missing = await failure(ts.tools.call("errors", "read", { file_path: "nope.txt" }));
    expect(missing).toMatchObject({ code: "NOT_FOUND", status: 404, tool: "read" });
    expect(missing.usage).toMatchObject({ ms: expect.any(Number) });

    // Read in session s1, then the file changes underneath: edit refuses with FILE_MODIFIED.
    const first = await ts.files.put("errors", "f.txt", "one\n");
    await ts.tools.call("errors", "read", { file_path: "f.txt" }, { session: "s1" });
    await ts.files.put("errors", "f.txt", "two\n", { ifMatch: first.etag });
    const modified = await failure(ts.tools.call("errors", "edit", { file_path: "f.txt", old_string: "two", new_string: "three" }, { session: "s1" }));
    expect(modified).toMatchObject({ code: "FILE_MODIFIED", status: 409 });
    expect(modified.message).toMatch(/read/i);
    // Records are per session: the client sends it (X-Session-Id), so another session has not read the file.
    expect(await failure(ts.tools.call("errors", "edit", { file_path: "f.txt", old_string: "two", new_string: "three" }, { session: "s2" }))).toMatchObject({ code: "NOT_READ", status: 409 });
    // A raw put over a stale etag is refused too, and leaves the file as it was.
    expect(await failure(ts.files.put("errors", "f.txt", "three\n", { ifMatch: first.etag }))).toMatchObject({ code: "FILE_MODIFIED", status: 409 });
    expect((await ts.files.get("errors", "f.txt")).text()).toBe("two\n");
    // An ETag as a Response's header gives it (quoted) is sent as it is, not quoted again: it matches, and a stale one is FILE_MODIFIED.
    const current = (await ts.files.get("errors", "f.txt")).etag;
    const put = await ts.files.put("errors", "f.txt", "four\n", { ifMatch: `"${current}"` });
    expect((await ts.files.get("errors", "f.txt")).text()).toBe("four\n");
    expect(await failure(ts.files.put("errors", "f.txt", "five\n", { ifMatch: `"${current}"` }))).toMatchObject({ code: "FILE_MODIFIED", status: 409 });
    await ts.files.delete("errors", "f.txt", { ifMatch: `"${put.etag}"` });

    expect(await failure(createClient({ baseUrl: "http://toolshed.test", apiKey: "tsk_bogus", fetch: (req) => app.fetch(req) }).workspaces.list())).toMatchObject({ code: "UNAUTHORIZED", status: 401 });
    // Not a Toolshed answer at all (a proxy's error page): UNEXPECTED_RESPONSE, with what to check.
    const proxy = createClient({ baseUrl: "http://toolshed.test", apiKey, fetch: async () => new Response("<html>Bad Gateway</html>", { status: 502, headers: { "content-type": "text/html" } }) });
    const odd = await failure(proxy.tools.call("errors", "read", { file_path: "f.txt" }));
    expect(odd).toMatchObject({ code: "UNEXPECTED_RESPONSE", status: 502 });
    expect(odd.message).toContain("baseUrl");
  });

  it("streams progress events, then returns the result envelope", async () => {
    const ts = client();
    await ts.workspaces.create({ id: "stream" });
    // "ticker" is this test's own tool, so not in the generated types.
    const it = ts.tools.stream("stream", "ticker" as ToolName, {} as never);
    const progress: ProgressEvent[] = [];
    let step = await it.next();
    for (; !step.done; step = await it.next()) progress.push(step.value.data);
    expect(progress).toEqual([{ kind: "output", stream: "stdout", text: "first\n" }, { kind: "status", message: "half", done: 1, total: 2 }]);
    expect(step.value).toMatchObject({ ok: true, tool: "ticker", data: { n: 2 } });

    const failed = ts.tools.stream("stream", "ticker" as ToolName, { fail: true } as never);
    const err = await failure((async () => { for await (const _ of failed); })());
    expect(err).toMatchObject({ code: "NO_MATCH", tool: "ticker" });

    // A typed tool with no progress: just the result.
    await ts.files.put("stream", "x.txt", "needle\n");
    const g = ts.tools.stream("stream", "grep", { pattern: "needle" });
    let last = await g.next();
    while (!last.done) last = await g.next();
    expect(last.value.output).toContain("x.txt");
    // A server that answers plain JSON instead of a stream: the result, no progress.
    const plain = createClient({ baseUrl: "http://toolshed.test", apiKey, fetch: (req) => { const h = new Headers(req.headers); h.delete("accept"); return app.fetch(new Request(req, { headers: h })); } });
    const p = plain.tools.stream("stream", "grep", { pattern: "needle" });
    const only = await p.next();
    expect(only.done).toBe(true);
    expect(only.value).toMatchObject({ ok: true, tool: "grep" });
    expect(await failure(plain.tools.stream("stream", "read", { file_path: "nope" }).next())).toMatchObject({ code: "NOT_FOUND", status: 404 });
    // Refused before the stream starts: thrown as usual.
    expect(await failure(ts.tools.stream("nowhere", "grep", { pattern: "x" }).next())).toMatchObject({ code: "NOT_FOUND" });
  });

  it("parses SSE split anywhere, with CRLF, comments and multi-line data", async () => {
    const text = ": hello\r\nevent: progress\r\ndata: a\r\ndata: b\r\n\r\nevent: result\ndata: {}\n\n";
    const chunks = [...text].map((ch) => new TextEncoder().encode(ch));
    const body = new ReadableStream<Uint8Array>({ pull(c) { const next = chunks.shift(); if (next) c.enqueue(next); else c.close(); } });
    const out = [];
    for await (const m of readSse(body)) out.push(m);
    expect(out).toEqual([{ event: "progress", data: "a\nb" }, { event: "result", data: "{}" }]);
  });
});

describe("types (checked by tsc)", () => {
  it("types arguments and results per tool", () => {
    // Never called (it would reach for the network): tsc checks it, and fails if a line stops being an error.
    const typeChecks = (ts: ReturnType<typeof createClient>) => {
      // @ts-expect-error: read takes file_path, not path
      void ts.tools.call("w", "read", { path: "a.txt" });
      // @ts-expect-error: offset is a number
      void ts.tools.call("w", "read", { file_path: "a.txt", offset: "3" });
      // @ts-expect-error: no such tool
      void ts.tools.call("w", "reed", { file_path: "a.txt" });
      // @ts-expect-error: edit needs old_string and new_string
      void ts.tool("edit")("w", { file_path: "a.txt" });
      // @ts-expect-error: grep's data has no etag
      void ts.tools.call("w", "grep", { pattern: "x" }).then((r) => r.data.etag);
    };
    expect(typeof typeChecks).toBe("function");
  });

  it("matches the server's types where the client restates them", () => {
    expectTypeOf<ProgressEvent>().toEqualTypeOf<ServerProgressEvent>();
    expectTypeOf<ToolData<"read">["etag"]>().toEqualTypeOf<string>();
    expectTypeOf<"read" | "edit" | "grep" | "bash">().toExtend<ToolName>();
  });
});

/**
 * Long work as tasks on the MCP 2026-07-28 door, with the official 2.x client over the real app
 * (sandbox-app.ts; mcp-2026-client.ts):
 *   - tasks/cancel stops a background subagent: a scripted model on 127.0.0.1 asks for a write in
 *     step 1 and another in step 2; the cancel comes between them, and the second file never appears;
 *     the task says it was cancelled after 2 steps.
 *   - the threshold (deps.mcp.taskAfterMs, lowered here): a web_fetch of a local server that holds
 *     its answer until the test lets it go is answered as a working task, goes on under the request's
 *     waitUntil (an execution context as Workers gives), and its result arrives through tasks/get,
 *     metered once; a cancel written first stays; a quick call answers directly, no task record written.
 */
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTaskKey, callTasksPrefix, internalPrefix } from "../../../lib/layout/paths.js";
import { readJson } from "../../../lib/storage/json.js";
import { cancelTask, connect, ended, executionContext, getTask, pollUntil, startTask, text } from "./mcp-2026-client.js";
import { ADMIN, sandboxApp, type Tenant } from "./sandbox-app.js";

// lateCallLostMs as Lambda sets it (its function's timeout; lib/runtime/aws.ts), here 5 min.
const LOST_AFTER_MS = 5 * 60_000;
const { app, storage, usage, post, tenant, fileStatus, close } = sandboxApp({ mcp: { taskAfterMs: 1000, lateCallLostMs: LOST_AFTER_MS } });

/** A local HTTP server; an answer with `hold` waits until release() (no timer: the test says when). */
function heldServer(reply: (n: number) => { hold?: boolean; json?: unknown; text?: string }) {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const waiting: { n: number; ok: () => void }[] = [];
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", async () => {
      requests.push(body);
      for (const w of waiting.filter((x) => requests.length >= x.n)) w.ok();
      const r = reply(requests.length);
      if (r.hold) await released;
      res.writeHead(200, { "content-type": r.json !== undefined ? "application/json" : "text/plain" });
      res.end(r.json !== undefined ? JSON.stringify(r.json) : (r.text ?? ""));
    });
  });
  const listening = new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  return {
    requests,
    release,
    /** Settles once the n-th request (1-based) has arrived. */
    nth: (n: number) => new Promise<void>((ok) => (requests.length >= n ? ok() : void waiting.push({ n, ok }))),
    url: async () => (await listening, `http://127.0.0.1:${(server.address() as { port: number }).port}`),
    close: () => (release(), new Promise<void>((ok) => (server.close(() => ok()), server.closeAllConnections()))),
  };
}

const write = (path: string) => ({ choices: [{ message: { role: "assistant", content: null, tool_calls: [{ id: `c-${path}`, type: "function", function: { name: "write", arguments: JSON.stringify({ file_path: path, content: path }) } }] } }], usage: { prompt_tokens: 1, completion_tokens: 1 } });

/** Work kept under waitUntil, settled (what it starts while settling too). */
async function settle(kept: Promise<unknown>[]): Promise<void> {
  while (kept.length) await Promise.all(kept.splice(0));
}

let t: Tenant;
/** The same tenant with a key that may also reach the network (web_fetch). */
let net: Tenant;
beforeAll(async () => {
  t = await tenant("long26");
  const made = (await post(`/v1/admin/tenants/${t.id}/keys`, { scopes: ["read", "write", "execute", "network"] }, ADMIN)).body as { key: string; key_id: string };
  net = { ...t, key: made.key, keyId: made.key_id };
});
afterAll(close);

describe("cancelling a subagent", () => {
  it("tasks/cancel between two steps stops it: the second step's write never happens; the task says it was cancelled after 2 steps", async () => {
    // Turn 1 asks for one.txt; turn 2 (held until the cancel has set the stop flag) asks for two.txt.
    const model = heldServer((n) => (n === 1 ? { json: write("one.txt") } : n === 2 ? { hold: true, json: write("two.txt") } : { json: { choices: [{ message: { role: "assistant", content: "done" } }] } }));
    try {
      expect((await post(`/v1/admin/tenants/${t.id}/model`, { base_url: `${await model.url()}/v1`, api_key: "sk-test-model", model: "scripted-1" }, ADMIN, "PUT")).status).toBe(200);
      const c = await connect(app, t);
      const task = await startTask(c, "task", { prompt: "Write one.txt, then two.txt.", description: "two files" });
      await model.nth(2); // step 1 ran its write, and the second turn waits
      expect(await fileStatus(t, "one.txt")).toBe(200);
      const cancelled = cancelTask(c, task.taskId);
      const prefix = `${internalPrefix(t.id, "main")}tasks/`;
      while (!(await storage.list({ prefix })).objects.some((o) => o.key.endsWith(".stop.json"))) await new Promise((r) => setTimeout(r, 20));
      model.release(); // the second turn's answer (write two.txt) reaches a subagent that was asked to stop
      expect(await cancelled).toEqual({ _meta: expect.any(Object) });
      const after = await getTask(c, task.taskId);
      expect(after.status).toBe("cancelled");
      expect(after.statusMessage).toMatch(/^CANCELLED: The task was cancelled\. Task task_\w+ was cancelled after 2 steps/);
      expect(after.statusMessage).toContain("one.txt");
      expect(await fileStatus(t, "two.txt")).toBe(404);
      expect(model.requests).toHaveLength(2);
      // The subagent's own record says the same (task_output).
      const agentId = /Task (task_\w+) was cancelled/.exec(after.statusMessage)![1];
      const out = await post("/v1/workspaces/main/tools/task_output", { task_id: agentId, wait: false }, t.key);
      expect(out.body.data).toMatchObject({ status: "cancelled", steps: 2, files_changed: ["one.txt"] });
      // Billed as a killed background run is: its wall time, not ok, code CANCELLED.
      expect(usage.filter((u) => u.tenant === t.id && u.route === "background subagent")).toEqual([expect.objectContaining({ ok: false, code: "CANCELLED" })]);
      await c.client.close();
    } finally {
      await model.close();
    }
  });
});

describe("a call that passes the threshold becomes a task", () => {
  it("a slow web_fetch is answered as a working task, goes on under waitUntil, and its result arrives through tasks/get; metered once, as a call", async () => {
    const site = heldServer(() => ({ hold: true, text: "the slow answer" }));
    try {
      const kept: Promise<unknown>[] = [];
      const workRecords = () => usage.filter((u) => u.tenant === t.id && u.tool === undefined).length; // any record of a route (a task's, a background run's)
      const work0 = workRecords();
      const c = await connect(app, net, { ctx: executionContext(kept) });
      const task = await startTask(c, "web_fetch", { url: `${await site.url()}/slow`, format: "text" });
      expect(task).toMatchObject({ status: "working", statusMessage: expect.stringMatching(/^Running: web_fetch/) });
      expect((await getTask(c, task.taskId)).status).toBe("working");
      // Counted as cut off only past the runtime's bound (deps.mcp.lateCallLostMs), not Workers' 60 s.
      const rec = await readJson<{ lost_after_ms?: number }>(storage, callTaskKey(net.id, "main", net.keyId, task.taskId)!);
      expect(rec?.value.lost_after_ms).toBe(LOST_AFTER_MS);
      expect(usage.filter((u) => u.tenant === t.id && u.tool === "web_fetch")).toHaveLength(0);
      site.release();
      await settle(kept);
      const done = await getTask(c, task.taskId);
      expect(done.status).toBe("completed");
      expect(done.result.isError ?? false).toBe(false);
      expect(text(done.result)).toContain("the slow answer");
      expect(done.result.structuredContent).toMatchObject({ status: 200, content: "the slow answer" });
      expect(usage.filter((u) => u.tenant === t.id && u.tool === "web_fetch")).toHaveLength(1);
      expect(workRecords()).toBe(work0); // no record of its own beside the call's
      await c.client.close();
    } finally {
      await site.close();
    }
  });

  it("cancelled while the call runs in this isolate: the call is aborted (the held fetch never answered), the task stays cancelled, its result not kept", async () => {
    const site = heldServer(() => ({ hold: true, text: "the slow answer" }));
    try {
      const kept: Promise<unknown>[] = [];
      const c = await connect(app, net, { ctx: executionContext(kept) });
      const task = await startTask(c, "web_fetch", { url: `${await site.url()}/slow`, format: "text" });
      await cancelTask(c, task.taskId);
      // The site never answers: the call's work under waitUntil settles only because the cancel aborted it.
      await settle(kept);
      const after = await getTask(c, task.taskId);
      expect(after.status).toBe("cancelled");
      expect(after.statusMessage).toMatch(/the call under way was stopped/);
      expect(after.result).toBeUndefined();
      await c.client.close();
    } finally {
      await site.close();
    }
  });

  it("a quick call answers directly: no task record is written", async () => {
    const kept: Promise<unknown>[] = [];
    const c = await connect(app, t, { ctx: executionContext(kept) });
    const before = (await storage.list({ prefix: callTasksPrefix(t.id, "main") })).objects.length;
    const r = await c.client.callTool({ name: "ls", arguments: {} });
    expect(r.isError ?? false).toBe(false);
    expect(r.structuredContent).toBeDefined();
    await settle(kept);
    expect((await storage.list({ prefix: callTasksPrefix(t.id, "main") })).objects).toHaveLength(before);
    await c.client.close();
  });
});

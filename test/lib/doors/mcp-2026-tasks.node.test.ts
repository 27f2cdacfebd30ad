/**
 * Tasks and input requests on the MCP 2026-07-28 door (lib/doors/mcp-2026-tasks.ts) with the
 * official 2.x client (@modelcontextprotocol/client) over the real app and the real sandbox (local
 * executor, bubblewrap; memory storage): server/discover declares the io.modelcontextprotocol/tasks
 * extension; bash, run_code and task (a subagent on a scripted model endpoint) run as tasks (tasks/get: partial output, then the result; the
 * call metered at its start, its work once with the sandbox time); tasks/cancel kills the run (the file it would have written never
 * appears); ask_user as a task's input request answered by tasks/update, and as a multi round-trip
 * input request the client answers itself; an approval with changed arguments and a refusal through
 * the pending-call API; another tenant's task id not found; a client without the extension as before.
 * The client and its task helpers: mcp-2026-client.ts.
 */
import { createServer } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cancelTask, connect as connectTo, ended, getTask, pollUntil, startTask, TASKS, text, updateTask, type Ask } from "./mcp-2026-client.js";
import { ADMIN, sandboxApp, type Tenant } from "./sandbox-app.js";

const { app, usage, post, tenant, upload, fileStatus, close } = sandboxApp();
const connect = (t: Tenant, opts: { tasks?: boolean; onAsk?: Ask } = {}) => connectTo(app, t, opts);

let acme: Tenant;
beforeAll(async () => {
  acme = await tenant("acme26");
});
afterAll(close);

describe("the tasks extension on the 2026-07-28 door", () => {
  it("bash as a task: server/discover declares the extension; tasks/get shows the output so far, then the result; the call metered at its start, its work once with the sandbox time", async () => {
    const c = await connect(acme);
    expect(c.client.getServerCapabilities()).toMatchObject({ tools: {}, extensions: { [TASKS]: {} } });
    const task = await startTask(c, "bash", { command: "echo first; sleep 4; echo second; echo done > out.txt" });
    expect(task).toMatchObject({ status: "working", taskId: expect.stringMatching(/^c/), ttlMs: expect.any(Number), pollIntervalMs: expect.any(Number), createdAt: expect.any(String) });
    const running = await pollUntil(c, task.taskId, (t) => ended(t) || String(t._meta?.["toolshed/output"] ?? "").includes("first"));
    expect(running.status).toBe("working");
    expect(running._meta["toolshed/output"]).toBe("first\n");
    expect(running.statusMessage).toMatch(/^Running in the sandbox: /);
    expect(await fileStatus(acme, "out.txt")).toBe(404);
    const done = await pollUntil(c, task.taskId, ended);
    expect(done.status).toBe("completed");
    expect(text(done.result)).toBe("first\nsecond\n");
    expect(done.result.structuredContent).toMatchObject({ exit_code: 0, files_changed: ["out.txt"] });
    expect(await fileStatus(acme, "out.txt")).toBe(200);
    // The routing header the extension asks for: Mcp-Name carries the task id.
    expect(c.sent.find((s) => s.method === "tasks/get")!.headers.get("mcp-name")).toBe(task.taskId);
    await getTask(c, task.taskId);
    // The call is metered when it starts; its run adds one record (with its sandbox time) where its result was stored, however often the task is read.
    expect(usage.filter((u) => u.tenant === "acme26" && u.tool === "bash")).toHaveLength(1);
    const timed = usage.filter((u) => u.tenant === "acme26" && u.sandbox_ms !== undefined);
    expect(timed).toHaveLength(1);
    expect(timed[0]!.route).toBe("background run");
    expect(timed[0]!.sandbox_ms).toBeGreaterThanOrEqual(4000); // its sleep 4
    expect(usage.filter((u) => u.tenant === "acme26" && u.route === "call task")).toHaveLength(0);
    await c.client.close();
  });

  it("run_code runs detached as bash does: a task whose result is the program's output", async () => {
    const c = await connect(acme);
    const task = await startTask(c, "run_code", { language: "python", code: "print(6 * 7)" });
    const done = await pollUntil(c, task.taskId, ended);
    expect(done.status, JSON.stringify(done)).toBe("completed");
    expect(done.result.isError ?? false).toBe(false);
    expect(text(done.result)).toBe("42\n");
    expect(usage.filter((u) => u.tenant === "acme26" && u.tool === "run_code")).toHaveLength(1);
    await c.client.close();
  });

  it("task runs as a background subagent: a task whose result is the subagent's answer, metered once", async () => {
    // A scripted chat-completions endpoint on 127.0.0.1: the model answers at once, with no tool call.
    const model = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ choices: [{ message: { role: "assistant", content: "All tests pass." } }], usage: { prompt_tokens: 10, completion_tokens: 5 } }));
      });
    });
    await new Promise<void>((ok) => model.listen(0, "127.0.0.1", ok));
    try {
      const port = (model.address() as { port: number }).port;
      expect((await post(`/v1/admin/tenants/${acme.id}/model`, { base_url: `http://127.0.0.1:${port}/v1`, api_key: "sk-test-model", model: "scripted-1" }, ADMIN, "PUT")).status).toBe(200);
      const c = await connect(acme);
      const task = await startTask(c, "task", { prompt: "Run the tests and report.", description: "check tests" });
      expect(task.statusMessage).toMatch(/^Subagent working: /);
      const done = await pollUntil(c, task.taskId, ended);
      expect(done.status, JSON.stringify(done)).toBe("completed");
      expect(done.result.isError ?? false).toBe(false);
      expect(done.result.structuredContent).toMatchObject({ status: "completed", answer: "All tests pass." });
      expect(usage.filter((u) => u.tenant === "acme26" && u.tool === "task")).toHaveLength(1);
      // Its work is metered where the subagent ended (route "background subagent"), once; the task's reads add nothing.
      expect(usage.filter((u) => u.tenant === "acme26" && u.route === "background subagent")).toEqual([expect.objectContaining({ ok: true, key: expect.any(String) })]);
      expect(usage.filter((u) => u.tenant === "acme26" && u.route === "call task")).toHaveLength(0);
      await c.client.close();
    } finally {
      await new Promise<void>((ok) => model.close(() => ok()));
    }
  });

  it("tasks/cancel kills the run: an empty ack, the task cancelled, the file it would have written never appears", async () => {
    const c = await connect(acme);
    const task = await startTask(c, "bash", { command: "echo started; sleep 3; echo late > late.txt" });
    const running = await pollUntil(c, task.taskId, (t) => ended(t) || String(t._meta?.["toolshed/output"] ?? "").includes("started"));
    expect(running.status).toBe("working");
    expect(await cancelTask(c, task.taskId)).toEqual({ _meta: expect.any(Object) });
    expect((await getTask(c, task.taskId)).status).toBe("cancelled");
    // Longer than the command would have needed: a live process would have written late.txt back by then.
    const plain = await connect(acme, { tasks: false });
    expect(text(await plain.client.callTool({ name: "bash", arguments: { command: "sleep 4; echo waited" } }))).toBe("waited\n");
    expect(await fileStatus(acme, "late.txt")).toBe(404);
    // Cancelling a task that already ended is acknowledged; it stays cancelled.
    await cancelTask(c, task.taskId);
    expect((await getTask(c, task.taskId)).status).toBe("cancelled");
    await c.client.close();
    await plain.client.close();
  });

  it("a client without the extension: calls answered in the request as before; tasks/* refused with -32021", async () => {
    const c = await connect(acme, { tasks: false });
    expect(c.client.getServerCapabilities()?.extensions).toMatchObject({ [TASKS]: {} });
    const r = await c.client.callTool({ name: "bash", arguments: { command: "echo plain" } });
    expect(text(r)).toBe("plain\n");
    expect(r._meta?.["toolshed/usage"]).toBeDefined();
    await expect(getTask(c, "caaaaaaaaaaaaaaaaaaaaaaaa")).rejects.toMatchObject({ code: -32021 });
    // A read is answered in the request even with the extension: the server decides, and a read is no task.
    const withTasks = await connect(acme);
    const read = await withTasks.client.callTool({ name: "ls", arguments: {} });
    expect(read.isError ?? false).toBe(false);
    await c.client.close();
    await withTasks.client.close();
  });

  it("another tenant's task id is not found, as a made-up one (-32602)", async () => {
    const mine = await connect(acme);
    const task = await startTask(mine, "bash", { command: "echo mine" });
    const other = await tenant("other26");
    const theirs = await connect(other);
    const messageOf = async (id: string) => {
      const e: any = await getTask(theirs, id).then(() => null, (err: unknown) => err);
      expect(e?.code).toBe(-32602);
      return String(e.message).replace(id, "<id>");
    };
    const madeUp = await messageOf("caaaaaaaaaaaaaaaaaaaaaaaa");
    expect(madeUp).toMatch(/NOT_FOUND/);
    expect(await messageOf(task.taskId)).toBe(madeUp);
    await expect(cancelTask(theirs, task.taskId)).rejects.toMatchObject({ code: -32602 });
    expect((await pollUntil(mine, task.taskId, ended)).status).toBe("completed");
    await mine.client.close();
    await theirs.client.close();
  });
});

describe("input requests on the 2026-07-28 door", () => {
  it("ask_user as a task: input_required with a form elicitation in inputRequests; tasks/update answers it once; the result is the answer", async () => {
    const c = await connect(acme, { onAsk: () => ({ action: "accept", content: { answer: "never called: the task's question goes by tasks/get" } }) });
    const task = await startTask(c, "ask_user", { question: "Which port?", options: ["80", "8080"] });
    expect(task.status).toBe("input_required");
    const waiting = await getTask(c, task.taskId);
    expect(waiting.status).toBe("input_required");
    const [key, request] = Object.entries(waiting.inputRequests as Record<string, any>)[0]!;
    expect(request).toEqual({ method: "elicitation/create", params: { mode: "form", message: "Which port?", requestedSchema: { type: "object", properties: { answer: expect.objectContaining({ type: "string", enum: ["80", "8080"] }) }, required: ["answer"] } } });
    await updateTask(c, task.taskId, { [key]: { action: "accept", content: { answer: "8080" } }, unknown: { action: "accept", content: { answer: "ignored" } } });
    const done = await pollUntil(c, task.taskId, ended);
    expect(done.status).toBe("completed");
    expect(text(done.result)).toBe("The user answered: 8080");
    expect(done.result.structuredContent).toMatchObject({ answer: "8080", option_index: 1 });
    // A second answer to the same key changes nothing.
    await updateTask(c, task.taskId, { [key]: { action: "accept", content: { answer: "80" } } });
    expect(text((await getTask(c, task.taskId)).result)).toBe("The user answered: 8080");
    await c.client.close();
  });

  it("ask_user without the extension, to a client that answers forms: the multi round-trip input request, answered by the client, then the answer as the result", async () => {
    const asked: string[] = [];
    const c = await connect(acme, { tasks: false, onAsk: (m) => (asked.push(m), { action: "accept", content: { answer: "Postgres" } }) });
    const r = await c.client.callTool({ name: "ask_user", arguments: { question: "Which database?" } });
    expect(asked).toEqual(["Which database?"]);
    expect(text(r)).toBe("The user answered: Postgres");
    expect(r.structuredContent).toEqual({ question: "Which database?", answer: "Postgres", option_index: null });
    // Declined: the tool's refusal, said to the model.
    const d = await connect(acme, { tasks: false, onAsk: () => ({ action: "decline" }) });
    const declined = await d.client.callTool({ name: "ask_user", arguments: { question: "Deploy?" } });
    expect(declined.isError).toBe(true);
    expect(text(declined)).toMatch(/^DENIED: .*declined/);
    await c.client.close();
    await d.client.close();
  });

  it("a held call as a task waits for the human (never asked of the client); approved with changed arguments, its result says what ran; a refusal is the tool's DENIED", async () => {
    const t = await tenant("gated26");
    expect((await post(`/v1/admin/tenants/${t.id}/policy`, { gate: [{ tool: "delete", when: "recursive" }] }, ADMIN, "PUT")).status).toBe(200);
    for (const f of ["build/a.o", "dist/b.js"]) await upload(t, f);
    const asked: string[] = [];
    const c = await connect(t, { onAsk: (m) => (asked.push(m), { action: "accept", content: { answer: "yes" } }) });
    const task = await startTask(c, "delete", { path: "build", recursive: true });
    expect(task.status).toBe("working");
    const held = await getTask(c, task.taskId);
    const pendingId = held._meta["toolshed/pending_id"] as string;
    expect(pendingId).toMatch(/^p/);
    expect(held.status).toBe("working");
    expect(held.inputRequests).toBeUndefined();
    expect(held.statusMessage).toContain(pendingId);
    expect(held.statusMessage).not.toMatch(/confirmed|header|skip/i);
    // The client cannot answer it: tasks/update's response to the pending call's key is ignored.
    await updateTask(c, task.taskId, { [pendingId]: { action: "accept", content: { answer: "approve" } } });
    expect((await getTask(c, task.taskId)).status).toBe("working");
    expect(await fileStatus(t, "build/a.o")).toBe(200);
    expect((await post(`/v1/workspaces/main/pending/${pendingId}`, { approved: true, note: "only dist", modified_args: { path: "dist", recursive: true } }, t.approver)).status).toBe(200);
    const done = await pollUntil(c, task.taskId, ended);
    expect(done.status).toBe("completed");
    expect(done.result.isError ?? false, text(done.result)).toBe(false);
    expect(text(done.result)).toMatch(/^A human approved this delete call with CHANGED arguments: what ran is not what you asked\..*Their note: only dist\n/);
    expect(await fileStatus(t, "dist/b.js")).toBe(404);
    expect(await fileStatus(t, "build/a.o")).toBe(200);

    const denied = await startTask(c, "delete", { path: "build", recursive: true });
    const id2 = (await getTask(c, denied.taskId))._meta["toolshed/pending_id"] as string;
    expect((await post(`/v1/workspaces/main/pending/${id2}`, { approved: false, note: "keep the build" }, t.approver)).status).toBe(200);
    const d = await pollUntil(c, denied.taskId, ended);
    // A tool's error is a completed task with an isError result (the extension keeps "failed" for JSON-RPC errors).
    expect(d.status).toBe("completed");
    expect(d.result.isError).toBe(true);
    expect(text(d.result)).toMatch(/^DENIED: .*keep the build/);
    expect(await fileStatus(t, "build/a.o")).toBe(200);
    expect(asked).toEqual([]);
    await c.client.close();
  });
});

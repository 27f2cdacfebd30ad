/**
 * MCP tasks (2025-11-25) with the official 1.x client (Client, its experimental tasks API) over
 * the real app and the real sandbox (local executor, bubblewrap; memory storage): a long bash as a
 * task (progress and partial output by tasks/get, the result by tasks/result, its sandbox time
 * metered once, by its run), cancel kills the run (the file it would have written never appears), ask_user answered
 * by elicitation, an approval with changed arguments and a refusal answered through the
 * pending-call API (its change of status sent as notifications/tasks/status while tasks/result
 * waits), a call without params.task as before, another tenant's or workspace's task id not found.
 * The setup is shared with the 2026-07-28 door's tasks test (./sandbox-app.ts).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema, McpError, TaskStatusNotificationSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answerCallTask, callTaskInput } from "../../../lib/run/tasks/input.js";
import { getCallTask } from "../../../lib/run/tasks/run.js";
import { ADMIN, sandboxApp, type Tenant } from "./sandbox-app.js";

const { app, deps, storage, usage, call, post, tenant, upload, fileStatus, close } = sandboxApp();

/** The official client on a workspace; `onAsk` makes it declare form elicitation and answer with it. */
async function connect(t: Tenant, ws = "main", onAsk?: (message: string) => ElicitResult): Promise<Client> {
  const client = new Client({ name: "tasks-test", version: "1.0.0" }, { capabilities: { tasks: { list: {}, cancel: {} }, ...(onAsk ? { elicitation: { form: {} } } : {}) } });
  if (onAsk) client.setRequestHandler(ElicitRequestSchema, async (req) => onAsk(req.params.message));
  const url = new URL(`http://127.0.0.1/v1/workspaces/${ws}/mcp`);
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${t.key}`, "x-session-id": "s1" } }, fetch: async (input, init) => app.request(String(input), init as RequestInit) }));
  return client;
}

/** tools/call with params.task: the CreateTaskResult's task. */
const startTask = async (client: Client, name: string, args: Record<string, unknown>) =>
  (await client.request({ method: "tools/call", params: { name, arguments: args, task: { ttl: 600_000 } } }, CreateTaskResultSchema)).task;
const text = (r: any) => (r.content as { type: string; text: string }[]).map((c) => c.text).join("");

let acme: Tenant;
beforeAll(async () => {
  acme = await tenant("acme", ["main", "other"]);
});
afterAll(close);

describe("bash as an MCP task", () => {
  it("answers at once; tasks/get shows the output so far while it runs; tasks/result is the command's result; its sandbox time is metered", async () => {
    const client = await connect(acme);
    const bash = (await client.listTools()).tools.find((t) => t.name === "bash")!;
    expect(bash.execution).toEqual({ taskSupport: "optional" });
    // A running sandbox sees no file uploaded after it started: the command's own sleep leaves time to see it run.
    const task = await startTask(client, "bash", { command: "echo first; sleep 4; echo second; echo done > out.txt", timeout: 120 });
    expect(task.status).toBe("working");
    let seen = await client.experimental.tasks.getTask(task.taskId);
    while (seen.status === "working" && !String(seen._meta?.["toolshed/output"] ?? "").includes("first")) seen = await client.experimental.tasks.getTask(task.taskId);
    expect(seen.status).toBe("working");
    expect(seen._meta?.["toolshed/output"]).toBe("first\n");
    expect(seen.statusMessage).toMatch(/^Running in the sandbox: /);
    expect(await fileStatus(acme, "out.txt")).toBe(404);
    const r = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(r.isError ?? false, text(r)).toBe(false);
    expect(text(r)).toBe("first\nsecond\n");
    expect(r.structuredContent).toMatchObject({ exit_code: 0, files_changed: ["out.txt"] });
    expect(r._meta?.["io.modelcontextprotocol/related-task"]).toEqual({ taskId: task.taskId });
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe("completed");
    expect(await fileStatus(acme, "out.txt")).toBe(200);
    // The call is metered when it starts (billed even if nobody reads its task); its run adds one
    // record where its result was stored, with its sandbox time: exactly one record carries
    // sandbox_ms however often the task is read (the task's reads add none).
    await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    const mine = usage.filter((u) => u.workspace === "main" && u.tenant === "acme");
    const calls = mine.filter((u) => u.tool === "bash");
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ ok: true, key: expect.any(String) });
    expect(calls[0]!.sandbox_ms).toBeUndefined();
    const timed = mine.filter((u) => u.sandbox_ms !== undefined);
    expect(timed).toHaveLength(1);
    expect(timed[0]).toMatchObject({ route: "background run", ok: true, key: calls[0]!.key });
    expect(timed[0]!.sandbox_ms).toBeGreaterThanOrEqual(4000); // its sleep 4
    expect(mine.filter((u) => u.route === "call task")).toHaveLength(0);
    await client.close();
  });

  it("tasks/cancel kills the run: the file it would have written never appears; a second cancel is refused", async () => {
    const client = await connect(acme);
    const task = await startTask(client, "bash", { command: "echo started; sleep 3; echo late > late.txt" });
    let seen = await client.experimental.tasks.getTask(task.taskId);
    while (seen.status === "working" && !String(seen._meta?.["toolshed/output"] ?? "").includes("started")) seen = await client.experimental.tasks.getTask(task.taskId);
    expect(seen.status).toBe("working");
    const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled.status).toBe("cancelled");
    // Longer than the command would have needed: a live process would have written late.txt back by then.
    expect(text(await client.callTool({ name: "bash", arguments: { command: "sleep 4; echo waited" } }))).toBe("waited\n");
    expect(await fileStatus(acme, "late.txt")).toBe(404);
    const r = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/^CANCELLED: .*killed.*not written back/);
    await expect(client.experimental.tasks.cancelTask(task.taskId)).rejects.toThrow(/already ended/);
    await client.close();
  });

  it("without params.task a call is answered as before, in the request", async () => {
    const client = await connect(acme);
    const r = await client.callTool({ name: "bash", arguments: { command: "echo plain" } });
    expect(text(r)).toBe("plain\n");
    expect(r.structuredContent).toMatchObject({ exit_code: 0, stdout: "plain\n" });
    expect(r._meta?.["toolshed/usage"]).toBeDefined();
    await client.close();
  });
});

describe("input requests", () => {
  it("ask_user as a task: input_required, the question as elicitation on tasks/result, the answer as the result", async () => {
    const asked: string[] = [];
    const client = await connect(acme, "main", (m) => (asked.push(m), { action: "accept", content: { answer: "Postgres" } }));
    const seen: string[] = [];
    let result: any;
    for await (const m of client.experimental.tasks.callToolStream({ name: "ask_user", arguments: { question: "Which database?" } }, CallToolResultSchema, { task: {} })) {
      if (m.type === "taskCreated" || m.type === "taskStatus") seen.push(m.task.status);
      if (m.type === "result") result = m.result;
      if (m.type === "error") throw m.error;
    }
    expect(seen.slice(0, 2)).toEqual(["input_required", "input_required"]);
    expect(asked).toEqual(["Which database?"]);
    expect(text(result)).toBe("The user answered: Postgres");
    expect(result.structuredContent).toEqual({ question: "Which database?", answer: "Postgres", option_index: null });
    await client.close();
  });

  it("a held call as a task: input_required until the human approves with changed arguments; the result says what ran", async () => {
    const t = await tenant("gated");
    expect((await post(`/v1/admin/tenants/${t.id}/policy`, { gate: [{ tool: "delete", when: "recursive" }] }, ADMIN, "PUT")).status).toBe(200);
    for (const f of ["build/a.o", "dist/b.js"]) await upload(t, f);
    const client = await connect(t, "main", () => ({ action: "accept", content: { answer: "never asked" } })); // approvals are never put to the client
    const task = await startTask(client, "delete", { path: "build", recursive: true });
    expect(task.status).toBe("input_required");
    const got = await client.experimental.tasks.getTask(task.taskId);
    const pendingId = got._meta?.["toolshed/pending_id"] as string;
    expect(pendingId).toMatch(/^p/);
    expect(got.statusMessage).not.toMatch(/confirmed|header|skip/i);
    const statuses: string[] = [];
    client.setNotificationHandler(TaskStatusNotificationSchema, (n) => void statuses.push(n.params.status));
    const waiting = client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect((await post(`/v1/workspaces/main/pending/${pendingId}`, { approved: true, note: "only dist", modified_args: { path: "dist", recursive: true } }, t.approver)).status).toBe(200);
    const r = await waiting;
    // tasks/result answers as SSE: the change of status went out as notifications/tasks/status before the result.
    expect(statuses).toEqual(["completed"]);
    expect(r.isError ?? false, text(r)).toBe(false);
    expect(text(r)).toMatch(/^A human approved this delete call with CHANGED arguments: what ran is not what you asked\..*Their note: only dist\n/);
    expect(r.structuredContent).toMatchObject({ path: "dist" });
    expect(await fileStatus(t, "dist/b.js")).toBe(404);
    expect(await fileStatus(t, "build/a.o")).toBe(200);

    // A refusal: the task fails with DENIED and the approver's note.
    const denied = await startTask(client, "delete", { path: "build", recursive: true });
    const id2 = (await client.experimental.tasks.getTask(denied.taskId))._meta?.["toolshed/pending_id"] as string;
    expect((await post(`/v1/workspaces/main/pending/${id2}`, { approved: false, note: "keep the build" }, t.approver)).status).toBe(200);
    const d = await client.experimental.tasks.getTaskResult(denied.taskId, CallToolResultSchema);
    expect(d.isError).toBe(true);
    expect(text(d)).toMatch(/^DENIED: .*keep the build/);
    expect((await client.experimental.tasks.getTask(denied.taskId)).status).toBe("failed");
    expect(await fileStatus(t, "build/a.o")).toBe(200);
    await client.close();
  });

  it("a held bash command as a task, approved with a changed command: the run is followed, and its result says first what the human changed", async () => {
    const t = await tenant("gatedbash");
    const client = await connect(t);
    const task = await startTask(client, "bash", { command: "rm -rf build" }); // a caution pattern: held by default
    expect(task.status).toBe("input_required");
    const pendingId = (await client.experimental.tasks.getTask(task.taskId))._meta?.["toolshed/pending_id"] as string;
    const held = (await (await call(`/v1/workspaces/main/pending/${pendingId}`, {}, t.key)).json()) as any;
    expect(held.args).toMatchObject({ command: "rm -rf build", run_in_background: true }); // what the approver sees is what would run
    const changed = { command: "echo kept > kept.txt; echo ran", run_in_background: true };
    expect((await post(`/v1/workspaces/main/pending/${pendingId}`, { approved: true, modified_args: changed }, t.approver)).status).toBe(200);
    const r = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(r.isError ?? false, text(r)).toBe(false);
    expect(text(r)).toMatch(/^A human approved this bash call with CHANGED arguments.*\n(.*\n)*ran\n$/);
    expect(r.structuredContent).toMatchObject({ exit_code: 0, files_changed: ["kept.txt"] });
    expect(await fileStatus(t, "kept.txt")).toBe(200);
    await client.close();
  });
});

describe("the task layer's interface for another door (tasks/get's input requests, tasks/update's answers)", () => {
  it("the question a task waits on is answered by its client once; an approval is never taken from it; another key's task is NOT_FOUND", async () => {
    const client = await connect(acme, "main", () => ({ action: "accept", content: { answer: "unused" } })); // declares elicitation
    const task = await startTask(client, "ask_user", { question: "Which port?", options: ["80", "8080"] });
    expect(task.status).toBe("input_required");
    const s = { storage, tenant: "acme", workspace: "main", key_id: acme.keyId, deps };
    const rec = await getCallTask(s, task.taskId);
    expect(await callTaskInput(s, rec)).toEqual({ kind: "question", pending_id: rec.pending_id, question: "Which port?", options: ["80", "8080"] });
    await expect(getCallTask({ ...s, key_id: "someone-else" }, task.taskId)).rejects.toMatchObject({ code: "NOT_FOUND" });
    const done = await answerCallTask(s, task.taskId, rec.pending_id!, { action: "accept", answer: "8080" });
    expect(done.status).toBe("completed");
    expect(done.outcome).toMatchObject({ ok: true, output: "The user answered: 8080", data: { answer: "8080", option_index: 1 } });
    await expect(answerCallTask(s, task.taskId, rec.pending_id!, { action: "accept", answer: "80" })).rejects.toMatchObject({ code: "PERMISSION_DENIED" });
    expect(text(await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema))).toBe("The user answered: 8080");

    const held = await startTask(client, "bash", { command: "rm -rf build" });
    const heldRec = await getCallTask(s, held.taskId);
    expect(await callTaskInput(s, heldRec)).toMatchObject({ kind: "approval", pending_id: heldRec.pending_id, tool: "bash" });
    await expect(answerCallTask(s, held.taskId, heldRec.pending_id!, { action: "accept", answer: "yes" })).rejects.toMatchObject({ code: "PERMISSION_DENIED" });
    expect((await getCallTask(s, held.taskId)).status).toBe("input_required");
    await client.close();
  });
});

describe("whose tasks", () => {
  it("a task id of another tenant, or of another workspace of the same tenant, is not found (as a made-up one); tasks/list shows only the caller's", async () => {
    const mine = await connect(acme);
    const task = await startTask(mine, "read", { file_path: "nothing-here.txt" });
    expect((await mine.experimental.tasks.listTasks()).tasks.map((x) => x.taskId)).toContain(task.taskId);
    const other = await tenant("othertenant");
    const theirs = await connect(other);
    const sameTenantOtherWs = await connect(acme, "other");
    const messageOf = async (c: Client, id: string) => {
      const e = await c.experimental.tasks.getTask(id).then(() => null, (err: unknown) => err);
      expect(e).toBeInstanceOf(McpError);
      expect((e as McpError).code).toBe(-32602);
      return (e as McpError).message.replace(id, "<id>");
    };
    const madeUp = await messageOf(theirs, "caaaaaaaaaaaaaaaaaaaaaaaa");
    expect(madeUp).toMatch(/NOT_FOUND/);
    expect(await messageOf(theirs, task.taskId)).toBe(madeUp);
    expect(await messageOf(sameTenantOtherWs, task.taskId)).toBe(madeUp);
    await expect(theirs.experimental.tasks.cancelTask(task.taskId)).rejects.toThrow(/NOT_FOUND/);
    expect((await theirs.experimental.tasks.listTasks()).tasks).toEqual([]);
    for (const c of [mine, theirs, sameTenantOtherWs]) await c.close();
  });
});

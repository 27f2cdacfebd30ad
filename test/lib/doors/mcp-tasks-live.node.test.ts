/**
 * MCP tasks in a session that holds a live sandbox (docs/live-sessions.md, "MCP tasks"), with the
 * official 1.x client (2025-11-25; and the 2.x client on 2026-07-28) over the real app, the real sandbox (local executor, bubblewrap) and the
 * in-memory live coordinator: a task-mode bash or run_code call without keep_alive runs in the
 * session's live sandbox, as the same call without a task would (its result delivered through the
 * task); keep_alive: false, a session without one, and a session whose sandbox ended run fresh, in
 * the background, as before (the last told what was lost); so does a call whose key has other access
 * (network) than the live sandbox was started with, which leaves it alone and says so first.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { memoryLiveCoordinator } from "../../../lib/exec/live/memory.js";
import { LIVE_TIMINGS } from "../../../lib/exec/live/service.js";
import { connect as connect2026, ended, pollUntil, startTask as startTask2026, text as text2026 } from "./mcp-2026-client.js";
import { ADMIN, sandboxApp, type Tenant } from "./sandbox-app.js";

const { app, call, post, tenant, usage, close } = sandboxApp({ liveCoordinator: memoryLiveCoordinator(LIVE_TIMINGS) });

/** The official client on workspace main, its requests in `session` (X-Session-Id). */
async function connect(t: Tenant, session: string): Promise<Client> {
  const client = new Client({ name: "tasks-live-test", version: "1.0.0" }, { capabilities: { tasks: { list: {}, cancel: {} } } });
  const url = new URL("http://127.0.0.1/v1/workspaces/main/mcp");
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${t.key}`, "x-session-id": session } }, fetch: async (input, init) => app.request(String(input), init as RequestInit) }));
  return client;
}

const text = (r: any) => (r.content as { type: string; text: string }[]).map((c) => c.text).join("");
/** tools/call with params.task: the task as created, and its result (tasks/result). */
async function asTask(client: Client, name: string, args: Record<string, unknown>) {
  const task = (await client.request({ method: "tools/call", params: { name, arguments: args, task: { ttl: 600_000 } } }, CreateTaskResultSchema)).task;
  const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  return { created: task.status, result: text(result), error: result.isError === true };
}

let acme: Tenant;
beforeAll(async () => {
  acme = await tenant("acme");
});
afterAll(close);

it("a task-mode bash or run_code call without keep_alive runs in the session's live sandbox; keep_alive: false, another session and a sandbox that ended run fresh in the background", async () => {
  const client = await connect(acme, "chat-live");
  const started = text(await client.callTool({ name: "bash", arguments: { command: "mkdir -p sub && cd sub && FOO=kept && echo mark > /tmp/live-mark", keep_alive: true } }));
  expect(started).toContain("[live sandbox started");

  // In the live sandbox: the shell's variable and cwd, its /tmp; answered as a keep_alive call's task is (completed when created).
  const bash = await asTask(client, "bash", { command: 'echo "$FOO $(pwd) $(cat /tmp/live-mark)"' });
  expect(bash).toEqual({ created: "completed", result: "kept /workspace/sub mark\n", error: false });
  const rc = await asTask(client, "run_code", { language: "bash", code: "cat /tmp/live-mark" });
  expect(rc).toEqual({ created: "completed", result: "mark\n", error: false });
  // Metered as the calls themselves (their command's sandbox time), as a keep_alive call is: no background run.
  expect(usage.filter((u) => u.route === "background run")).toEqual([]);
  expect(usage.filter((u) => u.tool === "run_code").map((u) => u.sandbox_ms !== undefined)).toEqual([true]);

  // keep_alive: false: fresh, in the background, as before (the live sandbox's /tmp is not there).
  const fresh = await asTask(client, "bash", { command: "cat /tmp/live-mark 2>/dev/null || echo no-mark", keep_alive: false });
  expect(fresh).toEqual({ created: "working", result: "no-mark\n", error: false });
  // Another session of the workspace holds none: fresh, in the background.
  const other = await connect(acme, "chat-other");
  expect(await asTask(other, "bash", { command: "cat /tmp/live-mark 2>/dev/null || echo no-mark" })).toEqual({ created: "working", result: "no-mark\n", error: false });
  await other.close();

  // The sandbox ended (DELETE): the next task-mode call is told what went and runs fresh, in the background.
  expect((await call("/v1/workspaces/main/sessions/chat-live/sandbox", { method: "DELETE" }, acme.key)).status).toBe(200);
  const after = await asTask(client, "bash", { command: "cat /tmp/live-mark 2>/dev/null || echo no-mark" });
  expect(after.created).toBe("working");
  expect(after.result).toMatch(/^\[live sandbox ended: you or the app you run in ended it on purpose .*Files are safe.*\]\n\[this call ran in a fresh sandbox: a call without keep_alive never starts a live one \(keep_alive: true does\)\]\nno-mark\n$/s);
  const again = await asTask(client, "bash", { command: "echo plain" });
  expect(again).toEqual({ created: "working", result: "plain\n", error: false });
  expect((await call("/v1/workspaces/main/sessions/chat-live/sandbox", {}, acme.key)).status).toBe(404); // nothing started
  await client.close();
});

it("on 2026-07-28 such a call is answered as it is, with no task, like a keep_alive: true call; another session's is a task, fresh in the background", async () => {
  const c = await connect2026(app, acme, { session: "chat-26" });
  expect(text2026(await c.client.callTool({ name: "bash", arguments: { command: "echo mark26 > /tmp/live-mark", keep_alive: true } }))).toContain("[live sandbox started");
  const joined = await c.client.callTool({ name: "run_code", arguments: { language: "bash", code: "cat /tmp/live-mark" } });
  expect(text2026(joined)).toBe("mark26\n");
  const o = await connect2026(app, acme, { session: "chat-26-other" });
  const task = await startTask2026(o, "run_code", { language: "bash", code: "cat /tmp/live-mark 2>/dev/null || echo no-mark" });
  expect(task.status).toBe("working");
  expect(text2026((await pollUntil(o, task.taskId, ended)).result)).toBe("no-mark\n");
  expect((await call("/v1/workspaces/main/sessions/chat-26/sandbox", { method: "DELETE" }, acme.key)).status).toBe(200);
  await o.client.close();
  await c.client.close();
});

it("a task-mode call held for approval runs, once approved, in the session's live sandbox, as the same call without a task would", async () => {
  const client = await connect(acme, "chat-held");
  expect(text(await client.callTool({ name: "bash", arguments: { command: "mkdir -p junk && echo held > /tmp/live-mark", keep_alive: true } }))).toContain("[live sandbox started");
  const task = (await client.request({ method: "tools/call", params: { name: "bash", arguments: { command: "rm -r junk && cat /tmp/live-mark" }, task: { ttl: 600_000 } } }, CreateTaskResultSchema)).task;
  expect(task.status).toBe("input_required");
  const pendingId = (await client.experimental.tasks.getTask(task.taskId))._meta?.["toolshed/pending_id"] as string;
  expect((await post(`/v1/workspaces/main/pending/${pendingId}`, { approved: true }, acme.approver)).status).toBe(200);
  const r = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  expect(r.isError ?? false).toBe(false);
  // the live sandbox's /tmp, then the write-back's line for the directory the command removed (the model reads only this text)
  expect(text(r)).toMatch(/^A human approved this bash call; it ran\.\nheld\n+\[directories removed: junk\/\]$/);
  expect((await call("/v1/workspaces/main/sessions/chat-held/sandbox", { method: "DELETE" }, acme.key)).status).toBe(200);
  await client.close();
});

it("a task-mode call whose key has other access (network) than the live sandbox was started with leaves it alone: fresh, in the background, and says so first", async () => {
  const netKey = (await post("/v1/admin/tenants/acme/keys", { scopes: ["read", "write", "execute", "network"] }, ADMIN)).body.key as string;
  const client = await connect(acme, "chat-access");
  expect(text(await client.callTool({ name: "bash", arguments: { command: "echo access > /tmp/live-mark", keep_alive: true } }))).toContain("[live sandbox started");
  const withNet = await connect({ ...acme, key: netKey }, "chat-access");
  const r = await asTask(withNet, "bash", { command: "cat /tmp/live-mark 2>/dev/null || echo no-mark" });
  expect(r.created).toBe("working");
  expect(r.result).toMatch(/^\[this session's live sandbox was started by another API key or with other network access, web domain lists or secrets than this call has: it was left alone.*\]\nno-mark\n$/s);
  // Left alone: the same key as its start still runs in it.
  expect(await asTask(client, "bash", { command: "cat /tmp/live-mark" })).toEqual({ created: "completed", result: "access\n", error: false });
  expect((await call("/v1/workspaces/main/sessions/chat-access/sandbox", { method: "DELETE" }, acme.key)).status).toBe(200);
  await withNet.close();
  await client.close();
});

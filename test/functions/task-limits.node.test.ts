/**
 * A subagent's calls count against its caller's calls_per_minute, as the caller's own calls do: a
 * `task` is no way around a key's limits (a scripted model on 127.0.0.1 asks for many calls at once).
 */
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, expect, it } from "vitest";
import { tools } from "../../functions/index.js";
import { createApp } from "../../lib/api/app.js";
import type { AppDeps } from "../../lib/api/deps.js";
import { memoryDriver } from "../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../lib/storage/kv-over-storage.js";
import { memoryLimits } from "../../lib/limits/store.js";

const ADMIN = "admin-task-limits";
const CALLS = 12;
let server: Server;
let baseUrl = "";
let toolResults: string[] = [];

beforeAll(async () => {
  let step = 0;
  server = createServer(async (req, res) => {
    let s = "";
    for await (const chunk of req) s += chunk;
    const { messages } = JSON.parse(s) as { messages: { role: string; content: string }[] };
    step += 1;
    // Step 1: many calls at once; step 2: the answer, after reading what the calls gave.
    const reply = step % 2 === 1
      ? { role: "assistant", content: null, tool_calls: Array.from({ length: CALLS }, (_, i) => ({ id: `c${i}`, type: "function", function: { name: "ls", arguments: "{}" } })) }
      : ((toolResults = messages.filter((m) => m.role === "tool").map((m) => m.content)), { role: "assistant", content: "done" });
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ choices: [{ message: reply }], usage: { prompt_tokens: 1, completion_tokens: 1 } }));
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
});
afterAll(() => new Promise<void>((ok) => server.close(() => ok())));

it("a key with calls_per_minute 5: its task's subagent runs the calls left in the budget; the rest answer RATE_LIMITED to the model, and the key's next call is 429", async () => {
  const app = createApp({ storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, webFetch: { allowLoopback: true }, limits: memoryLimits() } as AppDeps, tools);
  const adm = async (path: string, b: unknown, method = "POST") => (await app.request(path, { method, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(b) })).json() as Promise<any>;
  await adm("/v1/admin/tenants", { id: "acme" });
  await adm("/v1/admin/tenants/acme/model", { base_url: baseUrl, api_key: "sk-test-model-key-0123456789", model: "scripted" }, "PUT");
  const key = (await adm("/v1/admin/tenants/acme/keys", { name: "user-42", limits: { calls_per_minute: 5 } })).key as string;
  const h = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  expect((await app.request("/v1/workspaces", { method: "POST", headers: h, body: JSON.stringify({ id: "main" }) })).status).toBe(201); // 1 call
  const r = await app.request("/v1/workspaces/main/tools/task", { method: "POST", headers: h, body: JSON.stringify({ description: "list", prompt: "list the files" }) }); // 2 calls
  expect(r.status, await r.clone().text()).toBe(200);
  expect(toolResults).toHaveLength(CALLS);
  const limited = toolResults.filter((c) => c.includes("RATE_LIMITED"));
  // 3 calls were left in the budget (5 - the workspace - the task): the other calls were refused, each saying why.
  expect(toolResults.length - limited.length).toBeLessThanOrEqual(3);
  expect(limited.length).toBeGreaterThanOrEqual(CALLS - 3);
  expect(limited[0]).toContain("calls_per_minute");
  const after = await app.request("/v1/workspaces/main/tools/ls", { method: "POST", headers: h, body: "{}" });
  expect(after.status).toBe(429);
});

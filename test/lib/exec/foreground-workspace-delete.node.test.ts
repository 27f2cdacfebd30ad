/**
 * DELETE /v1/workspaces/{ws} ends a plain foreground command running in the workspace (docs/storage.md,
 * "What deletion keeps"; docs/live-sessions-internals.md, "A workspace's delete"): the runner's kill check (every second
 * from 4 s on) hears that the workspace is gone, kills the command and writes nothing back; the call
 * answers that the workspace was deleted while the command ran, and its concurrent_runs slot is free
 * once it answered. Before, the command ran on to its end or timeout holding the slot, then tried to
 * write back into the deleted workspace. The real app (memory storage) and the real runner in bubblewrap.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { memoryLimits } from "../../../lib/limits/store.js";
import { workspacePrefix } from "../../../lib/layout/paths.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import type { StorageDriver } from "../../../lib/storage/types.js";
import { sandboxApp, type Tenant } from "../doors/sandbox-app.js";
import { hostPids, until } from "../../infra/container/live-helpers.js";

const limits = memoryLimits();
/** Every key written once the delete began: none may be the gone workspace's. */
const writtenSince: string[] = [];
let deleting = false;
const inner = memoryDriver();
const storage: StorageDriver = { ...inner, put: (key, ...rest) => (deleting && writtenSince.push(key), inner.put(key, ...rest)) };
const { app, post, tenant, close } = sandboxApp({ limits, storage });
let t: Tenant;

async function tool(ws: string, name: string, args: unknown) {
  const r = await app.request(`/v1/workspaces/${ws}/tools/${name}`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify(args) });
  return { status: r.status, body: (await r.json()) as any };
}

/** A distinct command line: the host sees the sandbox's process by it. */
const SLEEPER = "sleep 7654323";

beforeAll(async () => {
  t = await tenant("wsdelfg", ["gone", "gone2", "other"]);
  await limits.set(t.id, { concurrent_runs: 1 });
});
afterAll(close);

it("a workspace's delete kills its running foreground command within seconds: the call says why, its slot is free, nothing is written into the workspace", async () => {
  const running = tool("gone", "bash", { command: `echo made > made.txt; ${SLEEPER}; echo never`, timeout: 60 });
  await until(() => hostPids(SLEEPER).length > 0, "the sleeper running");
  await new Promise((r) => setTimeout(r, 4500)); // past the 4 s before the runner's first kill check
  expect((await tool("other", "bash", { command: "true" })).body.error).toMatchObject({ code: "RATE_LIMITED", details: { limit: "concurrent_runs" } });

  deleting = true;
  const deletedAt = Date.now();
  const del = await post("/v1/workspaces/gone", undefined, t.key, "DELETE");
  expect(del.status, JSON.stringify(del.body)).toBe(200);

  const answer = await running;
  const tookMs = Date.now() - deletedAt;
  console.log(`the call answered ${tookMs} ms after the DELETE began`);
  expect(tookMs).toBeLessThan(10_000); // a kill check a second (1–2 s on a quiet machine), not the 60 s timeout
  expect(answer.status, JSON.stringify(answer.body)).toBe(404);
  expect(answer.body.error.code).toBe("NOT_FOUND");
  expect(answer.body.error.message).toMatch(/deleted while the command ran/);
  expect(answer.body.error.message).toMatch(/nothing of it was written back/);
  expect(answer.body.error.details).toMatchObject({ workspace: "gone" });
  expect(hostPids(SLEEPER)).toEqual([]);

  // The slot was released before the answer: the next command runs at once with a limit of 1.
  const next = await tool("other", "bash", { command: "echo next" });
  expect(next.status, JSON.stringify(next.body)).toBe(200);
  expect(next.body.output).toContain("next");

  await new Promise((r) => setTimeout(r, 500)); // whatever the call left to do after its answer
  expect((await storage.list({ prefix: workspacePrefix(t.id, "gone") })).objects.map((o) => o.key)).toEqual([]);
  expect(writtenSince.filter((k) => k.startsWith(workspacePrefix(t.id, "gone")))).toEqual([]);
}, 120_000);

it("a streamed foreground command (SSE) in a deleted workspace ends too: the call answers why within seconds, its slot is free (it waited for a result until its timeout and 15 minutes)", async () => {
  const sse = Promise.resolve(app.request(`/v1/workspaces/gone2/tools/bash`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", accept: "text/event-stream" }, body: JSON.stringify({ command: "sleep 7654324", timeout: 60 }) })).then((r) => r.text());
  await until(() => hostPids("sleep 7654324").length > 0, "the streamed sleeper running");
  await new Promise((r) => setTimeout(r, 4500));
  const deletedAt = Date.now();
  const since = writtenSince.length; // its run record was written before the delete
  expect((await post("/v1/workspaces/gone2", undefined, t.key, "DELETE")).status).toBe(200);
  const text = await sse;
  console.log(`the streamed call answered ${Date.now() - deletedAt} ms after the DELETE began`);
  expect(Date.now() - deletedAt).toBeLessThan(10_000);
  expect(text).toMatch(/deleted while the command ran/);
  expect(hostPids("sleep 7654324")).toEqual([]);
  const next = await tool("other", "bash", { command: "echo next" });
  expect(next.status, JSON.stringify(next.body)).toBe(200);
  await new Promise((r) => setTimeout(r, 500));
  // Nothing is written into the gone workspace but, at most, the streamed run's billed mark (it runs as a task: its end billed once
  // however often its runner sends its result, a leftover GC's tick collects; docs/storage.md).
  const left = (await storage.list({ prefix: workspacePrefix(t.id, "gone2") })).objects.map((o) => o.key);
  const billedMark = /\/x\/runs\/[^/]+\/billed$/;
  expect(left.filter((k) => !billedMark.test(k))).toEqual([]);
  expect(left.length).toBeLessThanOrEqual(1);
  expect(writtenSince.slice(since).filter((k) => k.startsWith(workspacePrefix(t.id, "gone2")) && !billedMark.test(k))).toEqual([]);
}, 120_000);

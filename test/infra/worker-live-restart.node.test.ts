/**
 * concurrent_runs across a restart of `wrangler dev` (issue #29): the app in the Workers runtime with the
 * real runner (as `npm start` runs it), stopped and started again over the same local state. The LIMITS
 * object keeps its leases in its storage; the LIVE objects keep their sessions in memory, so the restart
 * forgets the live sandbox that held the tenant's only slot. Before, that slot stayed held until its lease
 * ran out (15 minutes): the first keep_alive call after the restart was refused "already runs 1".
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { startWorkerWithRunner, type WorkerWithRunner } from "../support/worker-with-runner.js";
import { setupTenant } from "../support/wrangler-dev.js";

let toolshed: WorkerWithRunner;

beforeAll(async () => {
  toolshed = await startWorkerWithRunner("worker-live-restart");
}, 120_000);

afterAll(async () => {
  await toolshed?.stop();
});

it("after wrangler dev restarts, the first keep_alive call is not refused by the slot of the sandbox the restart forgot; a sandbox that runs keeps its own", async () => {
  const w = toolshed.worker;
  const t = await setupTenant(w, "restart1");
  const limits = await fetch(`${w.url}/v1/admin/tenants/restart1/limits`, { method: "PUT", headers: { authorization: `Bearer ${w.adminToken}`, "content-type": "application/json" }, body: JSON.stringify({ concurrent_runs: 1 }) });
  expect(limits.status).toBe(200);
  const live = (command: string, session: string) => t.call("bash", { command, keep_alive: true, idle_timeout_s: 120 }, session);
  const first = await live("echo one", "s1");
  expect(first.ok, JSON.stringify(first)).toBe(true);
  expect(first.output).toMatch(/live sandbox started/);

  await toolshed.restart(); // the same port, URL and state: the tenant, its key and its limits are there
  const second = await live("echo two", "s2");
  expect(second.ok, JSON.stringify(second)).toBe(true);
  expect(second.output).toContain("two");
  // The sandbox started after the restart runs: its slot is not taken from it.
  const third = await live("echo three", "s3");
  expect(third.ok).toBe(false);
  expect(third.error).toMatchObject({ code: "RATE_LIMITED", details: { limit: "concurrent_runs", running: 1 } });
  expect((await fetch(`${t.base}/sessions/s2/sandbox`, { method: "DELETE", headers: { authorization: `Bearer ${t.key}` } })).status).toBe(200);
}, 240_000);

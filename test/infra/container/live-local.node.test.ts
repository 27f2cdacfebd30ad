/** The local Invoke stand-in (local-server.ts) with a live sandbox: its Event invocation holds the tenant's share place for the sandbox's whole life. */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { startLocalInvokeServer } from "../../../infra/container/local-server.js";
import { signEvent } from "../../../lib/exec/runner-auth.js";
import type { ExecEvent } from "../../../lib/exec/types.js";
import { storageSyncClient } from "../../../lib/sync/storage.js";
import { RUN_MARGIN_MS, storageRunRecords } from "../../../lib/sync/run-records.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { RUNNER_SECRET } from "./helpers.js";
import { QueueChannel, until } from "./live-helpers.js";

const root = mkdtempSync(join(tmpdir(), "toolshed-live-local-"));
chmodSync(root, 0o711);
const driver = memoryDriver();
const channel = new QueueChannel();
const invoke = await startLocalInvokeServer({
  root, secret: RUNNER_SECRET, maxPerTenant: 1,
  handler: {
    syncClient: (r) => storageSyncClient(driver, r.tenant, r.workspace),
    runRecords: (r) => storageRunRecords(driver, r.tenant, r.workspace, r.idempotency_key, Date.now() + r.timeout_ms + RUN_MARGIN_MS),
    liveChannel: () => channel,
  },
});
afterAll(async () => {
  await invoke.close();
  rmSync(root, { recursive: true, force: true });
});

let seq = 0;
const event = (command: string, extra: Partial<ExecEvent> = {}): ExecEvent => ({
  version: 1, idempotency_key: `ll-${++seq}`, tenant: "t1", workspace: "w1", command, timeout_ms: 20_000, sync: { url: "http://127.0.0.1:1", token: "in-process" }, ...extra,
});
const post = async (e: ExecEvent, type: "Event" | "RequestResponse") =>
  fetch(`${invoke.url}/2015-03-31/functions/f/invocations`, { method: "POST", headers: { "x-amz-tenant-id": "t1", "x-amz-invocation-type": type }, body: JSON.stringify(await signEvent(RUNNER_SECRET, e)) });

it("a live sandbox started by an Event invocation holds its tenant's place until it ends", async () => {
  const started = await post(event("", { live: { generation: "g1", idle_ms: 60_000, max_life_ms: 60_000 } }), "Event");
  expect(started.status).toBe(202);
  const r = await channel.run(event("echo live"));
  expect(r.stdout).toBe("live\n");
  // The tenant's one place is the live sandbox's: another command of the tenant is throttled.
  const refused = await post(event("echo fresh"), "RequestResponse");
  expect(refused.status).toBe(429);
  expect(((await refused.json()) as { Reason: string }).Reason).toBe("TenantConcurrencyLimitExceeded");
  channel.push({ end: "deleted" });
  await until(() => channel.endedWith, "the live sandbox's end");
  const fresh = await until(async () => {
    const res = await post(event("echo fresh"), "RequestResponse");
    return res.status === 200 ? res : null; // the place is released as the handler answers, just after `ended`
  }, "the tenant's place");
  expect(((await fresh.json()) as { result: { stdout: string } }).result.stdout).toBe("fresh\n");
});

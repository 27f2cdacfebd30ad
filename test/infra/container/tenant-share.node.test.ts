/**
 * Fair share of the local Invoke stand-in (infra/container/tenant-share.ts), over real HTTP:
 * one tenant's 32 concurrent runs fill its own share, and another tenant's command still runs.
 */
import { LambdaClient } from "@aws-sdk/client-lambda";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startLocalInvokeServer, type LocalInvokeServer } from "../../../infra/container/local-server.js";
import { lambdaExecutor } from "../../../lib/exec/lambda.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import type { Executor, RunRequest, RunResult } from "../../../lib/exec/types.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { workspaceRecord } from "../../support/workspace-record.js";
import { RUNNER_SECRET, startSyncServer } from "./helpers.js";

const SYNC_SECRET = "tenant-share-sync-secret-0123456789";
const driver = memoryDriver();
let api: Awaited<ReturnType<typeof startSyncServer>>;
let invoke: LocalInvokeServer;
let exec: Executor;
let root = "";

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "toolshed-share-"));
  chmodSync(root, 0o711);
  api = await startSyncServer(driver, SYNC_SECRET);
  invoke = await startLocalInvokeServer({ root, secret: RUNNER_SECRET }); // the defaults: 32 at once, 8 per tenant
  // One attempt: the SDK would otherwise retry a throttled call.
  exec = lambdaExecutor({ client: new LambdaClient({ endpoint: invoke.url, region: "us-east-1", maxAttempts: 1, credentials: { accessKeyId: "x", secretAccessKey: "x" } }), functionName: "f", secret: RUNNER_SECRET });
});

afterAll(async () => {
  await invoke?.close();
  api?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

let seq = 0;
async function request(tenant: string, command: string, timeoutMs = 20_000): Promise<RunRequest> {
  const key = `share-${++seq}`;
  await workspaceRecord(driver, tenant, "main");
  const token = await mintSyncToken(SYNC_SECRET, { t: tenant, w: "main", r: key }, 300);
  return { version: 1, idempotency_key: key, tenant, workspace: "main", command, timeout_ms: timeoutMs, sync: { url: api.url, token } };
}

it("one tenant's 32 concurrent runs leave another tenant's run answering; the flood is told it is its own share", async () => {
  const settled: PromiseSettledResult<RunResult>[] = [];
  let rejectedAll!: () => void;
  const quickOnes = new Promise<void>((r) => (rejectedAll = r));
  const flood = await Promise.all(Array.from({ length: 32 }, () => request("flood", "sleep 60", 120_000)));
  const running = flood.map((req) =>
    exec.run(req).then(
      (value) => void settled.push({ status: "fulfilled", value }),
      (reason) => {
        settled.push({ status: "rejected", reason });
        if (settled.length === 24) rejectedAll();
      },
    ),
  );
  await quickOnes; // 24 answered at once: the tenant's share (8 of 32) was full
  expect(settled.every((s) => s.status === "rejected")).toBe(true);
  for (const s of settled) {
    const e = (s as PromiseRejectedResult).reason;
    expect(e).toMatchObject({ code: "RATE_LIMITED" });
    expect(String(e.message)).toContain("This tenant already runs 8 commands at once, its share of the command runner (8 of 32)");
  }
  // Another tenant is not starved: its command runs while the flood's 8 are still running.
  const other = await exec.run(await request("other", "echo still-here"));
  expect(other.stdout).toBe("still-here\n");
  expect(settled).toHaveLength(24);
  // Shutting the runner down kills the flood's commands; their calls end.
  await invoke.close();
  await Promise.all(running);
  expect(settled).toHaveLength(32);
}, 60_000);

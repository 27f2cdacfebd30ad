/**
 * What a command sees of the host names neither its tenant nor its workspace: a real bwrap
 * sandbox, reached as the API reaches it (signed Invoke → local stand-in → handler), reading
 * /proc/self/mountinfo, /proc/self/cgroup and /proc/1/cmdline (the adversary's report of issue #25).
 */
import { LambdaClient } from "@aws-sdk/client-lambda";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startLocalInvokeServer, type LocalInvokeServer } from "../../../infra/container/local-server.js";
import { lambdaExecutor } from "../../../lib/exec/lambda.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { workspaceRecord } from "../../support/workspace-record.js";
import { RUNNER_SECRET, startSyncServer } from "./helpers.js";

const SYNC_SECRET = "sandbox-view-sync-secret-0123456789";
// Ids no path or argument would contain by chance.
const TENANT = "tenantqz7x";
const WORKSPACE = "wsjv9kqp";
const driver = memoryDriver();
let api: Awaited<ReturnType<typeof startSyncServer>>;
let invoke: LocalInvokeServer;
let root = "";

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "toolshed-view-"));
  chmodSync(root, 0o711);
  api = await startSyncServer(driver, SYNC_SECRET);
  invoke = await startLocalInvokeServer({ root, secret: RUNNER_SECRET });
});

afterAll(async () => {
  await invoke?.close();
  api?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

it("mountinfo and the command lines of every process show neither the tenant id nor the workspace id", async () => {
  const exec = lambdaExecutor({ client: new LambdaClient({ endpoint: invoke.url, region: "us-east-1", credentials: { accessKeyId: "x", secretAccessKey: "x" } }), functionName: "f", secret: RUNNER_SECRET });
  await workspaceRecord(driver, TENANT, WORKSPACE);
  const run = async (command: string, key: string) =>
    exec.run({ version: 1, idempotency_key: key, tenant: TENANT, workspace: WORKSPACE, command, timeout_ms: 20_000, sync: { url: api.url, token: await mintSyncToken(SYNC_SECRET, { t: TENANT, w: WORKSPACE, r: key }, 300) } });
  // Cold, then warm (the slot's own tree): both views.
  for (const key of ["view-1", "view-2"]) {
    // /proc/self/cgroup: the sandbox's cgroup inside its environment's (environment-cgroup.ts), both named by the runner's pid and a count.
    const r = await run("cat /proc/self/mountinfo /proc/self/cgroup; for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done; pwd; env", key);
    expect(r.exit_code).toBe(0);
    expect(r.stdout).toContain(" /workspace "); // the mount is there, under a name that says nothing
    expect(r.stdout).not.toContain(TENANT);
    expect(r.stdout).not.toContain(WORKSPACE);
  }
  // The environment directory on the host is no clue either.
  expect(invoke.environmentDir(TENANT)).toMatch(/\/env-[0-9a-f]{16}$/);
});

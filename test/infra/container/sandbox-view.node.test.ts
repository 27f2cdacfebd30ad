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

/** The part of `a` after the longest prefix it shares with `b`. */
/** `a` after the part it shares with `b`, backed off to the start of the name part they differ in (two random parts may begin alike). */
const afterCommon = (a: string, b: string): string => {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  while (i > 0 && /[0-9a-f]/.test(a[i - 1]!)) i--;
  return a.slice(i);
};

it("the names of a sandbox's host objects tell it nothing of how many sandboxes the other tenants ran", async () => {
  const exec = lambdaExecutor({ client: new LambdaClient({ endpoint: invoke.url, region: "us-east-1", credentials: { accessKeyId: "x", secretAccessKey: "x" } }), functionName: "f", secret: RUNNER_SECRET });
  const OTHER = "tenantb4ck";
  await workspaceRecord(driver, OTHER, WORKSPACE);
  const run = async (tenant: string, command: string, key: string) =>
    exec.run({ version: 1, idempotency_key: key, tenant, workspace: WORKSPACE, command, network: true, timeout_ms: 20_000, sync: { url: api.url, token: await mintSyncToken(SYNC_SECRET, { t: tenant, w: WORKSPACE, r: key }, 300) } });
  // What a command with network reads of its host: its egress proxy's directory (a bind's source in
  // mountinfo, field 4), its shell directory's, and its cgroup (shown when bwrap made its cgroup
  // namespace before the runner moved it in; "/" otherwise).
  const look = "awk '$5 ~ /^\\/run\\/toolshed/ {print \"mount \" $5 \" \" $4}' /proc/self/mountinfo; sed -n 's/^[0-9]*:memory:/cgroup /p' /proc/self/cgroup";
  const names = async (key: string) => {
    const r = await run(TENANT, look, key);
    expect(r.exit_code).toBe(0);
    return new Map(r.stdout.trim().split("\n").map((l) => [l.split(" ").slice(0, -1).join(" "), l.split(" ").at(-1)!]));
  };
  const before = await names("names-1");
  for (const key of ["other-1", "other-2", "other-3"]) expect((await run(OTHER, "true", key)).exit_code).toBe(0);
  const after = await names("names-2");
  expect([...before.keys()]).toEqual(expect.arrayContaining(["mount /run/toolshed/egress", "cgroup"])); // the command had network: its proxy is bound
  for (const [what, name] of before) {
    const again = after.get(what)!;
    if (name === again || name === "/" || again === "/") continue; // the same path for every run (node), or that cgroup not shown
    // Two names of one kind differ in a random part (64 bits), not in a count of the runner's.
    expect({ what, differs: afterCommon(name, again) }).toEqual({ what, differs: expect.stringMatching(/^[0-9a-f]{16}/) });
    expect({ what, differs: afterCommon(again, name) }).toEqual({ what, differs: expect.stringMatching(/^[0-9a-f]{16}/) });
  }
});

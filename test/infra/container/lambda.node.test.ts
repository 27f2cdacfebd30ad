/**
 * End to end over the wire: lambdaExecutor → (Invoke API) local stand-in → real handler →
 * (HTTP, bearer sync token) sync endpoint → storage. No storage client in the runner.
 */
import { LambdaClient } from "@aws-sdk/client-lambda";
import { chmodSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalInvokeServer, type LocalInvokeServer } from "../../../infra/container/local-server.js";
import { lambdaExecutor } from "../../../lib/exec/lambda.js";
import { killTask, pollTask, startTask } from "../../../lib/exec/tasks.js";
import { storageSyncClient } from "../../../lib/sync/storage.js";
import { handleSync } from "../../../lib/sync/server.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import type { Executor, RunRequest } from "../../../lib/exec/types.js";
import { filesPrefix, runPrefix } from "../../../lib/layout/paths.js";
import { runIdFor } from "../../../lib/sync/run-records.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { workspaceRecord } from "../../support/workspace-record.js";
import { RUNNER_SECRET } from "./helpers.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";

const SECRET = "test-sync-secret-0123456789";
const driver = memoryDriver();
let syncServer: Server;
let syncUrl = "";
let invoke: LocalInvokeServer;
let root = "";
let exec: Executor;
let requests = 0;
let runRequests = 0;

const client = (endpoint: string, maxAttempts = 3) =>
  new LambdaClient({ endpoint, region: "us-east-1", maxAttempts, credentials: { accessKeyId: "test", secretAccessKey: "test" } });

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "toolshed-lambda-"));
  chmodSync(root, 0o711); // the sandbox uid traverses to its tree
  syncServer = createServer(async (req, res) => {
    if (req.url?.startsWith("/v1/sync/run")) runRequests++;
    else requests++;
    const hasBody = req.method !== "GET" && req.method !== "HEAD";
    const request = new Request(`http://127.0.0.1${req.url}`, {
      method: req.method!,
      headers: req.headers as Record<string, string>,
      ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream, duplex: "half" } : {}),
    } as RequestInit);
    const r = await handleSync(request, { driver, kv: storageKeyValue(memoryDriver(), "kv/"), secret: SECRET });
    res.writeHead(r.status, Object.fromEntries(r.headers));
    if (r.body) for await (const c of r.body as unknown as AsyncIterable<Uint8Array>) res.write(c);
    res.end();
  });
  await new Promise<void>((r) => syncServer.listen(0, "127.0.0.1", r));
  syncUrl = `http://127.0.0.1:${(syncServer.address() as { port: number }).port}`;
  invoke = await startLocalInvokeServer({ secret: RUNNER_SECRET, root, functionName: "toolshed-runner" });
  exec = lambdaExecutor({ secret: RUNNER_SECRET, client: client(invoke.url), functionName: "toolshed-runner" });
});

afterAll(async () => {
  await invoke.close();
  syncServer.close();
  rmSync(root, { recursive: true, force: true });
});

let seq = 0;
async function request(tenant: string, workspace: string, command: string, extra: Partial<RunRequest> = {}): Promise<RunRequest> {
  const key = `call-${++seq}`;
  await workspaceRecord(driver, tenant, workspace);
  const token = await mintSyncToken(SECRET, { t: tenant, w: workspace, r: key }, 300);
  return { version: 1, idempotency_key: key, tenant, workspace, command, timeout_ms: 20_000, sync: { url: syncUrl, token }, ...extra };
}
const files = (tenant: string, ws: string) => storageSyncClient(driver, tenant, ws);
const text = async (tenant: string, ws: string, path: string) => {
  const f = await files(tenant, ws).fetch(path);
  return f ? new Response(f.body).text() : null;
};

describe("lambda executor through the local Invoke stand-in", () => {
  it("runs a command that edits, creates and deletes; the workspace shows it", async () => {
    const ws = files("acme", "main");
    await ws.put("a.txt", new TextEncoder().encode("one\n"), {});
    await ws.put("old.txt", new TextEncoder().encode("old\n"), {});
    const r = await exec.run(await request("acme", "main", "echo two >> a.txt; echo n > new.txt; rm old.txt; cat a.txt"));
    expect(r.stdout).toBe("one\ntwo\n");
    expect(r.files_changed).toEqual(["a.txt", "new.txt"]);
    expect(r.files_deleted).toEqual(["old.txt"]);
    expect(await text("acme", "main", "a.txt")).toBe("one\ntwo\n");
    expect(await text("acme", "main", "old.txt")).toBeNull();
    // TenantId reached the stand-in: this tenant has an environment, others do not.
    expect(invoke.environment("acme")).toBeDefined();
    expect(invoke.environment("other")).toBeUndefined();
  });

  it("a retried invocation with the same idempotency key does not run the command twice", async () => {
    const req = await request("acme", "main", "echo tick >> ticks.txt");
    const a = await exec.run(req);
    const b = await exec.run(req);
    expect(b).toEqual(a);
    expect(await text("acme", "main", "ticks.txt")).toBe("tick\n");
  });

  it("works for workspaces larger than the 6 MB Invoke payload, and warm calls fetch nothing", async () => {
    const ws = files("acme", "big");
    const mb = new Uint8Array(2 * 1024 * 1024).fill(97);
    for (let i = 0; i < 4; i++) await ws.put(`blob${i}.bin`, mb, {});
    const r = await exec.run(await request("acme", "big", "cat blob*.bin | wc -c"));
    expect(r.stdout.trim()).toBe(String(8 * 1024 * 1024));
    expect(r.sync.downloaded_bytes).toBe(8 * 1024 * 1024);
    const [before, runBefore] = [requests, runRequests];
    const warm = await exec.run(await request("acme", "big", "ls | wc -l"));
    expect(warm.sync.downloaded_files).toBe(0);
    expect(requests - before).toBe(1); // the manifest (with the execute bits, and the run's claim riding on it), nothing else
    expect(runRequests - runBefore).toBe(1); // the run record: its result (the claim rode on the manifest request)
  });

  it("writes back a large file by streaming it, and the next call does not fetch it again", async () => {
    const r = await exec.run(await request("acme", "big", "head -c 6000000 /dev/urandom > made.bin; sha256sum made.bin"));
    expect(r.files_changed).toEqual(["made.bin"]);
    expect(r.sync.uploaded_bytes).toBe(6_000_000);
    const f = await files("acme", "big").fetch("made.bin");
    const bytes = new Uint8Array(await new Response(f!.body).arrayBuffer());
    expect(bytes.length).toBe(6_000_000);
    const digest = Buffer.from(await crypto.subtle.digest("SHA-256", bytes)).toString("hex");
    expect(r.stdout.split(" ")[0]).toBe(digest);
    const again = await exec.run(await request("acme", "big", "sha256sum made.bin"));
    expect(again.sync.downloaded_files).toBe(0);
    expect(again.stdout).toBe(r.stdout);
  });

  it("the sync token and the handler's secrets are invisible to the command", async () => {
    process.env.AWS_SECRET_ACCESS_KEY = "FAKE-SECRET-123";
    try {
      const req = await request("acme", "main", "env; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < $f; done; grep -rl \"$(printf 'FAKE-SEC''RET')\" /etc /tmp /workspace 2>/dev/null; echo end");
      const r = await exec.run(req);
      expect(r.stdout).toContain("end\n");
      expect(r.output).not.toContain(req.sync.token);
      expect(r.output).not.toContain(req.sync.token.split(".")[1]!);
      expect(r.output).not.toContain("FAKE-SECRET-123");
      expect(r.output).not.toContain(syncUrl);
    } finally {
      delete process.env.AWS_SECRET_ACCESS_KEY;
    }
  });

  /** The directory under `top` (not under `except`) holding a file named `name`, if any. */
  const runningTree = (top: string, name: string, except: string): string | undefined => {
    const found = (readdirSync(top, { recursive: true }) as string[]).find((p) => p.endsWith(`/${name}`) && !join(top, p).startsWith(`${except}/`));
    return found ? join(top, found, "..") : undefined;
  };

  it("a retry that lands in another execution environment does not run the command twice", async () => {
    // A second stand-in = other execution environments (own roots, no memory), the same storage.
    const elsewhere = await startLocalInvokeServer({ secret: RUNNER_SECRET, root: join(root, "elsewhere"), functionName: "toolshed-runner", handler: { claimWaitMs: 600 } });
    try {
      const there = lambdaExecutor({ secret: RUNNER_SECRET, client: client(elsewhere.url), functionName: "toolshed-runner" });
      const req = await request("acme", "main", "echo once >> retried.txt; echo ran");
      const a = await exec.run(req);
      expect(await there.run(req)).toEqual(a);
      expect(await text("acme", "main", "retried.txt")).toBe("once\n");
      // While the first attempt still runs, the retry waits (bounded), then says what to do. The first
      // runs until the test lets it end (a `go` file the test puts in its tree): a fixed sleep lost
      // the race on a loaded machine, the retry arriving after the first had ended.
      const slow = await request("acme", "main", "echo once >> slow.txt; while [ ! -e go ]; do sleep 0.05; done; rm go; echo slow-done");
      const first = exec.run(slow);
      const claim = `${runPrefix("acme", "main", await runIdFor("acme", "main", slow.idempotency_key))}claim.json`;
      await expect.poll(() => driver.head(claim), { timeout: 20_000, interval: 50 }).not.toBeNull();
      // The first attempt's tree, on this environment's disk: where its command wrote slow.txt.
      await expect.poll(() => runningTree(root, "slow.txt", join(root, "elsewhere")), { timeout: 20_000, interval: 50 }).toBeTruthy();
      const tree = runningTree(root, "slow.txt", join(root, "elsewhere"))!;
      const conflict = await there.run(slow).catch((e) => e);
      writeFileSync(join(tree, "go"), "");
      expect(conflict).toMatchObject({ code: "CONFLICT" });
      expect(String(conflict.message)).toContain("bash_output task_id");
      const followed = await pollTask(driver, { tenant: "acme", workspace: "main", task_id: conflict.details.task_id }, { wait_ms: 15_000 });
      expect(followed).toMatchObject({ status: "completed", output: "slow-done\n" });
      expect(await there.run(slow)).toEqual(await first);
      expect(await text("acme", "main", "slow.txt")).toBe("once\n");
    } finally {
      await elsewhere.close();
    }
  });

  it("background tasks: asynchronous Invoke, then poll and kill in storage without invoking the function", async () => {
    const sent: string[] = [];
    const c = client(invoke.url);
    const send = c.send.bind(c);
    c.send = ((cmd: { input: { InvocationType?: string } }) => (sent.push(cmd.input.InvocationType ?? ""), send(cmd as never))) as typeof c.send;
    const bg = lambdaExecutor({ secret: RUNNER_SECRET, client: c, functionName: "toolshed-runner" });
    const seen = invoke.invocations.length;
    const ref = (task_id: string, tenant = "acme", workspace = "main") => ({ tenant, workspace, task_id });
    const { task_id } = await startTask(driver, bg, await request("acme", "main", "sleep 2; echo done"));
    const first = await pollTask(driver, ref(task_id));
    expect(first.status).toBe("running");
    const done = await pollTask(driver, ref(task_id), { wait_ms: 15_000 });
    expect(done.status).toBe("completed");
    expect(first.output + done.output).toBe("done\n");
    const long = await startTask(driver, bg, await request("acme", "main", "echo changed > bg-long.txt; sleep 1000"));
    await new Promise((r) => setTimeout(r, 1500));
    expect(await killTask(driver, ref(long.task_id))).toEqual({ status: "killed" });
    const killed = await pollTask(driver, ref(long.task_id));
    expect(killed.status).toBe("killed");
    expect(killed.result!.discarded).toEqual(["bg-long.txt"]);
    expect(await text("acme", "main", "bg-long.txt")).toBeNull();
    // Another tenant or workspace cannot see the task.
    await expect(pollTask(driver, ref(task_id, "globex"))).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(killTask(driver, ref(long.task_id, "acme", "other"))).rejects.toMatchObject({ code: "NOT_FOUND" });
    // Two asynchronous invocations reached the function, nothing else: it keeps no task state.
    expect(sent).toEqual(["Event", "Event"]);
    expect(invoke.invocations.slice(seen)).toEqual([{ tenant: "acme", type: "Event" }, { tenant: "acme", type: "Event" }]);
  });
});

describe("lambda executor: errors become clear tool errors", () => {
  it("a request the function refuses keeps its code", async () => {
    await expect(exec.run(await request("acme", "main", "true", { timeout_ms: 0 }))).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });

  it("a missing function is UNAVAILABLE", async () => {
    const wrong = lambdaExecutor({ secret: RUNNER_SECRET, client: client(invoke.url, 1), functionName: "nope" });
    await expect(wrong.run(await request("acme", "main", "true"))).rejects.toMatchObject({ code: "UNAVAILABLE" });
  });

  it("an unreachable endpoint is UNAVAILABLE", async () => {
    const down = lambdaExecutor({ secret: RUNNER_SECRET, client: client("http://127.0.0.1:9", 1), functionName: "toolshed-runner" });
    await expect(down.run(await request("acme", "main", "true"))).rejects.toMatchObject({ code: "UNAVAILABLE" });
  });

  it("throttling is RATE_LIMITED and the function's own timeout is TIMEOUT", async () => {
    const throttled = await startLocalInvokeServer({ secret: RUNNER_SECRET, root: join(root, "throttled"), maxConcurrent: 0 });
    const slow = await startLocalInvokeServer({ secret: RUNNER_SECRET, root: join(root, "slow"), functionTimeoutMs: 800 });
    try {
      const t = lambdaExecutor({ secret: RUNNER_SECRET, client: client(throttled.url, 1), functionName: "f" });
      await expect(t.run(await request("acme", "main", "true"))).rejects.toMatchObject({ code: "RATE_LIMITED" });
      const s = lambdaExecutor({ secret: RUNNER_SECRET, client: client(slow.url, 1), functionName: "f" });
      await expect(s.run(await request("acme", "main", "sleep 3"))).rejects.toMatchObject({ code: "TIMEOUT" });
    } finally {
      await throttled.close();
      await slow.close();
    }
  });

  it("a bad or foreign sync token cannot reach the workspace", async () => {
    const req = await request("acme", "main", "true");
    const r = await exec.run({ ...req, idempotency_key: "forged", sync: { url: syncUrl, token: req.sync.token.replace(/.$/, (c) => (c === "A" ? "B" : "A")) } }).catch((e) => e);
    expect(r).toMatchObject({ code: "INTERNAL" });
    expect(String(r.message)).toContain("401");
  });
});

describe("lambda executor: the runner with egress", () => {
  it("sends calls with network to networkFunctionName and the others to functionName", async () => {
    // The stand-in serves only "toolshed-runner": reaching another name proves the routing.
    const routed = lambdaExecutor({ secret: RUNNER_SECRET, client: client(invoke.url, 1), functionName: "toolshed-runner", networkFunctionName: "toolshed-runner-net" });
    const plain = await routed.run(await request("acme", "main", "echo plain"));
    expect(plain.stdout).toBe("plain\n");
    await expect(routed.run(await request("acme", "main", "echo net", { network: true }))).rejects.toMatchObject({
      code: "UNAVAILABLE",
      message: expect.stringContaining("toolshed-runner-net is not deployed"),
    });
  });
});

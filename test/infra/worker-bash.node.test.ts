/**
 * bash end to end as `npm start` runs it: the app in the Workers runtime (wrangler dev) calls the
 * runner through @aws-sdk/client-lambda InvokeCommand against the local Invoke stand-in, and the
 * runner reaches the workspace only through the Worker's /v1/sync (a short-lived token).
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startLocalInvokeServer, type LocalInvokeServer } from "../../infra/container/local-server.js";
import { freePort, setupTenant, startWorker, type WorkerProcess } from "../support/wrangler-dev.js";

let w: WorkerProcess;
let runner: LocalInvokeServer;
let root: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "toolshed-worker-bash-"));
  chmodSync(root, 0o711);
  runner = await startLocalInvokeServer({ root, port: await freePort() });
  const port = await freePort();
  w = await startWorker({
    port,
    vars: { TOOLSHED_SYNC_SECRET: "worker-bash-test-secret-0123456789", TOOLSHED_RUNNER_URL: runner.url, TOOLSHED_PUBLIC_URL: `http://127.0.0.1:${port}` },
  });
}, 120_000);

afterAll(async () => {
  await w?.stop();
  await runner?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

it("runs a command from the Worker through the Invoke API and writes its changes back", async () => {
  const t = await setupTenant(w, "wb");
  expect((await t.call("write", { file_path: "a.txt", content: "one\n" })).ok).toBe(true);
  const r = await t.call("bash", { command: "cat a.txt && echo two >> a.txt && echo new > b.txt && echo done" });
  expect(r.ok).toBe(true);
  expect(r.output).toContain("one\ndone");
  expect(r.data.exit_code).toBe(0);
  expect(r.data.files_changed).toEqual(expect.arrayContaining(["a.txt", "b.txt"]));
  const a = await t.call("read", { file_path: "a.txt" });
  expect(a.output).toBe("     1\tone\n     2\ttwo");
  const b = await t.call("read", { file_path: "b.txt" });
  expect(b.output).toBe("     1\tnew");
  const py = await t.call("run_code", { language: "python", code: "print(6 * 7)" });
  expect(py.data.stdout).toBe("42\n");
}, 120_000);

/**
 * Toolshed as `npm start` runs it, for end-to-end tests: the app in the Workers runtime (wrangler dev,
 * local R2/KV/Durable Objects) and the real runner behind the local Lambda Invoke stand-in
 * (infra/container/local-server.ts), signed with the test runner secret, in a fresh directory.
 * `stop()` ends both and removes the directory.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startLocalInvokeServer, type LocalInvokeServer } from "../../infra/container/local-server.js";
import { RUNNER_SECRET } from "../infra/container/helpers.js";
import { freePort, startWorker, type WorkerProcess } from "./wrangler-dev.js";

export interface WorkerWithRunner {
  worker: WorkerProcess;
  runner: LocalInvokeServer;
  stop(): Promise<void>;
}

/** `name` names the directory and the sync secret; `vars` are the Worker's other settings. */
export async function startWorkerWithRunner(name: string, vars: Record<string, string> = {}): Promise<WorkerWithRunner> {
  const root = mkdtempSync(join(tmpdir(), `toolshed-${name}-`));
  chmodSync(root, 0o711);
  const runner = await startLocalInvokeServer({ root, port: await freePort(), secret: RUNNER_SECRET });
  const port = await freePort();
  let worker: WorkerProcess;
  try {
    worker = await startWorker({
      port,
      vars: { TOOLSHED_SYNC_SECRET: `${name}-test-secret-0123456789`, TOOLSHED_RUNNER_SECRET: RUNNER_SECRET, TOOLSHED_RUNNER_URL: runner.url, TOOLSHED_PUBLIC_URL: `http://127.0.0.1:${port}`, ...vars },
    });
  } catch (e) {
    await runner.close();
    rmSync(root, { recursive: true, force: true });
    throw e;
  }
  return {
    worker,
    runner,
    async stop() {
      await worker.stop();
      await runner.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

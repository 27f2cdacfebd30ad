/**
 * Toolshed as `npm start` runs it, for end-to-end tests: the app in the Workers runtime (wrangler dev,
 * local R2/KV/Durable Objects) and the real runner behind the local Lambda Invoke stand-in
 * (infra/container/local-server.ts), signed with the test runner secret, in a fresh directory.
 * `stop()` ends both and removes the directory. `restart()` stops wrangler dev and starts it again on
 * the same port over the same local state (as a reload or `npm start` again): the runner and its
 * sandboxes go on.
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
  /** Stops wrangler dev and starts it again over the same state and port; `worker` is the new one. */
  restart(): Promise<WorkerProcess>;
  stop(): Promise<void>;
}

/** `name` names the directory and the sync secret; `vars` are the Worker's other settings. */
export async function startWorkerWithRunner(name: string, vars: Record<string, string> = {}): Promise<WorkerWithRunner> {
  const root = mkdtempSync(join(tmpdir(), `toolshed-${name}-`));
  chmodSync(root, 0o711);
  const runner = await startLocalInvokeServer({ root, port: await freePort(), secret: RUNNER_SECRET });
  const port = await freePort();
  const state = mkdtempSync(join(tmpdir(), `toolshed-${name}-state-`));
  const admin = { TOOLSHED_ADMIN_TOKEN: `admin-${Math.random().toString(36).slice(2)}` };
  const start = () => startWorker({
    port, state,
    vars: { ...admin, TOOLSHED_SYNC_SECRET: `${name}-test-secret-0123456789`, TOOLSHED_RUNNER_SECRET: RUNNER_SECRET, TOOLSHED_RUNNER_URL: runner.url, TOOLSHED_PUBLIC_URL: `http://127.0.0.1:${port}`, ...vars },
  });
  const removeAll = () => {
    rmSync(root, { recursive: true, force: true });
    rmSync(state, { recursive: true, force: true });
  };
  let worker: WorkerProcess;
  try {
    worker = await start();
  } catch (e) {
    await runner.close();
    removeAll();
    throw e;
  }
  const self: WorkerWithRunner = {
    worker,
    runner,
    async restart() {
      await self.worker.stop();
      return (self.worker = await start());
    },
    async stop() {
      await self.worker.stop();
      await runner.close();
      removeAll();
    },
  };
  return self;
}

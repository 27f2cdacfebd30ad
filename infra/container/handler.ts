/**
 * The container function: event (ExecEvent) → ExecResponse. AWS Lambda calls `handler`;
 * the local Invoke stand-in and the local executor call createHandler() directly.
 *
 * The handler holds no storage or cloud credentials: it reaches the workspace through the
 * sync endpoint with the run's short-lived token, which stays in this process's memory
 * (the sandbox sees neither this process nor its environment).
 */
import { chmodSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { isToolError, ToolError } from "../../lib/errors.js";
import { httpSyncClient } from "../../lib/exec/sync-http.js";
import type { ExecEvent, ExecResponse, RunRequest, RunResult, SyncClient } from "../../lib/exec/types.js";
import { TaskManager } from "./background.js";
import { ResultStore } from "./idempotency.js";
import { runCommand, validateRequest, type RunnerDeps } from "./runner.js";
import { assertTraversable, bwrapSandbox, defaultHostIds, type Sandbox } from "./sandbox.js";
import { TreeCache } from "./tree.js";

export interface HandlerOptions {
  /** Private directory of the handler: slots, logs, stored results. */
  root: string;
  /** Allow start/poll/kill (a long-lived process); false on Lambda. */
  background?: boolean;
  /** How to reach the workspace (default: HTTP sync client with the request's token). */
  syncClient?: (req: RunRequest) => SyncClient;
  sandbox?: Sandbox;
  bwrapPath?: string;
  maxIdleSlots?: number;
}

export interface InvokeContext {
  /** The Lambda context's tenant (TenantId of the Invoke). */
  tenantId?: string;
}

export type Handler = ((event: ExecEvent, context?: InvokeContext) => Promise<ExecResponse>) & {
  tasks: TaskManager | null;
  cache: TreeCache;
};

const errorOf = (e: unknown): ExecResponse => {
  if (isToolError(e)) return { ok: false, error: { code: e.code, message: e.message, details: e.details } };
  return { ok: false, error: { code: "INTERNAL", message: `The command runner failed: ${String((e as Error)?.message ?? e)}` } };
};

export function createHandler(opts: HandlerOptions): Handler {
  const owner = defaultHostIds();
  // Traversable (not listable) by the sandbox uid, which bwrap runs as to bind the tree.
  mkdirSync(opts.root, { recursive: true });
  chmodSync(opts.root, 0o711);
  if (owner) assertTraversable(opts.root);
  const cache = new TreeCache(join(opts.root, "slots"), owner, opts.maxIdleSlots);
  const sandbox = opts.sandbox ?? bwrapSandbox({ stateDir: join(opts.root, "sandbox"), ...(opts.bwrapPath ? { bwrapPath: opts.bwrapPath } : {}) });
  const deps: RunnerDeps = { cache, sandbox, owner, workDir: join(opts.root, "work") };
  const results = new ResultStore<ExecResponse>(join(opts.root, "results"));
  const tasks = opts.background ? new TaskManager() : null;
  const syncOf = opts.syncClient ?? ((req: RunRequest) => httpSyncClient(req.sync));

  const handle = async (event: ExecEvent, context?: InvokeContext): Promise<ExecResponse> => {
    try {
      if (!event || typeof event !== "object") throw new ToolError("INVALID_ARGUMENT", "The event must be a JSON object.");
      const action = event.action ?? "run";
      if (context?.tenantId && context.tenantId !== event.tenant) {
        // PER_TENANT isolation: an environment serves one tenant; anything else is a routing bug.
        throw new ToolError("PERMISSION_DENIED", "The invocation's TenantId does not match the request's tenant.");
      }
      if (action === "poll" || action === "kill") {
        if (!tasks) throw new ToolError("UNAVAILABLE", "Background tasks are not available on this runner (AWS Lambda cannot keep a process after its invocation returns).");
        const { tenant, task_id } = event as { tenant: string; task_id: string; wait_ms?: number };
        if (action === "kill") return { ok: true, result: await tasks.kill(tenant, String(task_id)) };
        const waitMs = Math.min(Math.max(Number((event as { wait_ms?: number }).wait_ms ?? 0), 0), 600_000);
        return { ok: true, result: await tasks.poll(tenant, String(task_id), waitMs) };
      }
      if (action !== "run" && action !== "start") throw new ToolError("INVALID_ARGUMENT", `Unknown action ${JSON.stringify(action)}.`);
      const req = event as RunRequest;
      validateRequest(req);
      const key = `${action}\0${req.tenant}\0${req.workspace}\0${req.idempotency_key}`;
      if (action === "start") {
        if (!tasks) throw new ToolError("UNAVAILABLE", "Background tasks are not available on this runner (AWS Lambda cannot keep a process after its invocation returns). Run the command in the foreground.");
        return await results.once(key, async () => {
          await sandbox.check();
          const id = tasks.start(req.tenant, (hooks) => runCommand(req, syncOf(req), deps, hooks));
          return { ok: true, result: { task_id: id } };
        }, (r) => r.ok);
      }
      return await results.once(
        key,
        async () => ({ ok: true, result: await runCommand(req, syncOf(req), deps) satisfies RunResult }),
        (r) => r.ok,
      );
    } catch (e) {
      return errorOf(e);
    }
  };
  return Object.assign(handle, { tasks, cache });
}

let lambdaHandler: Handler | null = null;

/** Names of credentials the Lambda runtime puts in the environment; the runner needs none. */
const CREDENTIAL_VARS = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN"];

/** The AWS Lambda entry (CMD of the image). */
export async function handler(event: ExecEvent, context?: InvokeContext): Promise<ExecResponse> {
  if (!lambdaHandler) {
    for (const name of CREDENTIAL_VARS) delete process.env[name];
    lambdaHandler = createHandler({ root: process.env.TOOLSHED_RUNNER_ROOT ?? "/tmp/toolshed", background: false });
  }
  return lambdaHandler(event, context);
}

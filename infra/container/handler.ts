/**
 * The container function: event (ExecEvent) → ExecResponse. AWS Lambda calls `handler`;
 * the local Invoke stand-in and the local executor call createHandler() directly.
 *
 * The handler holds no storage or cloud credentials: it reaches the workspace through the
 * sync endpoint with the run's short-lived token, which stays in this process's memory
 * (bubblewrap hides this process and its environment; on Lambda, see sandbox-process.ts).
 */
import { chmodSync, mkdirSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { isToolError, ToolError } from "../../lib/errors.js";
import { httpSyncClient } from "../../lib/exec/sync-http.js";
import type { ExecEvent, ExecResponse, RunRequest, RunResult, SyncClient } from "../../lib/exec/types.js";
import { TaskManager } from "./background.js";
import { ResultStore } from "./idempotency.js";
import { runCommand, validateRequest, type RunnerDeps } from "./runner.js";
import { assertTraversable, bwrapSandbox, type Sandbox } from "./sandbox.js";
import { processSandbox } from "./sandbox-process.js";
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
  const sandbox = opts.sandbox ?? bwrapSandbox({ stateDir: join(opts.root, "sandbox"), ...(opts.bwrapPath ? { bwrapPath: opts.bwrapPath } : {}) });
  const owner = sandbox.runAs;
  // Traversable (not listable) by the sandbox uid, which bwrap runs as to bind the tree.
  mkdirSync(opts.root, { recursive: true });
  chmodSync(opts.root, 0o711);
  if (owner) assertTraversable(opts.root);
  const cache = new TreeCache(join(opts.root, "slots"), owner, opts.maxIdleSlots, sandbox.hostIsolated);
  const deps: RunnerDeps = { cache, sandbox, owner, workDir: join(opts.root, "work") };
  // Host-isolated: a command can read this process's files, and results hold other workspaces' output.
  const results = new ResultStore<ExecResponse>(sandbox.hostIsolated ? null : join(opts.root, "results"));
  const tasks = opts.background ? new TaskManager() : null;
  const syncOf = opts.syncClient ?? ((req: RunRequest) => httpSyncClient(req.sync));

  const handle = async (event: ExecEvent, context?: InvokeContext): Promise<ExecResponse> => {
    try {
      if (!event || typeof event !== "object") throw new ToolError("INVALID_ARGUMENT", "The event must be a JSON object.");
      const action = event.action ?? "run";
      if (sandbox.hostIsolated && !context?.tenantId) {
        // Without namespaces, the execution environment is the boundary between tenants.
        throw new ToolError("UNAVAILABLE", "This command runner has no namespace sandbox and relies on AWS Lambda's per-tenant execution environments, but the invocation carries no tenant: deploy the function with tenant isolation mode PER_TENANT and invoke it with TenantId.", { reason: "tenant_isolation_missing" });
      }
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

let lambdaHandler: Promise<Handler> | null = null;

/** Names of credentials the Lambda runtime puts in the environment; the runner needs none. */
const CREDENTIAL_VARS = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN"];

/**
 * The sandbox of the image: bubblewrap where the host allows user namespaces (ECS/EC2),
 * else the process sandbox, which relies on Lambda's per-tenant microVMs (sandbox-process.ts).
 *   TOOLSHED_RUNNER_EGRESS  "none" when the function has no route out (VPC without NAT);
 *                           anything else counts as open, and commands without network are refused.
 */
export async function imageSandbox(root: string, env: Record<string, string | undefined> = process.env, bwrapPath?: string): Promise<Sandbox> {
  const stateDir = join(root, "sandbox");
  mkdirSync(root, { recursive: true });
  chmodSync(root, 0o711); // the probe's tree must be reachable by the sandbox user
  const bwrap = bwrapSandbox({ stateDir, ...(bwrapPath ? { bwrapPath } : {}) });
  try {
    await bwrap.check();
    return bwrap;
  } catch {
    /* no user namespaces here: AWS Lambda */
  }
  const link = join(root, "workspace");
  // The image links /workspace to <root>/workspace, so commands see the same path as under bwrap.
  const imageLinked = (() => {
    try {
      return readlinkSync("/workspace") === link;
    } catch {
      return false;
    }
  })();
  return processSandbox({
    stateDir,
    egress: env.TOOLSHED_RUNNER_EGRESS === "none" ? "none" : "open",
    scratchDirs: ["/tmp", "/dev/shm", root],
    keep: ["slots", "work", "sandbox", "results"].map((d) => join(root, d)),
    ...(imageLinked ? { workspace: { link, path: "/workspace" } } : {}),
  });
}

/** The AWS Lambda entry (CMD of the image). */
export async function handler(event: ExecEvent, context?: InvokeContext): Promise<ExecResponse> {
  lambdaHandler ??= (async () => {
    // The image's entrypoint already started us without them (see the Dockerfile); this covers other launches.
    for (const name of CREDENTIAL_VARS) delete process.env[name];
    const root = process.env.TOOLSHED_RUNNER_ROOT ?? "/tmp/toolshed";
    return createHandler({ root, background: false, sandbox: await imageSandbox(root) });
  })();
  return (await lambdaHandler)(event, context);
}

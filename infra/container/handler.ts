/**
 * The container function: event (ExecEvent) → ExecResponse. AWS Lambda calls `handler`;
 * the local Invoke stand-in and the local executor call createHandler() directly.
 *
 * The handler holds no storage or cloud credentials: it reaches the workspace through the
 * sync endpoint with the run's short-lived token, which stays in this process's memory
 * (bubblewrap hides this process and its environment; on Lambda, see sandbox-process.ts).
 * It runs only events the API signed (lib/exec/runner-auth.ts), whatever door they came
 * through, and takes the tenant, workspace and sync endpoint from the verified event only.
 */
import { chmodSync, mkdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { join } from "node:path";
import { ToolError } from "../../lib/shared/errors.js";
import { httpSyncClient } from "../../lib/sync/http.js";
import { httpRunRecords } from "../../lib/sync/runs.js";
import { fitResponse, MAX_INVOKE_ANSWER_BYTES } from "../../lib/sync/result-size.js";
import { RUNNER_SECRET_VAR, verifyEvent, type SignedEvent } from "../../lib/exec/runner-auth.js";
import type { ExecEvent, RunRequest, RunResult } from "../../lib/exec/types.js";
import type { ExecResponse, RunRecordClient, SyncClient } from "../../lib/sync/types.js";
import { errorOf, runOnce } from "./run-once.js";
import { runCommand, type RunnerDeps } from "./runner.js";
import { runIdOf, validateRequest } from "./run-request.js";
import { assertTraversable, bwrapSandbox, type Sandbox } from "./sandbox.js";
import { processSandbox } from "./sandbox-process.js";
import { prepareStageDir } from "./stage.js";
import { TreeCache } from "./slot-cache.js";
import { traceInvocation } from "./trace.js";
import { runLive } from "./live-session.js";
import type { RetryPolicy } from "./live-channel.js";
import { httpLiveChannel, type LiveChannel } from "../../lib/sync/live-client.js";
import { tracerFromEnv } from "../../lib/shared/otlp.js";
import type { Tracer } from "../../lib/shared/trace.js";

export interface HandlerOptions {
  /** Private directory of the handler: slots, logs. */
  root: string;
  /** How to reach the workspace (default: HTTP sync client with the request's token). */
  syncClient?: (req: RunRequest) => SyncClient;
  /** How to reach the run's record (default: the sync API's /v1/sync/run with the request's token). */
  runRecords?: (req: RunRequest) => RunRecordClient;
  /** How long a retried invocation waits for the attempt that still runs (default 30 s). */
  claimWaitMs?: number;
  sandbox?: Sandbox;
  bwrapPath?: string;
  maxIdleSlots?: number;
  /** The secret the API signs invocations with (TOOLSHED_RUNNER_SECRET); without it every invocation is refused. */
  secret?: string;
  /** The API's base URL (TOOLSHED_PUBLIC_URL): a signed event whose sync.url has another origin is refused too. */
  syncUrl?: string;
  /** How the default sync and run-record clients reach the API (default: fetch). */
  fetch?: typeof fetch;
  /** Traces (docs/tracing.md, trace.ts): an event with a traceparent continues its trace here. */
  tracer?: Tracer;
  /** Where a live sandbox takes its commands (default: the sync API's /v1/sync/live/* with the start event's token). */
  liveChannel?: (req: RunRequest) => LiveChannel<RunRequest, RunResult>;
  /** How a live sandbox retries its channel before it counts as lost (default live-channel.ts DEFAULT_RETRY). */
  liveRetry?: RetryPolicy;
}

export interface InvokeContext {
  /** The Lambda context's tenant (TenantId of the Invoke). */
  tenantId?: string;
}

/** Takes an event as the API signed it (lib/exec/runner-auth.ts); anything else is refused. */
export type Handler = ((event: SignedEvent, context?: InvokeContext) => Promise<ExecResponse>) & {
  cache: TreeCache;
  /** Kills the runs in progress (each stores its answer) and waits for them (shutdown). */
  close(): Promise<void>;
};

const originOf = (url: unknown): string | null => {
  try {
    return typeof url === "string" ? new URL(url).origin : null;
  } catch {
    return null;
  }
};

/**
 * The one check of an invocation, at every door (this handler, the local Invoke stand-in before
 * it makes a tenant's environment): the API's signature over every field and its expiry, the
 * sync endpoint (when the runner knows its API), and the tenant the invocation was routed by.
 * Returns the verified event: the only source of tenant, workspace and sync endpoint.
 */
export async function admitEvent(opts: Pick<HandlerOptions, "secret" | "syncUrl">, received: unknown, context?: InvokeContext): Promise<ExecEvent> {
  const event = await verifyEvent(opts.secret, received);
  if (opts.syncUrl && originOf(event.sync?.url) !== new URL(opts.syncUrl).origin)
    throw new ToolError("PERMISSION_DENIED", `The event's sync endpoint is not this runner's API (${new URL(opts.syncUrl).origin}).`, { reason: "sync_origin" });
  if (context?.tenantId && context.tenantId !== event.tenant) {
    // PER_TENANT isolation: an environment serves one tenant; anything else is a routing bug.
    throw new ToolError("PERMISSION_DENIED", "The invocation's TenantId does not match the request's tenant.");
  }
  return event;
}

export function createHandler(opts: HandlerOptions): Handler {
  const sandbox = opts.sandbox ?? bwrapSandbox({ stateDir: join(opts.root, "sandbox"), ...(opts.bwrapPath ? { bwrapPath: opts.bwrapPath } : {}) });
  const owner = sandbox.runAs;
  // Traversable (not listable) by the sandbox uid, which bwrap runs as to bind the tree.
  mkdirSync(opts.root, { recursive: true });
  chmodSync(opts.root, 0o711);
  if (owner) assertTraversable(opts.root);
  const cache = new TreeCache(join(opts.root, "slots"), owner, opts.maxIdleSlots, sandbox.hostIsolated);
  const stageDir = join(opts.root, "ws");
  prepareStageDir(stageDir);
  const deps: RunnerDeps = { cache, sandbox, owner, workDir: join(opts.root, "work"), stageDir };
  // With a tracer, every request to the API carries the current span's traceparent (trace.ts).
  const apiFetch = opts.tracer ? opts.tracer.propagating(opts.fetch ?? ((i, init) => fetch(i, init))) : opts.fetch;
  const syncOf = opts.syncClient ?? ((req: RunRequest) => httpSyncClient({ ...req.sync, ...(apiFetch ? { fetch: apiFetch } : {}) }));
  // Results live in the run record in storage, never on this host's disk.
  const recordsOf = opts.runRecords ?? ((req: RunRequest) => httpRunRecords({ ...req.sync, ...(apiFetch ? { fetch: apiFetch } : {}) }));
  const closing = new AbortController();
  const inflight = new Set<Promise<ExecResponse>>();

  const track = async (run: Promise<ExecResponse>): Promise<ExecResponse> => {
    inflight.add(run);
    try {
      return await run;
    } finally {
      inflight.delete(run);
    }
  };
  const liveChannelOf = opts.liveChannel ?? ((req: RunRequest) => httpLiveChannel<RunRequest, RunResult>({ ...req.sync, ...(apiFetch ? { fetch: apiFetch } : {}) }));
  /**
   * A live sandbox (live-session.ts): the invocation lasts as long as the sandbox, and answers its
   * LiveEnded. Under the process sandbox (Lambda), the sandbox's processes are all of its uid's and
   * /tmp is the environment's, so it is the only thing that runs in this process while it lives:
   * Lambda gives an execution environment one invocation at a time, and `liveRunning` refuses
   * whatever else reaches this handler meanwhile (locally, in tests). Its end (the run's reap and
   * scratch wipe) is done before the count drops.
   */
  let liveRunning = 0;
  const live = async (req: RunRequest): Promise<ExecResponse> => {
    liveRunning++;
    try {
      const ended = await runLive(req, deps, { channel: liveChannelOf(req), syncOf, records: recordsOf(req), signal: closing.signal, ...(opts.liveRetry ? { retry: opts.liveRetry } : {}) });
      return { ok: true, result: ended };
    } finally {
      liveRunning--;
    }
  };
  /**
   * The process sandbox runs nothing beside a live sandbox: its processes and /tmp would be the live
   * one's. Nor starts one beside a run under way: that run's end reaps every process of the uid.
   */
  const refuseBesideLive = (req: RunRequest) => {
    if (!sandbox.hostIsolated) return;
    if (liveRunning === 0 && req.live && inflight.size > 0)
      throw new ToolError("UNAVAILABLE", "This execution environment is running a command, and its process sandbox (AWS Lambda without namespaces) cannot start a live sandbox beside it: that command's end stops every process of the sandbox's user. Retry: a new invocation gets an environment of its own.", { reason: "runner_busy" });
    if (liveRunning === 0) return;
    const what = req.live ? "another live sandbox" : "a fresh run";
    throw new ToolError("UNAVAILABLE", `This execution environment holds a live sandbox, and its process sandbox (AWS Lambda without namespaces) cannot keep ${what} apart from it: the live sandbox's processes and /tmp are the environment's. Retry: a new invocation gets an environment of its own; the live sandbox ends after its idle timeout, or end it with DELETE /v1/workspaces/{ws}/sessions/{session}/sandbox.`, { reason: "live_sandbox_running" });
  };

  const handle = async (received: SignedEvent, context?: InvokeContext): Promise<ExecResponse> => {
    try {
      // Before anything else (a slot, a record, a sandbox): only what the API signed runs.
      const event = await admitEvent(opts, received, context);
      const action = event.action ?? "run";
      if (sandbox.hostIsolated && !context?.tenantId) {
        // Without namespaces, the execution environment is the boundary between tenants.
        throw new ToolError("UNAVAILABLE", "This command runner has no namespace sandbox and relies on AWS Lambda's per-tenant execution environments, but the invocation carries no tenant: deploy the function with tenant isolation mode PER_TENANT and invoke it with TenantId.", { reason: "tenant_isolation_missing" });
      }
      // Background tasks are runs with task: true; the API polls and kills them in storage (lib/sync/run-records.ts).
      if (action !== "run") throw new ToolError("INVALID_ARGUMENT", `Unknown action ${JSON.stringify(action)}; this function only runs commands (background tasks are runs with task: true).`);
      const req = event as RunRequest;
      validateRequest(req);
      if (closing.signal.aborted) throw new ToolError("UNAVAILABLE", "The command runner is shutting down; retry.");
      refuseBesideLive(req);
      if (req.live) return await track(live(req));
      const task = event.task === true;
      // A runner that cannot run anything claims nothing; a task still reports that to its record.
      if (!task) await sandbox.check();
      const run = traceInvocation(opts.tracer, req, task, (trace) =>
        runOnce(runIdOf(req), task, recordsOf(req), (hooks) => runCommand(req, trace ? trace.sync(syncOf(req)) : syncOf(req), trace ? { ...deps, sandbox: trace.sandbox(sandbox) } : deps, hooks), {
          signal: closing.signal,
          ...(req.output_every_ms !== undefined ? { pumpMs: req.output_every_ms } : {}),
          ...(opts.claimWaitMs !== undefined ? { claimWaitMs: opts.claimWaitMs } : {}),
        }),
      );
      return await track(run);
    } catch (e) {
      return errorOf(e);
    }
  };
  const close = async () => {
    closing.abort();
    await Promise.allSettled([...inflight]);
    await cache.emptied();
    // The environment ends with its handler: a sandbox it made goes with it (bwrap: the environment's cgroup); one passed in is its maker's.
    if (!opts.sandbox) await sandbox.close?.();
  };
  return Object.assign(handle, { cache, close });
}

/**
 * The runner's secret, taken out of the environment so that no child process inherits it:
 * from the file TOOLSHED_RUNNER_SECRET_FILE names, deleted once read (the image's entrypoint
 * moves the variable there, so not even this process's /proc/<pid>/environ, readable by a
 * same-user command under the process sandbox, holds it), else from TOOLSHED_RUNNER_SECRET.
 */
export function takeRunnerSecret(env: Record<string, string | undefined> = process.env): string | undefined {
  const file = env[`${RUNNER_SECRET_VAR}_FILE`];
  let secret = env[RUNNER_SECRET_VAR];
  if (file) {
    secret = readFileSync(file, "utf8").trim();
    rmSync(file, { force: true });
  }
  delete env[RUNNER_SECRET_VAR];
  delete env[`${RUNNER_SECRET_VAR}_FILE`];
  return secret || undefined;
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
    keep: ["slots", "work", "sandbox", "ws"].map((d) => join(root, d)),
    ...(imageLinked ? { workspace: { link, path: "/workspace" } } : {}),
  });
}

/** The AWS Lambda entry (CMD of the image). */
export async function handler(event: SignedEvent, context?: InvokeContext): Promise<ExecResponse> {
  lambdaHandler ??= (async () => {
    // The image's entrypoint already started us without them (see the Dockerfile); this covers other launches.
    for (const name of CREDENTIAL_VARS) delete process.env[name];
    const secret = takeRunnerSecret();
    const root = process.env.TOOLSHED_RUNNER_ROOT ?? "/tmp/toolshed";
    const syncUrl = process.env.TOOLSHED_PUBLIC_URL;
    const tracer = tracerFromEnv(process.env, "toolshed-runner");
    delete process.env.TOOLSHED_OTLP_HEADERS; // may hold the collector's key: no child process inherits it
    return createHandler({ root, sandbox: await imageSandbox(root), ...(secret ? { secret } : {}), ...(syncUrl ? { syncUrl } : {}), ...(tracer ? { tracer } : {}) });
  })();
  // Never past what a synchronous Invoke carries: a larger answer was an error, the run's sandbox time and write-back unreported.
  return fitResponse(await (await lambdaHandler)(event, context), MAX_INVOKE_ANSWER_BYTES);
}

/**
 * A local stand-in for the AWS Lambda Invoke API, running the real handler, so
 * `new LambdaClient({ endpoint: "http://127.0.0.1:PORT" })` + InvokeCommand work unchanged.
 *
 *   POST /2015-03-31/functions/{name}/invocations
 *     X-Amz-Tenant-Id        required (the function is PER_TENANT)
 *     X-Amz-Invocation-Type  RequestResponse (default) | Event (202, runs after) | DryRun (204)
 *
 * Like PER_TENANT Lambda, each tenant gets its own "execution environment": its own
 * handler instance and cache directory, named at random (`env-<hex>`: no tenant id on disk,
 * nor in what a sandbox sees). Results and background tasks live in run records in
 * storage (infra/container/run-once.ts), as on Lambda.
 *
 * It answers only invocations the API signed (lib/exec/runner-auth.ts): checked here, before a
 * tenant's environment is made or a place taken, and again by the handler. Each tenant may run
 * a share of the concurrent invocations (tenant-share.ts), so one tenant cannot starve the rest.
 *
 * A live sandbox (RunRequest.live, issue #29) is an Event invocation that lasts the sandbox's whole
 * life (up to LIVE_MAX_LIFE_MS): its place in the tenant's share is taken when it is admitted and
 * released only when the handler answers, i.e. when the sandbox has ended. So live sandboxes count
 * against the same per-tenant and total bounds as running commands, as on Lambda they count
 * against the function's concurrency.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, readdirSync, promises as fs } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { join } from "node:path";
import { ID_PATTERN } from "../../lib/layout/paths.js";
import type { SignedEvent } from "../../lib/exec/runner-auth.js";
import { tracerFromEnv } from "../../lib/shared/otlp.js";
import { admitEvent, createHandler, takeRunnerSecret, type Handler, type HandlerOptions } from "./handler.js";
import { errorOf } from "./run-once.js";
import { TenantShare } from "./tenant-share.js";
import { opaqueName } from "./opaque-name.js";

export interface LocalInvokeOptions {
  /** Parent directory of the per-tenant environments. */
  root: string;
  /** 0 (default) picks a free port. Always bound to 127.0.0.1. */
  port?: number;
  /** When set, other function names get ResourceNotFoundException. */
  functionName?: string;
  /** Concurrent invocations before TooManyRequestsException (default 32). */
  maxConcurrent?: number;
  /** Concurrent invocations of one tenant before TooManyRequestsException (default: a quarter of maxConcurrent). */
  maxPerTenant?: number;
  /** TOOLSHED_RUNNER_SECRET: the API signs every invocation with it. Without it, every invocation is refused. */
  secret?: string;
  /** The API's base URL: invocations whose sync endpoint has another origin are refused. */
  syncUrl?: string;
  /** The function's own timeout (default 15 min): past it, Sandbox.Timedout like Lambda. */
  functionTimeoutMs?: number;
  /** Passed to every tenant's handler (e.g. syncClient in tests). */
  handler?: Partial<Omit<HandlerOptions, "root" | "secret" | "syncUrl">>;
}

export interface LocalInvokeServer {
  url: string;
  port: number;
  /** Every invocation received: its tenant and invocation type (tests count what reaches the function). */
  invocations: { tenant: string; type: string }[];
  /** The environment of a tenant, if it exists. */
  environment(tenant: string): Handler | undefined;
  /** The directory of a tenant's environment, if it exists. */
  environmentDir(tenant: string): string | undefined;
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "x-amzn-requestid": randomUUID(), ...headers });
  res.end(text);
}

const apiError = (res: ServerResponse, status: number, type: string, message: string) =>
  send(res, status, { Type: "User", message, __type: type }, { "x-amzn-errortype": type });

async function readBody(req: IncomingMessage, max = 6 * 1024 * 1024): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > max) return null;
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

const ENV_DIR = /^env-[0-9a-f]{16}$/;

/** Environments left by an earlier process are not trusted: they go, off the start's path. */
function discardEarlierEnvironments(root: string): void {
  mkdirSync(root, { recursive: true, mode: 0o711 });
  for (const name of readdirSync(root)) if (ENV_DIR.test(name)) void fs.rm(join(root, name), { recursive: true, force: true }).catch(() => {});
}

export async function startLocalInvokeServer(opts: LocalInvokeOptions): Promise<LocalInvokeServer> {
  const envs = new Map<string, { handler: Handler; dir: string }>();
  const share = new TenantShare(opts.maxConcurrent ?? 32, opts.maxPerTenant);
  const functionTimeoutMs = opts.functionTimeoutMs ?? 15 * 60 * 1000;
  const invocations: { tenant: string; type: string }[] = [];
  const auth = { ...(opts.secret ? { secret: opts.secret } : {}), ...(opts.syncUrl ? { syncUrl: opts.syncUrl } : {}) };
  discardEarlierEnvironments(opts.root);

  const environment = (tenant: string): Handler => {
    let env = envs.get(tenant);
    if (!env) {
      // A name that says nothing: the sandbox's /proc/self/mountinfo shows the path of its tree.
      const dir = join(opts.root, opaqueName("env-"));
      env = { handler: createHandler({ ...opts.handler, ...auth, root: dir }), dir };
      envs.set(tenant, env);
    }
    return env.handler;
  };

  const server = createServer(async (req, res) => {
    try {
      const m = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/.exec((req.url ?? "").split("?")[0]!);
      if (req.method !== "POST" || !m) return apiError(res, 404, "ResourceNotFoundException", `No route ${req.method} ${req.url}`);
      const name = decodeURIComponent(m[1]!);
      if (opts.functionName && name !== opts.functionName && !name.endsWith(`:function:${opts.functionName}`))
        return apiError(res, 404, "ResourceNotFoundException", `Function not found: ${name}`);
      const tenant = String(req.headers["x-amz-tenant-id"] ?? "");
      if (!ID_PATTERN.test(tenant)) return apiError(res, 400, "InvalidParameterValueException", "This function uses tenant isolation: TenantId is required.");
      const body = await readBody(req);
      if (!body) return apiError(res, 413, "RequestTooLargeException", "Request must be smaller than 6291456 bytes for the InvokeFunction operation");
      const type = String(req.headers["x-amz-invocation-type"] ?? "RequestResponse");
      invocations.push({ tenant, type });
      if (type === "DryRun") return send(res, 204, "");
      let event: SignedEvent;
      try {
        event = JSON.parse(body.toString("utf8") || "{}") as SignedEvent;
      } catch {
        return apiError(res, 400, "InvalidRequestContentException", "Could not parse request body into json");
      }
      // Unsigned, altered, expired, or routed to another tenant: refused before anything is made for it.
      try {
        await admitEvent(auth, event, { tenantId: tenant });
      } catch (e) {
        return send(res, 200, errorOf(e), { "x-amz-executed-version": "$LATEST" });
      }
      const refused = share.take(tenant);
      if (refused) return send(res, 429, { Type: "User", message: refused.message, Reason: refused.scope === "tenant" ? "TenantConcurrencyLimitExceeded" : "ConcurrentInvocationLimitExceeded", __type: "TooManyRequestsException" }, { "x-amzn-errortype": "TooManyRequestsException" });
      let run: ReturnType<Handler>;
      try {
        run = environment(tenant)(event, { tenantId: tenant }).finally(() => share.release(tenant));
      } catch (e) {
        share.release(tenant);
        throw e;
      }
      if (type === "Event") {
        // Runs after the 202; holds its share place until it ends (a live sandbox: its whole life).
        // Nobody waits for its answer: a failure goes to the log, as Lambda's would.
        run.then(
          (r) => {
            if ((r as { ok?: boolean })?.ok === false) console.error(`runner: asynchronous invocation failed: ${JSON.stringify((r as { error?: unknown }).error).slice(0, 500)}`);
          },
          (e) => console.error(`runner: asynchronous invocation failed: ${String((e as Error)?.message ?? e).slice(0, 500)}`),
        );
        return send(res, 202, "");
      }
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), functionTimeoutMs)));
      const result = await Promise.race([run, timedOut]).finally(() => clearTimeout(timer));
      if (result === "timeout") {
        const secs = (functionTimeoutMs / 1000).toFixed(2);
        return send(res, 200, { errorType: "Sandbox.Timedout", errorMessage: `RequestId: ${randomUUID()} Error: Task timed out after ${secs} seconds` }, { "x-amz-function-error": "Unhandled" });
      }
      send(res, 200, result, { "x-amz-executed-version": "$LATEST" });
    } catch (e) {
      send(res, 200, { errorType: "Runtime.UnhandledError", errorMessage: String((e as Error)?.message ?? e) }, { "x-amz-function-error": "Unhandled" });
    }
  });
  server.requestTimeout = 0; // invocations may last as long as the function's timeout
  server.headersTimeout = 60_000;
  await new Promise<void>((r) => server.listen(opts.port ?? 0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    invocations,
    environment: (t) => envs.get(t)?.handler,
    environmentDir: (t) => envs.get(t)?.dir,
    async close() {
      await Promise.all([...envs.values()].map((e) => e.handler.close()));
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

// `node local-server.js` (after bundling): TOOLSHED_INVOKE_PORT, TOOLSHED_RUNNER_ROOT,
// TOOLSHED_RUNNER_SECRET (required: the API's), TOOLSHED_PUBLIC_URL (the API, optional: binds sync URLs to it),
// TOOLSHED_RUNNER_CONCURRENCY (default 32) and TOOLSHED_RUNNER_TENANT_CONCURRENCY (default a quarter of it).
if (process.argv[1] && /local-server\.(js|mjs|ts)$/.test(process.argv[1])) {
  const port = Number(process.env.TOOLSHED_INVOKE_PORT ?? 9009);
  const secret = takeRunnerSecret();
  if (!secret) {
    console.error("TOOLSHED_RUNNER_SECRET is not set: the runner answers only invocations the API signs with it. Set the same value for the API (.dev.vars) and this process (npm start does both).");
    process.exit(1);
  }
  const syncUrl = process.env.TOOLSHED_PUBLIC_URL;
  const tracer = tracerFromEnv(process.env, "toolshed-runner"); // docs/tracing.md
  delete process.env.TOOLSHED_OTLP_HEADERS;
  const count = (name: string) => (process.env[name] ? { value: Number(process.env[name]) } : null);
  const max = count("TOOLSHED_RUNNER_CONCURRENCY");
  const perTenant = count("TOOLSHED_RUNNER_TENANT_CONCURRENCY");
  startLocalInvokeServer({
    root: process.env.TOOLSHED_RUNNER_ROOT ?? "/tmp/toolshed-runner", port, secret,
    ...(syncUrl ? { syncUrl } : {}), ...(max ? { maxConcurrent: max.value } : {}), ...(perTenant ? { maxPerTenant: perTenant.value } : {}),
    ...(tracer ? { handler: { tracer } } : {}),
  }).then((s) => {
    console.log(`Local Lambda Invoke stand-in on ${s.url} (POST /2015-03-31/functions/<name>/invocations)`);
  });
}

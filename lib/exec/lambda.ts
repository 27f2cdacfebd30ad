/**
 * Executor over AWS Lambda: InvokeCommand with TenantId = the tenant (the function is
 * deployed with tenant isolation mode PER_TENANT, so an execution environment never serves
 * two tenants). The endpoint is the client's: tests point it at infra/container/local-server.ts.
 * Retries (the SDK's, or the caller's) are safe: each call carries an idempotency key, and the
 * runner claims the run in storage before running it. Background tasks are asynchronous
 * Invokes (InvocationType Event); they report to their run record, which the API reads
 * (lib/sync/run-records.ts). Every event is signed with the runner secret (lib/exec/runner-auth.ts):
 * the runner runs nothing else. Bundles for Workers (no node: imports).
 */
import { InvokeCommand, type LambdaClient } from "@aws-sdk/client-lambda";
import { ToolError } from "../shared/errors.js";
import { unwrapExecResponse } from "./response.js";
import { signEvent } from "./runner-auth.js";
import type { ExecEvent, Executor, RunResult } from "./types.js";
import type { ExecResponse } from "../sync/types.js";

export interface LambdaExecutorOptions {
  /** Configure it with a request timeout above the longest run (15 min) and the endpoint. */
  client: LambdaClient;
  functionName: string;
  /** The runner deployed with egress, for calls whose API key allows network (default: functionName). */
  networkFunctionName?: string;
  qualifier?: string;
  /** TOOLSHED_RUNNER_SECRET, shared with the runner; without it every call answers UNAVAILABLE naming it. */
  secret: string | undefined;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * An error of the Invoke API itself (the function did not run, or we lost the answer). The API's own
 * text names the operator's account, roles, functions and addresses (an AccessDeniedException quotes
 * both ARNs): it goes to the log, and the agent gets the error's name and what to do, never that text.
 */
export function invokeError(e: unknown, functionName: string): ToolError {
  const err = e as { name?: string; message?: string; code?: string; Reason?: string; $metadata?: { httpStatusCode?: number } };
  const name = err?.name ?? "";
  const msg = err?.message ?? String(e);
  // The local stand-in's per-tenant share (infra/container/tenant-share.ts): its message is ours and says what to do.
  if (name === "TooManyRequestsException" && err.Reason === "TenantConcurrencyLimitExceeded") return new ToolError("RATE_LIMITED", msg, { cause: name, scope: "tenant" });
  if (name === "TooManyRequestsException") return new ToolError("RATE_LIMITED", "Too many commands are running for this account right now. Retry in a few seconds.", { cause: name });
  console.error(`lambda invoke of ${functionName} failed: ${name || err?.code || "Error"}: ${msg}`);
  if (name === "ResourceNotFoundException") return new ToolError("UNAVAILABLE", `The command runner function ${functionName} is not deployed; the operator must deploy it (docs/deploying-aws.md).`, { cause: name });
  if (name === "RequestTooLargeException") return new ToolError("PAYLOAD_TOO_LARGE", "The command (with its stdin) is larger than the 6 MB Invoke limit; put large inputs in a workspace file.", { cause: name });
  if (name === "TimeoutError" || name === "RequestTimeout" || name === "AbortError" || err?.code === "ETIMEDOUT")
    return new ToolError("TIMEOUT", `The command runner did not answer in time (${name || err?.code}). Retry; a long command can run in the background (run_in_background).`, { cause: name || err?.code });
  if (["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EAI_AGAIN", "EPIPE"].includes(err?.code ?? "") || /ECONNREFUSED|socket hang up|fetch failed/i.test(msg))
    return new ToolError("UNAVAILABLE", `The command runner is unreachable (${err?.code ?? (name || "connection failed")}). Retry in a few seconds.`, { cause: err?.code ?? name });
  const status = err?.$metadata?.httpStatusCode ?? 0;
  if (status >= 500 || /^(ServiceException|ResourceNotReadyException|ResourceConflictException|EC2|ENI|Subnet|EFS|KMS|SnapStart)/.test(name))
    return new ToolError("UNAVAILABLE", `The command runner is unavailable (${name}). Retry in a few seconds.`, { cause: name });
  return new ToolError("INTERNAL", `Invoking the command runner failed (${name || "Error"}); the server's log has the details. Retry; if it persists, report it with the request id.`, { cause: name });
}

/** An error raised inside the function (X-Amz-Function-Error): crash, out of memory, function timeout. */
export function functionError(kind: string, payload: string): ToolError {
  let body: { errorType?: string; errorMessage?: string } = {};
  try {
    body = JSON.parse(payload);
  } catch {
    /* not JSON */
  }
  const type = body.errorType ?? kind;
  const message = body.errorMessage ?? payload.slice(0, 500);
  if (type === "Sandbox.Timedout" || /timed out after/i.test(message))
    return new ToolError("TIMEOUT", `The command runner hit its function timeout (${message}); the command's changes were not written back.`, { cause: type });
  if (/OutOfMemory/i.test(type)) return new ToolError("INTERNAL", `The command runner ran out of memory (${message}).`, { cause: type });
  return new ToolError("INTERNAL", `The command runner failed: ${type}: ${message}`, { cause: type });
}

export function lambdaExecutor(opts: LambdaExecutorOptions): Executor {
  async function send(event: ExecEvent, type: "RequestResponse" | "Event") {
    const functionName = (event.network && opts.networkFunctionName) || opts.functionName;
    const signed = await signEvent(opts.secret, event);
    try {
      return await opts.client.send(
        new InvokeCommand({
          FunctionName: functionName,
          ...(opts.qualifier ? { Qualifier: opts.qualifier } : {}),
          InvocationType: type,
          TenantId: event.tenant,
          Payload: enc.encode(JSON.stringify(signed)),
        }),
      );
    } catch (e) {
      throw invokeError(e, functionName);
    }
  }

  return {
    async run(req) {
      const out = await send({ ...req, action: "run" }, "RequestResponse");
      const text = out.Payload ? dec.decode(out.Payload) : "";
      if (out.FunctionError) throw functionError(out.FunctionError, text);
      let parsed: ExecResponse;
      try {
        parsed = JSON.parse(text) as ExecResponse;
      } catch {
        throw new ToolError("INTERNAL", `The command runner answered with invalid JSON: ${text.slice(0, 200)}`);
      }
      return unwrapExecResponse<RunResult>(parsed);
    },
    async start(req) {
      // Lambda queues the event and answers 202; a background task reports to its record in storage,
      // a live sandbox's start (req.live) to its session's coordinator (lib/sync/live-types.ts).
      const out = await send(req.live ? { ...req, action: "run" } : { ...req, action: "run", task: true }, "Event");
      // A door that refuses an event at once (the local stand-in: unsigned, wrong secret) answers with the refusal.
      const text = out.Payload ? dec.decode(out.Payload) : "";
      let refused: ExecResponse | null = null;
      try {
        refused = text ? (JSON.parse(text) as ExecResponse) : null;
      } catch {
        /* not an answer of ours */
      }
      if (refused && refused.ok === false) unwrapExecResponse(refused);
    },
  };
}

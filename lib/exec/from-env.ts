/**
 * The executor from environment settings, the same on Workers and on Lambda:
 *   TOOLSHED_RUNNER_FUNCTION  the container function's name (default: toolshed-runner)
 *   TOOLSHED_RUNNER_FUNCTION_NETWORK  the same image deployed with egress, for API keys with
 *                             the network scope (default: TOOLSHED_RUNNER_FUNCTION)
 *   TOOLSHED_RUNNER_URL       another Invoke endpoint (locally: infra/container/local-server.ts)
 *   TOOLSHED_RUNNER_SECRET    signs every invocation (lib/exec/runner-auth.ts); the runner holds the
 *                             same value. Without it, commands answer UNAVAILABLE naming it.
 *   AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY  (on Lambda, the role's credentials are used)
 * Without a function name or URL, commands are off (the bash tools answer UNAVAILABLE).
 */
import { LambdaClient } from "@aws-sdk/client-lambda";
import type { Executor } from "./types.js";
import { lambdaExecutor } from "./lambda.js";

export interface RunnerEnv {
  TOOLSHED_RUNNER_FUNCTION?: string;
  TOOLSHED_RUNNER_FUNCTION_NETWORK?: string;
  TOOLSHED_RUNNER_URL?: string;
  TOOLSHED_RUNNER_SECRET?: string;
  AWS_REGION?: string;
  AWS_ACCESS_KEY_ID?: string;
  AWS_SECRET_ACCESS_KEY?: string;
}

/** Longer than the longest command (10 min) plus materialize and write-back. */
const INVOKE_TIMEOUT_MS = 16 * 60 * 1000;

export function executorFromEnv(env: RunnerEnv): Executor | undefined {
  if (!env.TOOLSHED_RUNNER_FUNCTION && !env.TOOLSHED_RUNNER_URL) return undefined;
  const keys = env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY ? { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY } : undefined;
  const client = new LambdaClient({
    region: env.AWS_REGION ?? "us-east-1",
    requestHandler: { requestTimeout: INVOKE_TIMEOUT_MS },
    maxAttempts: 3,
    ...(env.TOOLSHED_RUNNER_URL ? { endpoint: env.TOOLSHED_RUNNER_URL } : {}),
    // The local stand-in does not check SigV4 (it checks the runner signature); the SDK still needs some credentials to sign with.
    ...(keys ? { credentials: keys } : env.TOOLSHED_RUNNER_URL ? { credentials: { accessKeyId: "local", secretAccessKey: "local" } } : {}),
  });
  return lambdaExecutor({
    client,
    functionName: env.TOOLSHED_RUNNER_FUNCTION ?? "toolshed-runner",
    secret: env.TOOLSHED_RUNNER_SECRET,
    ...(env.TOOLSHED_RUNNER_FUNCTION_NETWORK ? { networkFunctionName: env.TOOLSHED_RUNNER_FUNCTION_NETWORK } : {}),
  });
}

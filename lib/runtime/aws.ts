/**
 * Builds AppDeps for AWS Lambda from process.env: S3 for files, a KeyValueStore kept in the
 * same bucket (under kv/, apart from tenant data under t/), the bash container function.
 */
import { S3Client } from "@aws-sdk/client-s3";
import type { AppDeps } from "../api/deps.js";
import { commonDeps, type CommonEnv } from "./workers.js";
import { cacheBytesFor, IsolateMemory } from "../shared/isolate-memory.js";
import { s3Driver } from "../storage/drivers/s3.js";
import { storageKeyValue } from "../storage/kv-over-storage.js";
import { nodeFetcher } from "../tools/web/node-fetcher.js";
import { memoryLiveCoordinator } from "../exec/live/memory.js";
import { LIVE_TIMINGS } from "../exec/live/service.js";

export interface AwsEnv extends CommonEnv {
  TOOLSHED_BUCKET?: string;
  /** Another S3 endpoint (R2's S3 API, a local server); path-style addressing is then used. */
  S3_ENDPOINT?: string;
  /** Set by Lambda: the function's memory in MB (the caches' budget is a quarter of it: lib/shared/isolate-memory.ts). */
  AWS_LAMBDA_FUNCTION_MEMORY_SIZE?: string;
}

export function fromAwsEnv(env: AwsEnv, client?: S3Client): AppDeps {
  if (!env.TOOLSHED_BUCKET) throw new Error("TOOLSHED_BUCKET is not set");
  const s3 =
    client ??
    new S3Client({
      region: env.AWS_REGION ?? "us-east-1",
      ...(env.S3_ENDPOINT ? { endpoint: env.S3_ENDPOINT, forcePathStyle: true, requestChecksumCalculation: "WHEN_REQUIRED" as const } : {}),
    });
  const storage = s3Driver({ client: s3, bucket: env.TOOLSHED_BUCKET });
  // web_fetch resolves names itself here and connects only to checked addresses (DNS rebinding).
  const memory = new IsolateMemory(cacheBytesFor(env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE === undefined ? undefined : Number(env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE)));
  // hono/aws-lambda's handle() sends a response whole: an MCP client's ask_user question (elicitation on
  // the call's SSE stream) reaches it only with the call's answer, so the call does not wait for the
  // answer; it answers NEEDS_INPUT at once and the model reads the answer with pending_result (docs/mcp-pending.md).
  // Live sessions: the coordinator in this instance's memory: exact only while one instance serves the API
  // (a session's calls and its runner's polls must reach the same process; docs/live-sessions.md).
  const liveCoordinator = memoryLiveCoordinator(LIVE_TIMINGS);
  return { storage, kv: storageKeyValue(storage, "kv/"), memory, liveCoordinator, ...commonDeps(env), webFetch: { fetcher: nodeFetcher() }, pending: { askWaitMs: 0 } };
}

/**
 * Builds AppDeps for AWS Lambda from process.env: S3 for files, a KeyValueStore kept in the
 * same bucket (under kv/, apart from tenant data under t/), the bash container function, and with
 * TOOLSHED_TABLE the usage and limits stores and live sessions' coordinators in DynamoDB (docs/usage.md,
 * docs/limits-and-quotas.md, docs/live-sessions.md).
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { S3Client } from "@aws-sdk/client-s3";
import type { AppDeps } from "../api/deps.js";
import { commonDeps, type CommonEnv } from "./workers.js";
import { cacheBytesFor, IsolateMemory } from "../shared/isolate-memory.js";
import { s3Driver } from "../storage/drivers/s3.js";
import { storageKeyValue } from "../storage/kv-over-storage.js";
import { nodeFetcher } from "../tools/web/node-fetcher.js";
import { dynamoLiveCoordinator } from "../exec/live/dynamodb.js";
import { memoryLiveCoordinator } from "../exec/live/memory.js";
import { LIVE_TIMINGS } from "../exec/live/service.js";
import { dynamoLimits } from "../limits/dynamodb.js";
import { dynamoUsageStore } from "../run/metering/dynamodb-store.js";
import { heldUsageStore } from "../run/metering/held-store.js";
import type { UsageStore } from "../run/metering/store.js";
import type { HoldOptions } from "../shared/held-batches.js";
import { businessPartsOff } from "./business.js";

export interface AwsEnv extends CommonEnv {
  TOOLSHED_BUCKET?: string;
  /** Another S3 endpoint (R2's S3 API, a local server); path-style addressing is then used. */
  S3_ENDPOINT?: string;
  /**
   * The DynamoDB table of usage and limits (infra/aws/storage.ts; lib/shared/dynamodb-table.ts).
   * Unset: no usage store (usage goes to the logs only; GET /v1/usage answers UNAVAILABLE) and no
   * limits store (nothing is limited). TOOLSHED_BUSINESS_OFF turns either part off with it set.
   */
  TOOLSHED_TABLE?: string;
  /** Another DynamoDB endpoint (a local server such as dynalite). */
  DYNAMODB_ENDPOINT?: string;
  /**
   * Where live sessions' (keep_alive) coordinators are (docs/live-sessions.md): `dynamodb`, one item
   * per session in TOOLSHED_TABLE that every execution environment shares (lib/exec/live/dynamodb.ts;
   * needs TOOLSHED_TABLE and TOOLSHED_SYNC_SECRET); `memory`, this process's memory, for a deployment
   * where one process serves every request of the API at once (the entry on one host); `off`, none:
   * keep_alive is refused at once (UNAVAILABLE) and calls run fresh. Unset: `dynamodb` when
   * TOOLSHED_TABLE and the sync secret are set (as infra/aws deploys it), else `off`. Never `memory` on Lambda: it runs one
   * request per execution environment, so a live runner's held poll and its session's next call
   * would never reach the same memory (the runner would start, be billed, and never be reached).
   */
  TOOLSHED_LIVE_COORDINATOR?: string;
  /** Set by Lambda: the function's memory in MB (the caches' budget is a quarter of it: lib/shared/isolate-memory.ts). */
  AWS_LAMBDA_FUNCTION_MEMORY_SIZE?: string;
}

/** AppDeps, and what the Lambda entry awaits before it returns each answer. */
export type AwsDeps = AppDeps & {
  /**
   * Settles once the usage records written so far without waitUntil are in the store. A Lambda
   * environment is frozen once its handler returns, so a write still in flight would wait for the
   * next invocation (or be lost with the environment): the streaming handler (lib/runtime/lambda-stream.ts)
   * awaits this after the answer's stream has ended and the request's waitUntil work has settled.
   */
  usageSettled?: () => Promise<void>;
};

/**
 * How long after its task was made an MCP call answered as a task must have ended (deps.mcp.lateCallLostMs):
 * it goes on under the invocation's waitUntil, which lasts at most the function's timeout (15 min at most on Lambda).
 */
export const LAMBDA_LATE_CALL_LOST_MS = 16 * 60_000;

/**
 * Work after the answer is not held for others to join (the search index's changes, usage records):
 * an environment serves one request at a time, so a held second would only keep it busy (and billed)
 * while the handler waits for it (lib/runtime/lambda-stream.ts). What one request adds still goes as one batch.
 */
export const LAMBDA_HOLD: HoldOptions = { holdMs: 0 };

/** The usage sink of a Lambda environment: each call's record written and logged after the answer, under the request's waitUntil. */
export const lambdaUsageSink = (usageStore: UsageStore) => heldUsageStore(usageStore, LAMBDA_HOLD);

/** The client of TOOLSHED_TABLE. */
const tableClient = (env: AwsEnv) => new DynamoDBClient({ region: env.AWS_REGION ?? "us-east-1", ...(env.DYNAMODB_ENDPOINT ? { endpoint: env.DYNAMODB_ENDPOINT } : {}) });

/** The usage and limits stores over TOOLSHED_TABLE, each unless TOOLSHED_BUSINESS_OFF names it. */
function businessStores(env: AwsEnv, client: DynamoDBClient | undefined): Pick<AwsDeps, "usageStore" | "onUsage" | "limits" | "usageSettled"> {
  if (!env.TOOLSHED_TABLE || !client) return {};
  const off = businessPartsOff(env);
  const table = env.TOOLSHED_TABLE;
  const out: ReturnType<typeof businessStores> = {};
  if (!off.has("metering")) {
    const usageStore = dynamoUsageStore({ client, table });
    const sink = lambdaUsageSink(usageStore);
    Object.assign(out, { usageStore, onUsage: sink, usageSettled: sink.settled });
  }
  if (!off.has("limits")) out.limits = dynamoLimits({ client, table });
  return out;
}

/** The live coordinator TOOLSHED_LIVE_COORDINATOR names (see AwsEnv); refuses to start on a value it cannot make, saying what to set. */
function liveCoordinator(env: AwsEnv, client: DynamoDBClient | undefined): Pick<AwsDeps, "liveCoordinator"> {
  const kind = env.TOOLSHED_LIVE_COORDINATOR ?? (env.TOOLSHED_TABLE && env.TOOLSHED_SYNC_SECRET ? "dynamodb" : "off");
  if (kind === "off") return {};
  if (kind === "memory") return { liveCoordinator: memoryLiveCoordinator(LIVE_TIMINGS) };
  if (kind !== "dynamodb") throw new Error(`TOOLSHED_LIVE_COORDINATOR is "${kind}": set it to "dynamodb" (a DynamoDB item per session, shared by every environment), "memory" (one process serves every request), "off" (no live sessions), or leave it unset (dynamodb when TOOLSHED_TABLE and TOOLSHED_SYNC_SECRET are set, else off)`);
  const missing = [env.TOOLSHED_TABLE ? "" : "TOOLSHED_TABLE (the API's DynamoDB table: infra/aws/storage.ts)", env.TOOLSHED_SYNC_SECRET ? "" : "TOOLSHED_SYNC_SECRET or TOOLSHED_SYNC_SECRET_ARN (the live state is sealed under it)"].filter(Boolean);
  if (!env.TOOLSHED_TABLE || !client || !env.TOOLSHED_SYNC_SECRET) throw new Error(`TOOLSHED_LIVE_COORDINATOR=dynamodb needs ${missing.join(" and ")}: set ${missing.length > 1 ? "them" : "it"}, or set TOOLSHED_LIVE_COORDINATOR=off`);
  return { liveCoordinator: dynamoLiveCoordinator({ client, table: env.TOOLSHED_TABLE, secret: env.TOOLSHED_SYNC_SECRET, timings: LIVE_TIMINGS }) };
}

export function fromAwsEnv(env: AwsEnv, client?: S3Client): AwsDeps {
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
  // Answers stream (infra/lambda.ts, lib/runtime/lambda-stream.ts): an MCP client's ask_user question
  // (elicitation on the call's SSE stream) reaches it while the call waits for the answer, as on Workers.
  // Live sessions: a DynamoDB item per session where TOOLSHED_TABLE is (TOOLSHED_LIVE_COORDINATOR above; docs/live-sessions.md).
  const table = env.TOOLSHED_TABLE ? tableClient(env) : undefined;
  return { storage, kv: storageKeyValue(storage, "kv/"), memory, ...liveCoordinator(env, table), ...commonDeps(env, LAMBDA_HOLD), ...businessStores(env, table), webFetch: { fetcher: nodeFetcher() }, mcp: { lateCallLostMs: LAMBDA_LATE_CALL_LOST_MS } };
}

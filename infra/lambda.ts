/**
 * AWS Lambda entry (a function URL with InvokeMode RESPONSE_STREAM): the same app over S3, answered
 * through response streaming; `gcHandler` for a schedule.
 */
import { tools } from "../functions/index.js";
import { createApp } from "../lib/api/app.js";
import { fromAwsEnv } from "../lib/runtime/aws.js";
import { streamingHandler } from "../lib/runtime/lambda-stream.js";
import { resolveSecretEnv } from "../lib/shared/secret-env.js";
import { housekeepingTick } from "../lib/runtime/housekeeping.js";
import { appLiveService } from "../lib/api/live-events.js";

// Secrets come by ARN on AWS (TOOLSHED_*_ARN, read once at start) or as plain values locally.
const deps = fromAwsEnv(await resolveSecretEnv(process.env));
const app = createApp(deps, tools);
/**
 * The answer streams to the client and its stream ends; then the work the app deferred (waitUntil:
 * usage and audit records, index upkeep, session records, tasks answered early) and the usage records
 * written without it are awaited before the handler returns (a returned handler's environment is frozen).
 */
export const handler = streamingHandler((req, env, ctx) => app.fetch(req, env, ctx), deps.usageSettled ? { settled: deps.usageSettled } : {});

/** An EventBridge schedule (e.g. every 30 minutes) invokes this: GC of packs and manifests and the audit log's retention, a few tenants per tick (README "GC"). */
export const gcHandler = async (): Promise<{ tenants: number; cursor: string | null }> => {
  const r = await housekeepingTick({ storage: deps.storage, kv: deps.kv, live: appLiveService(deps) }, process.env);
  await deps.usageSettled?.(); // the usage records of forgotten live ends it billed (written at once where nothing was held)
  return { tenants: r.tenants.length, cursor: r.cursor };
};

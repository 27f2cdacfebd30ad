/** AWS Lambda entry (API Gateway v2 / function URL): the same app over S3; `gcHandler` for a schedule. */
import { handle } from "hono/aws-lambda";
import { tools } from "../functions/index.js";
import { createApp } from "../lib/api/app.js";
import { fromAwsEnv } from "../lib/runtime/aws.js";
import { resolveSecretEnv } from "../lib/shared/secret-env.js";
import { housekeepingTick } from "../lib/runtime/housekeeping.js";

// Secrets come by ARN on AWS (TOOLSHED_*_ARN, read once at start) or as plain values locally.
const deps = fromAwsEnv(await resolveSecretEnv(process.env));
const app = handle(createApp(deps, tools));
/** The app's answer, returned once its usage records are stored (a frozen environment would hold them: lib/runtime/aws.ts AwsDeps.usageSettled). */
export const handler: typeof app = async (event, context) => {
  try {
    return await app(event, context);
  } finally {
    await deps.usageSettled?.();
  }
};

/** An EventBridge schedule (e.g. every 30 minutes) invokes this: GC of packs and manifests and the audit log's retention, a few tenants per tick (README "GC"). */
export const gcHandler = async (): Promise<{ tenants: number; cursor: string | null }> => {
  const r = await housekeepingTick({ storage: deps.storage, kv: deps.kv }, process.env);
  return { tenants: r.tenants.length, cursor: r.cursor };
};

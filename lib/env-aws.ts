/**
 * Builds AppDeps for AWS Lambda from process.env: S3 for files, a KeyValueStore kept in the
 * same bucket (under kv/, apart from tenant data under t/), the bash container function.
 */
import { S3Client } from "@aws-sdk/client-s3";
import type { AppDeps } from "./deps.js";
import { logUsage } from "./metering/usage.js";
import { executorFromEnv, type RunnerEnv } from "./exec/from-env.js";
import { s3Driver } from "./storage/drivers/s3.js";
import { storageKeyValue } from "./storage/kv-over-storage.js";
import { searchIndexer } from "./search/indexer.js";

export interface AwsEnv extends RunnerEnv {
  TOOLSHED_BUCKET?: string;
  AWS_REGION?: string;
  /** Another S3 endpoint (R2's S3 API, a local server); path-style addressing is then used. */
  S3_ENDPOINT?: string;
  TOOLSHED_ADMIN_TOKEN?: string;
  TOOLSHED_SYNC_SECRET?: string;
  /** This API's public base URL, as the bash runner reaches it. */
  TOOLSHED_PUBLIC_URL?: string;
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
  const executor = executorFromEnv(env);
  return {
    storage,
    kv: storageKeyValue(storage, "kv/"),
    listeners: [searchIndexer()],
    ...(env.TOOLSHED_ADMIN_TOKEN ? { adminToken: env.TOOLSHED_ADMIN_TOKEN } : {}),
    ...(env.TOOLSHED_SYNC_SECRET ? { syncSecret: env.TOOLSHED_SYNC_SECRET } : {}),
    ...(env.TOOLSHED_PUBLIC_URL ? { syncUrl: env.TOOLSHED_PUBLIC_URL } : {}),
    ...(executor ? { executor } : {}),
    onUsage: logUsage,
  };
}

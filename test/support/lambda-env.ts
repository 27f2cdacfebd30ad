/**
 * The AWS Lambda entry's surroundings for a test: S3 (s3rver) and DynamoDB (dynalite) on 127.0.0.1,
 * a bucket and a table made as the deployment has them, and the environment variables infra/lambda.ts
 * and lib/runtime/aws.ts read (set on process.env: the entry reads it when it is imported, so import
 * it after lambdaEnv resolves). `stop` stops both servers and gives process.env back what it had.
 */
import { startDynamo, type DynamoServer } from "./dynalite.js";
import { startS3Server, type S3Server } from "./s3rver.js";

export interface LambdaEnvOptions {
  bucket: string;
  /** TOOLSHED_ADMIN_TOKEN. */
  adminToken: string;
  /** Usage and limits in DynamoDB (TOOLSHED_TABLE); false: files in S3 only (default true). */
  table?: boolean;
  /** More variables (TOOLSHED_SYNC_SECRET, ...). */
  vars?: Record<string, string>;
}

export interface LambdaEnv {
  s3: S3Server;
  /** null when made with table: false. */
  dynamo: DynamoServer | null;
  /** The variables set on process.env. */
  vars: Record<string, string>;
  stop(): Promise<void>;
}

export async function lambdaEnv(o: LambdaEnvOptions): Promise<LambdaEnv> {
  const [s3, dynamo] = await Promise.all([startS3Server(), o.table === false ? null : startDynamo()]);
  const stopServers = () => Promise.all([s3.stop(), dynamo?.stop()]).then(() => undefined);
  let vars: Record<string, string>;
  try {
    await s3.createBucket(o.bucket);
    vars = {
      TOOLSHED_BUCKET: o.bucket,
      S3_ENDPOINT: s3.endpoint,
      ...(dynamo ? { TOOLSHED_TABLE: await dynamo.createTable(), DYNAMODB_ENDPOINT: dynamo.endpoint } : {}),
      // s3rver's fixed local credentials (dynalite takes any).
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "S3RVER",
      AWS_SECRET_ACCESS_KEY: "S3RVER",
      TOOLSHED_ADMIN_TOKEN: o.adminToken,
      ...o.vars,
    };
  } catch (e) {
    await stopServers();
    throw e;
  }
  const before = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  return {
    s3,
    dynamo,
    vars,
    async stop() {
      for (const [k, v] of Object.entries(before)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      await stopServers();
    },
  };
}

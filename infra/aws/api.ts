/**
 * The API (infra/lambda.ts `handler`, response streaming) behind a function URL, and its GC (`gcHandler`, the same
 * bundle) on an EventBridge schedule. Each has a role of its own with only what it uses.
 */
import { Duration } from "aws-cdk-lib";
import * as events from "aws-cdk-lib/aws-events";
import * as eventTargets from "aws-cdk-lib/aws-events-targets";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import { TABLE_ACTIONS } from "../../lib/shared/dynamodb-table.ts";
import type { ToolshedSecrets } from "./secrets.ts";
import type { ToolshedData } from "./storage.ts";

export interface ApiProps {
  /** The directory bundleApi() wrote (index.mjs). */
  codeDir: string;
  data: ToolshedData;
  secrets: ToolshedSecrets;
  runner: lambda.IFunction;
  networkRunner: lambda.IFunction;
  /** The URL runners reach the API by (the sync endpoint). */
  syncUrl: string;
}

/** What the app does with its bucket (lib/storage/drivers/s3.ts): objects, conditional writes and deletes, listings. */
export const API_BUCKET_ACTIONS = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"];
/** The usage and limits stores' item actions (lib/shared/dynamodb-table.ts TABLE_ACTIONS), on the table only. */
export const API_TABLE_ACTIONS: string[] = [...TABLE_ACTIONS];

function bucketPolicy(data: ToolshedData, objectActions: string[]): iam.PolicyStatement[] {
  return [
    new iam.PolicyStatement({ actions: objectActions, resources: [data.bucket.arnForObjects("*")] }),
    new iam.PolicyStatement({ actions: ["s3:ListBucket"], resources: [data.bucket.bucketArn] }),
  ];
}

function roleWith(scope: Construct, id: string, statements: iam.PolicyStatement[]): iam.Role {
  const role = new iam.Role(scope, id, {
    assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
    managedPolicies: [iam.ManagedPolicy.fromAwsManagedPolicyName("service-role/AWSLambdaBasicExecutionRole")],
  });
  for (const s of statements) role.addToPolicy(s);
  return role;
}

export class ToolshedApi extends Construct {
  readonly api: lambda.Function;
  readonly gc: lambda.Function;
  readonly url: lambda.FunctionUrl;
  readonly gcRule: events.Rule;

  constructor(scope: Construct, id: string, props: ApiProps) {
    super(scope, id);
    const { data, secrets } = props;
    const code = lambda.Code.fromAsset(props.codeDir);

    const apiRole = roleWith(this, "ApiRole", [
      ...bucketPolicy(data, API_BUCKET_ACTIONS),
      new iam.PolicyStatement({ actions: API_TABLE_ACTIONS, resources: [data.table.tableArn] }),
      new iam.PolicyStatement({ actions: ["lambda:InvokeFunction"], resources: [props.runner.functionArn, props.networkRunner.functionArn] }),
    ]);
    for (const s of [secrets.sync, secrets.runner, secrets.admin]) s.grantRead(apiRole);

    this.api = new lambda.Function(this, "Api", {
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture: lambda.Architecture.ARM_64,
      code,
      handler: "index.handler",
      role: apiRole,
      memorySize: 1024,
      // A bash call waits for its runner: the longest command (10 min) plus sync.
      timeout: Duration.minutes(15),
      logGroup: new logs.LogGroup(this, "ApiLogs", { retention: logs.RetentionDays.ONE_MONTH }),
      environment: {
        TOOLSHED_BUCKET: data.bucket.bucketName,
        TOOLSHED_TABLE: data.table.tableName,
        TOOLSHED_RUNNER_FUNCTION: props.runner.functionName,
        TOOLSHED_RUNNER_FUNCTION_NETWORK: props.networkRunner.functionName,
        TOOLSHED_PUBLIC_URL: props.syncUrl,
        // Names of secrets, never their values: read at start (lib/shared/secret-env.ts).
        TOOLSHED_SYNC_SECRET_ARN: secrets.sync.secretArn,
        TOOLSHED_RUNNER_SECRET_ARN: secrets.runner.secretArn,
        TOOLSHED_ADMIN_TOKEN_ARN: secrets.admin.secretArn,
        NODE_OPTIONS: "--enable-source-maps",
      },
    });
    // The app authenticates every route itself (API keys, the admin token). Answers stream
    // (lib/runtime/lambda-stream.ts): the client has its answer when the stream ends, and the usage
    // and audit records are written after it, before the handler returns.
    this.url = this.api.addFunctionUrl({ authType: lambda.FunctionUrlAuthType.NONE, invokeMode: lambda.InvokeMode.RESPONSE_STREAM });

    // GC reads, lists and deletes objects, and keeps its cursor in the KV prefix (a PUT); no secrets.
    const gcRole = roleWith(this, "GcRole", bucketPolicy(data, API_BUCKET_ACTIONS));
    this.gc = new lambda.Function(this, "Gc", {
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture: lambda.Architecture.ARM_64,
      code,
      handler: "index.gcHandler",
      role: gcRole,
      memorySize: 1024,
      // One tick starts no tenant after 60 s (GC_TICK_BUDGET_MS); a tenant's GC then finishes.
      timeout: Duration.minutes(5),
      logGroup: new logs.LogGroup(this, "GcLogs", { retention: logs.RetentionDays.ONE_MONTH }),
      environment: { TOOLSHED_BUCKET: data.bucket.bucketName, NODE_OPTIONS: "--enable-source-maps" },
    });
    this.gcRule = new events.Rule(this, "GcSchedule", {
      description: "Toolshed GC: a few tenants per tick (lib/layers/gc-schedule.ts)",
      schedule: events.Schedule.rate(Duration.minutes(30)),
      targets: [new eventTargets.LambdaFunction(this.gc, { retryAttempts: 0 })],
    });
  }
}

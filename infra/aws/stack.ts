/**
 * The whole AWS deployment of Toolshed (docs/deploying-aws.md): data, secrets, the runners'
 * network and sync endpoint, the runners, the API and its GC, alarms. Environment-agnostic:
 * synthesizes offline, with no context lookups.
 */
import { CfnOutput, Stack, type StackProps } from "aws-cdk-lib";
import { Construct } from "constructs";
import { FunctionAlarms } from "./alarms.ts";
import { ToolshedApi } from "./api.ts";
import { RunnerNetwork } from "./network.ts";
import { ToolshedRunners } from "./runner.ts";
import { ToolshedSecrets } from "./secrets.ts";
import { ToolshedData } from "./storage.ts";
import { SyncEndpoint } from "./sync-endpoint.ts";

export interface ToolshedStackProps extends StackProps {
  /** The repository's root (the runner image's build context). */
  repoRoot: string;
  /** The bundled API (bundleApi()). */
  apiCodeDir: string;
  /** Reserved concurrency of each runner function (default: none reserved). */
  runnerConcurrency?: number;
}

export class ToolshedStack extends Stack {
  readonly data: ToolshedData;
  readonly secrets: ToolshedSecrets;
  readonly runners: ToolshedRunners;
  readonly api: ToolshedApi;

  constructor(scope: Construct, id: string, props: ToolshedStackProps) {
    super(scope, id, props);
    this.data = new ToolshedData(this, "Data");
    this.secrets = new ToolshedSecrets(this, "Secrets");
    const network = new RunnerNetwork(this, "Network");
    const sync = new SyncEndpoint(this, "Sync", { network });
    this.runners = new ToolshedRunners(this, "Runners", {
      repoRoot: props.repoRoot, network, secrets: this.secrets, syncUrl: sync.url,
      ...(props.runnerConcurrency !== undefined ? { reservedConcurrency: props.runnerConcurrency } : {}),
    });
    this.api = new ToolshedApi(this, "Api", {
      codeDir: props.apiCodeDir, data: this.data, secrets: this.secrets,
      runner: this.runners.isolated, networkRunner: this.runners.withNetwork, syncUrl: sync.url,
    });
    sync.target(this.api.api);
    const alarms = new FunctionAlarms(this, "Alarms", {
      Api: this.api.api, Gc: this.api.gc, Runner: this.runners.isolated, NetworkRunner: this.runners.withNetwork,
    });

    new CfnOutput(this, "ApiUrl", { value: this.api.url.url, description: "The API's public URL (function URL)" });
    new CfnOutput(this, "BucketName", { value: this.data.bucket.bucketName });
    new CfnOutput(this, "TableName", { value: this.data.table.tableName });
    new CfnOutput(this, "AdminTokenSecret", { value: this.secrets.admin.secretArn, description: "aws secretsmanager get-secret-value --secret-id <this> to read the admin token" });
    new CfnOutput(this, "AlarmTopic", { value: alarms.topic.topicArn, description: "Subscribe to get the alarms" });
  }
}

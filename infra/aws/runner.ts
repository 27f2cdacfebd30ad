/**
 * The bash runner (infra/container), deployed twice from one image: without network, in subnets
 * with no route out (TOOLSHED_RUNNER_EGRESS=none), and with network, behind the egress ACL
 * (network.ts). Both with tenant isolation PER_TENANT (the API invokes with TenantId = tenant;
 * the handler refuses an invocation without it when it runs the process sandbox).
 *
 * The role reaches no storage: logs, the network interfaces Lambda makes for a VPC function
 * (AWSLambdaVPCAccessExecutionRole), and GetSecretValue on the runner secret alone, which the
 * image's entrypoint reads before it drops the role's credentials (infra/container/Dockerfile).
 */
import { Duration, Size } from "aws-cdk-lib";
import type * as ec2 from "aws-cdk-lib/aws-ec2";
import { Platform } from "aws-cdk-lib/aws-ecr-assets";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import { IgnoreMode } from "aws-cdk-lib";
import { Construct } from "constructs";
import type { RunnerNetwork } from "./network.ts";
import type { ToolshedSecrets } from "./secrets.ts";

export interface RunnerProps {
  /** The repository's root: the image's build context (infra/container/Dockerfile). */
  repoRoot: string;
  network: RunnerNetwork;
  secrets: ToolshedSecrets;
  /** The API's URL as runners reach it (runs naming another sync origin are refused). */
  syncUrl: string;
  /** Reserved concurrency of each runner function: guarantees it and caps it, so runners never starve the API. */
  reservedConcurrency?: number;
}

/**
 * The image's build context, as .dockerignore lines: only what the Dockerfile copies. cdk synth
 * copies this into cdk.out (no Docker needed); cdk deploy builds and pushes it.
 */
export const IMAGE_CONTEXT = ["*", "!package.json", "!package-lock.json", "!lib", "!infra", "infra/*", "!infra/container"];

export class ToolshedRunners extends Construct {
  readonly isolated: lambda.DockerImageFunction;
  readonly withNetwork: lambda.DockerImageFunction;

  constructor(scope: Construct, id: string, props: RunnerProps) {
    super(scope, id);
    const code = lambda.DockerImageCode.fromImageAsset(props.repoRoot, {
      file: "infra/container/Dockerfile",
      exclude: IMAGE_CONTEXT,
      ignoreMode: IgnoreMode.DOCKER,
      platform: Platform.LINUX_AMD64,
    });
    const runner = (name: string, subnets: ec2.SubnetSelection, group: ec2.ISecurityGroup, extraEnv: Record<string, string>) => {
      const fn = new lambda.DockerImageFunction(this, name, {
        code,
        architecture: lambda.Architecture.X86_64,
        tenancyConfig: lambda.TenancyConfig.PER_TENANT,
        memorySize: 2048,
        // Slots, the run's tree and its logs: the largest workspace plus what a command adds.
        ephemeralStorageSize: Size.gibibytes(10),
        timeout: Duration.minutes(15),
        vpc: props.network.vpc,
        vpcSubnets: subnets,
        securityGroups: [group],
        ...(props.reservedConcurrency !== undefined ? { reservedConcurrentExecutions: props.reservedConcurrency } : {}),
        // An asynchronous run (a background task) reports to its run record; a retry would only find its claim.
        retryAttempts: 0,
        logGroup: new logs.LogGroup(this, `${name}Logs`, { retention: logs.RetentionDays.ONE_MONTH }),
        environment: {
          TOOLSHED_PUBLIC_URL: props.syncUrl,
          // The secret's name, never its value: the entrypoint reads it into a file, then drops the credentials.
          TOOLSHED_RUNNER_SECRET_ARN: props.secrets.runner.secretArn,
          ...extraEnv,
        },
      });
      props.secrets.runner.grantRead(fn);
      return fn;
    };
    this.isolated = runner("Runner", props.network.isolatedSubnets, props.network.isolatedGroup, { TOOLSHED_RUNNER_EGRESS: "none" });
    this.withNetwork = runner("NetworkRunner", props.network.egressSubnets, props.network.egressGroup, {});
  }
}

/**
 * The runners' way to the API: an internal load balancer in the sync subnets whose target is the
 * API function. A function URL is public only, so a runner in a subnet with no route out could not
 * reach it; this is the "route to the API only" of docs/sandbox-network.md. Its URL is the API's
 * TOOLSHED_PUBLIC_URL (the sync URL the API puts in every run) and the runners' (they refuse a
 * run whose sync URL has another origin).
 */
import * as elbv2 from "aws-cdk-lib/aws-elasticloadbalancingv2";
import * as targets from "aws-cdk-lib/aws-elasticloadbalancingv2-targets";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import { Construct } from "constructs";
import { SYNC_PORT, type RunnerNetwork } from "./network.ts";

export class SyncEndpoint extends Construct {
  readonly balancer: elbv2.ApplicationLoadBalancer;
  readonly url: string;

  constructor(scope: Construct, id: string, props: { network: RunnerNetwork }) {
    super(scope, id);
    const { network } = props;
    this.balancer = new elbv2.ApplicationLoadBalancer(this, "Balancer", {
      vpc: network.vpc,
      internetFacing: false,
      vpcSubnets: network.syncSubnets,
      securityGroup: network.syncGroup,
    });
    this.url = `http://${this.balancer.loadBalancerDnsName}`;
  }

  /** Sends every request to the API function (hono/aws-lambda answers ALB events as it does URL ones). */
  target(api: lambda.IFunction): void {
    this.balancer.addListener("Http", { port: SYNC_PORT, protocol: elbv2.ApplicationProtocol.HTTP, open: false })
      .addTargets("Api", { targets: [new targets.LambdaTarget(api)] });
  }
}

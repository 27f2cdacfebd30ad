/**
 * The runners' network (docs/sandbox-network.md, "On AWS Lambda"): on Lambda the process sandbox
 * shares the function's network, so the egress policy is the VPC's.
 *   sync      the internal load balancer in front of the API: the one thing a runner may reach
 *   isolated  the runner without network (TOOLSHED_RUNNER_EGRESS=none): no route out; its ACL lets
 *             through only the sync subnets' HTTP port
 *   egress    the runner for keys with the network scope: out through a NAT gateway; its ACL denies
 *             private, shared, link-local, loopback and multicast ranges, then allows the internet
 * Security groups cannot deny, so the ACLs carry the denials; no VPC endpoints, peering or
 * gateways are attached, so the route tables stay bare.
 */
import * as ec2 from "aws-cdk-lib/aws-ec2";
import { Construct } from "constructs";

/** What a command with network must never reach (the rule set of lib/tools/web/ssrf.ts, as CIDRs). */
export const DENIED_EGRESS_CIDRS = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16", "127.0.0.0/8", "0.0.0.0/8", "224.0.0.0/3"];
/** The sync endpoint's port (HTTP inside the VPC: docs/deploying-aws.md, "Sync endpoint"). */
export const SYNC_PORT = 80;

export class RunnerNetwork extends Construct {
  readonly vpc: ec2.Vpc;
  readonly syncSubnets: ec2.SubnetSelection;
  readonly isolatedSubnets: ec2.SubnetSelection;
  readonly egressSubnets: ec2.SubnetSelection;
  readonly syncGroup: ec2.SecurityGroup;
  readonly isolatedGroup: ec2.SecurityGroup;
  readonly egressGroup: ec2.SecurityGroup;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.vpc = new ec2.Vpc(this, "Vpc", {
      ipAddresses: ec2.IpAddresses.cidr("10.80.0.0/16"),
      maxAzs: 2,
      natGateways: 1,
      subnetConfiguration: [
        { name: "nat", subnetType: ec2.SubnetType.PUBLIC, cidrMask: 26 },
        { name: "egress", subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 20 },
        { name: "isolated", subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: 20 },
        { name: "sync", subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: 26 },
      ],
    });
    this.syncSubnets = { subnetGroupName: "sync" };
    this.isolatedSubnets = { subnetGroupName: "isolated" };
    this.egressSubnets = { subnetGroupName: "egress" };
    const syncCidrs = this.vpc.selectSubnets(this.syncSubnets).subnets.map((s) => s.ipv4CidrBlock);

    this.syncGroup = new ec2.SecurityGroup(this, "SyncGroup", { vpc: this.vpc, allowAllOutbound: false, description: "Toolshed sync endpoint (internal load balancer)" });
    this.isolatedGroup = new ec2.SecurityGroup(this, "IsolatedRunnerGroup", { vpc: this.vpc, allowAllOutbound: false, description: "Toolshed runner without network: the sync endpoint only" });
    this.egressGroup = new ec2.SecurityGroup(this, "EgressRunnerGroup", { vpc: this.vpc, allowAllOutbound: false, description: "Toolshed runner with network: outbound TCP (the ACL denies internal ranges)" });
    for (const runner of [this.isolatedGroup, this.egressGroup]) {
      runner.addEgressRule(this.syncGroup, ec2.Port.tcp(SYNC_PORT), "the sync endpoint");
      this.syncGroup.addIngressRule(runner, ec2.Port.tcp(SYNC_PORT), "runners reach the sync endpoint");
    }
    this.egressGroup.addEgressRule(ec2.Peer.anyIpv4(), ec2.Port.allTcp(), "public internet (internal ranges denied by the ACL)");

    const ephemeral = ec2.AclTraffic.tcpPortRange(1024, 65535);
    const isolatedAcl = new ec2.NetworkAcl(this, "IsolatedAcl", { vpc: this.vpc, subnetSelection: this.isolatedSubnets });
    syncCidrs.forEach((cidr, i) => {
      isolatedAcl.addEntry(`ToSync${i}`, { ruleNumber: 100 + i, cidr: ec2.AclCidr.ipv4(cidr), traffic: ec2.AclTraffic.tcpPort(SYNC_PORT), direction: ec2.TrafficDirection.EGRESS, ruleAction: ec2.Action.ALLOW });
      isolatedAcl.addEntry(`FromSync${i}`, { ruleNumber: 100 + i, cidr: ec2.AclCidr.ipv4(cidr), traffic: ephemeral, direction: ec2.TrafficDirection.INGRESS, ruleAction: ec2.Action.ALLOW });
    });
    // Nothing else: a network ACL denies what no rule allows.

    const egressAcl = new ec2.NetworkAcl(this, "EgressAcl", { vpc: this.vpc, subnetSelection: this.egressSubnets });
    syncCidrs.forEach((cidr, i) => {
      // Before the denials: the sync endpoint is in 10.0.0.0/8.
      egressAcl.addEntry(`ToSync${i}`, { ruleNumber: 10 + i, cidr: ec2.AclCidr.ipv4(cidr), traffic: ec2.AclTraffic.tcpPort(SYNC_PORT), direction: ec2.TrafficDirection.EGRESS, ruleAction: ec2.Action.ALLOW });
    });
    DENIED_EGRESS_CIDRS.forEach((cidr, i) => {
      egressAcl.addEntry(`Deny${i}`, { ruleNumber: 100 + i, cidr: ec2.AclCidr.ipv4(cidr), traffic: ec2.AclTraffic.allTraffic(), direction: ec2.TrafficDirection.EGRESS, ruleAction: ec2.Action.DENY });
    });
    egressAcl.addEntry("Internet", { ruleNumber: 200, cidr: ec2.AclCidr.anyIpv4(), traffic: ec2.AclTraffic.allTraffic(), direction: ec2.TrafficDirection.EGRESS, ruleAction: ec2.Action.ALLOW });
    // Return traffic of the connections the runner opened (security groups are stateful, ACLs are not).
    egressAcl.addEntry("Replies", { ruleNumber: 100, cidr: ec2.AclCidr.anyIpv4(), traffic: ephemeral, direction: ec2.TrafficDirection.INGRESS, ruleAction: ec2.Action.ALLOW });
  }
}

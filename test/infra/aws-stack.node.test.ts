/**
 * The AWS stack (infra/aws) synthesized offline, as `npm run deploy:aws -- --dry-run` does: the
 * template's security properties (issue #28 §8). Each check also runs on a copy of the template
 * with the flaw it looks for, so every assertion is shown able to fail.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Match, Template } from "aws-cdk-lib/assertions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { synthesize } from "../../infra/aws/app.ts";
import {
  alarmProblems, apiInvokeProblems, apiStreamingProblems, bucketProblems, egressProblems, environmentSecretProblems, gcScheduleProblems,
  resources, runnerRoleProblems, statementsOf, tenantIsolationProblems, wildcardDataActions, type Tpl,
} from "../support/aws-template-checks.ts";
import { TABLE_ACTIONS, TABLE_KEYS } from "../../lib/shared/dynamodb-table.ts";

const outdir = mkdtempSync(join(tmpdir(), "toolshed-cdk-"));
let tpl: Tpl;

beforeAll(async () => {
  const { templateFile } = await synthesize({ outdir });
  tpl = JSON.parse(readFileSync(templateFile, "utf8")) as Tpl;
}, 300_000);
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

/** A copy of the template changed by `edit`. */
const flawed = (edit: (t: Tpl) => void): Tpl => {
  const copy = structuredClone(tpl);
  edit(copy);
  return copy;
};
const first = (t: Tpl, type: string, where: (p: any) => boolean = () => true) => resources(t, type).find((r) => where(r.props))!;
const apiFn = (t: Tpl) => first(t, "AWS::Lambda::Function", (p) => p.Handler === "index.handler");
const runnerFn = (t: Tpl) => first(t, "AWS::Lambda::Function", (p) => p.PackageType === "Image");
const policyOf = (t: Tpl, fn: { props: any }) => first(t, "AWS::IAM::Policy", (p) => p.Roles.some((r: any) => r.Ref === fn.props.Role["Fn::GetAtt"][0]));

describe("the AWS stack", () => {
  it("has no IAM statement with * actions, or wildcards over S3 or DynamoDB", () => {
    expect(wildcardDataActions(tpl)).toEqual([]);
    expect(wildcardDataActions(flawed((t) => policyOf(t, apiFn(t)).props.PolicyDocument.Statement.push({ Effect: "Allow", Action: "s3:*", Resource: "*" })))).toEqual([expect.stringContaining("s3:*")]);
    expect(wildcardDataActions(flawed((t) => policyOf(t, apiFn(t)).props.PolicyDocument.Statement.push({ Effect: "Allow", Action: ["dynamodb:Get*"], Resource: "*" })))).toHaveLength(1);
  });

  it("gives the runners' roles no storage: logs, VPC interfaces and the runner secret only", () => {
    expect(runnerRoleProblems(tpl)).toEqual([]);
    expect(runnerRoleProblems(flawed((t) => policyOf(t, runnerFn(t)).props.PolicyDocument.Statement.push({ Effect: "Allow", Action: "dynamodb:GetItem", Resource: "x" })))).toEqual([expect.stringContaining("storage action dynamodb:GetItem")]);
    expect(runnerRoleProblems(flawed((t) => t.Resources[runnerFn(t).props.Role["Fn::GetAtt"][0]]!.Properties.ManagedPolicyArns.push("arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess")))).toEqual([expect.stringContaining("AmazonS3ReadOnlyAccess")]);
    // The API's role keeps what the app uses: objects and listing of its bucket, items of its table.
    const api = statementsOf(tpl, apiFn(tpl).props.Role["Fn::GetAtt"][0]).flatMap((s) => [s.Action].flat());
    expect(api).toEqual(expect.arrayContaining(["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:ListBucket", "dynamodb:GetItem", "dynamodb:PutItem", "lambda:InvokeFunction"]));
  });

  it("lets the API invoke the two runners and no other function", () => {
    expect(apiInvokeProblems(tpl)).toEqual([]);
    expect(apiInvokeProblems(flawed((t) => policyOf(t, apiFn(t)).props.PolicyDocument.Statement.push({ Effect: "Allow", Action: "lambda:InvokeFunction", Resource: "*" })))).toEqual(['API invokes "*"']);
  });

  it("runs every runner with tenant isolation PER_TENANT", () => {
    expect(tenantIsolationProblems(tpl)).toEqual([]);
    Template.fromJSON(tpl).resourcePropertiesCountIs("AWS::Lambda::Function", { PackageType: "Image", TenancyConfig: { TenantIsolationMode: "PER_TENANT" } }, 2);
    expect(tenantIsolationProblems(flawed((t) => delete runnerFn(t).props.TenancyConfig))).toHaveLength(1);
  });

  it("keeps the bucket private, encrypted and TLS only", () => {
    expect(bucketProblems(tpl)).toEqual([]);
    expect(bucketProblems(flawed((t) => (first(t, "AWS::S3::Bucket").props.PublicAccessBlockConfiguration.RestrictPublicBuckets = false)))).toEqual([expect.stringContaining("RestrictPublicBuckets")]);
    expect(bucketProblems(flawed((t) => (first(t, "AWS::S3::BucketPolicy").props.PolicyDocument.Statement = [])))).toEqual([expect.stringContaining("without TLS")]);
    expect(bucketProblems(flawed((t) => delete first(t, "AWS::S3::Bucket").props.BucketEncryption))).toEqual([expect.stringContaining("no encryption")]);
  });

  it("puts no secret value in any function's environment: ARNs of Secrets Manager secrets only", () => {
    expect(environmentSecretProblems(tpl)).toEqual([]);
    expect(environmentSecretProblems(flawed((t) => (apiFn(t).props.Environment.Variables.TOOLSHED_SYNC_SECRET = "plain")))).toEqual([expect.stringContaining("TOOLSHED_SYNC_SECRET holds a value")]);
    expect(environmentSecretProblems(flawed((t) => (runnerFn(t).props.Environment.Variables.TOOLSHED_PUBLIC_URL = "{{resolve:secretsmanager:x:SecretString}}")))).toHaveLength(1);
    expect(environmentSecretProblems(flawed((t) => (runnerFn(t).props.Environment.Variables.TOOLSHED_RUNNER_SECRET_ARN = "arn:aws:s3:::elsewhere")))).toHaveLength(1);
    expect(environmentSecretProblems(flawed((t) => delete apiFn(t).props.Environment.Variables.TOOLSHED_ADMIN_TOKEN_ARN))).toEqual(["the API has no TOOLSHED_ADMIN_TOKEN_ARN"]);
  });

  it("streams the API's answers through its function URL (RESPONSE_STREAM)", () => {
    expect(apiStreamingProblems(tpl)).toEqual([]);
    expect(apiStreamingProblems(flawed((t) => delete first(t, "AWS::Lambda::Url").props.InvokeMode))).toEqual([expect.stringContaining("BUFFERED")]);
  });

  it("calls the GC entry on a schedule", () => {
    expect(gcScheduleProblems(tpl)).toEqual([]);
    expect(gcScheduleProblems(flawed((t) => (first(t, "AWS::Events::Rule").props.State = "DISABLED")))).toEqual(["no enabled schedule targets the GC function"]);
  });

  it("alarms on every function's errors and throttles", () => {
    expect(alarmProblems(tpl)).toEqual([]);
    expect(resources(tpl, "AWS::CloudWatch::Alarm")).toHaveLength(2 * resources(tpl, "AWS::Lambda::Function").length);
    expect(alarmProblems(flawed((t) => delete t.Resources[first(t, "AWS::CloudWatch::Alarm", (p) => p.MetricName === "Throttles").id]))).toEqual([expect.stringContaining("no alarm on Throttles")]);
  });

  it("gives the runner without network no route out, and denies internal ranges to the one with network", () => {
    expect(egressProblems(tpl)).toEqual([]);
    const open = egressProblems(flawed((t) => delete t.Resources[first(t, "AWS::EC2::NetworkAclEntry", (p) => p.CidrBlock === "169.254.0.0/16").id]));
    expect(open.length).toBeGreaterThan(0); // one per subnet of the runner
    expect(open.every((p) => p.includes("169.254.0.0/16 is not denied"))).toBe(true);
    expect(egressProblems(flawed((t) => {
      const runner = first(t, "AWS::Lambda::Function", (p) => p.Environment?.Variables?.TOOLSHED_RUNNER_EGRESS === "none");
      const table = first(t, "AWS::EC2::SubnetRouteTableAssociation", (p) => p.SubnetId.Ref === runner.props.VpcConfig.SubnetIds[0].Ref).props.RouteTableId;
      t.Resources.LeakRoute = { Type: "AWS::EC2::Route", Properties: { RouteTableId: table, DestinationCidrBlock: "0.0.0.0/0", NatGatewayId: "x" } };
    }))).toHaveLength(1);
  });

  it("keeps usage and limits in an on-demand, encrypted table with point-in-time recovery, keyed and expired as the stores expect", () => {
    const template = Template.fromJSON(tpl);
    template.resourceCountIs("AWS::DynamoDB::Table", 1);
    template.hasResourceProperties("AWS::DynamoDB::Table", {
      BillingMode: "PAY_PER_REQUEST",
      KeySchema: [{ AttributeName: TABLE_KEYS.partition, KeyType: "HASH" }, { AttributeName: TABLE_KEYS.sort, KeyType: "RANGE" }],
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true },
      TimeToLiveSpecification: { AttributeName: TABLE_KEYS.ttl, Enabled: true },
    });
    expect(TABLE_KEYS).toEqual({ partition: "pk", sort: "sk", ttl: "expires_at" }); // a rename would replace the deployed table
    // The API reaches it by TOOLSHED_TABLE with exactly the stores' item actions, on the table alone; GC and the runners not at all.
    const tableId = Object.keys(tpl.Resources).find((id) => tpl.Resources[id]!.Type === "AWS::DynamoDB::Table")!;
    expect(apiFn(tpl).props.Environment.Variables.TOOLSHED_TABLE).toEqual({ Ref: tableId });
    const onTable = (t: Tpl, role: string) => statementsOf(t, role).filter((s) => [s.Action].flat().some((a) => String(a).startsWith("dynamodb:")));
    const apiTable = onTable(tpl, apiFn(tpl).props.Role["Fn::GetAtt"][0]);
    expect(apiTable.flatMap((s) => [s.Action].flat()).sort()).toEqual([...TABLE_ACTIONS].sort());
    expect(apiTable.map((s) => s.Resource)).toEqual([{ "Fn::GetAtt": [tableId, "Arn"] }]);
    const gcFn = first(tpl, "AWS::Lambda::Function", (p) => p.Handler === "index.gcHandler");
    expect(onTable(tpl, gcFn.props.Role["Fn::GetAtt"][0])).toEqual([]);
    expect(() => Template.fromJSON(flawed((t) => delete first(t, "AWS::DynamoDB::Table").props.PointInTimeRecoverySpecification)).hasResourceProperties("AWS::DynamoDB::Table", { PointInTimeRecoverySpecification: Match.objectLike({ PointInTimeRecoveryEnabled: true }) })).toThrow();
  });
});

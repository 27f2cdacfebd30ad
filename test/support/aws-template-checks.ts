/**
 * Security checks over a synthesized CloudFormation template of infra/aws (test/infra/aws-stack.node.test.ts).
 * Each returns the problems it found (empty: the property holds), so a test can show both that the
 * stack passes and that a template with the flaw fails.
 */
import { DENIED_EGRESS_CIDRS } from "../../infra/aws/network.ts";

/** A CloudFormation template as JSON. */
export type Tpl = { Resources: Record<string, { Type: string; Properties?: any }> };
type Statement = { Effect: string; Action?: string | string[]; NotAction?: unknown; Resource?: unknown };

const ALLOWED_MANAGED = ["service-role/AWSLambdaBasicExecutionRole", "service-role/AWSLambdaVPCAccessExecutionRole"];
const SECRET_LIKE = /SECRET|TOKEN|PASSWORD|ACCESS_KEY|PRIVATE/i;

export const resources = (t: Tpl, type: string) => Object.entries(t.Resources).filter(([, r]) => r.Type === type).map(([id, r]) => ({ id, props: r.Properties ?? {} }));
const list = <T>(x: T | T[] | undefined): T[] => (x === undefined ? [] : Array.isArray(x) ? x : [x]);
/** The logical id a Ref or Fn::GetAtt names. */
const refOf = (x: any): string | undefined => x?.Ref ?? x?.["Fn::GetAtt"]?.[0];
const functions = (t: Tpl) => resources(t, "AWS::Lambda::Function");
const imageFunctions = (t: Tpl) => functions(t).filter((f) => f.props.PackageType === "Image");

/** Every statement a role gets: its inline policies and the AWS::IAM::Policy resources attached to it. */
export function statementsOf(t: Tpl, roleId: string): Statement[] {
  const role = t.Resources[roleId]?.Properties ?? {};
  const inline = list(role.Policies).flatMap((p: any) => list(p.PolicyDocument?.Statement));
  const attached = resources(t, "AWS::IAM::Policy").filter((p) => list(p.props.Roles).some((r) => refOf(r) === roleId)).flatMap((p) => list(p.props.PolicyDocument?.Statement));
  return [...inline, ...attached] as Statement[];
}
const managedOf = (t: Tpl, roleId: string): string[] =>
  list(t.Resources[roleId]?.Properties?.ManagedPolicyArns).map((a: any) => (typeof a === "string" ? a : JSON.stringify(a)).replace(/.*:policy\//, "").replace(/"\]\]\}$/, ""));

/** No IAM statement allows `*`, or a wildcard over S3 or DynamoDB actions, or uses NotAction. */
export function wildcardDataActions(t: Tpl): string[] {
  const docs = [
    ...resources(t, "AWS::IAM::Policy").map((p) => ({ id: p.id, statements: list(p.props.PolicyDocument?.Statement) })),
    ...resources(t, "AWS::IAM::ManagedPolicy").map((p) => ({ id: p.id, statements: list(p.props.PolicyDocument?.Statement) })),
    ...resources(t, "AWS::IAM::Role").map((r) => ({ id: r.id, statements: list(r.props.Policies).flatMap((p: any) => list(p.PolicyDocument?.Statement)) })),
  ];
  const problems: string[] = [];
  for (const { id, statements } of docs)
    for (const s of statements as Statement[]) {
      if (s.Effect !== "Allow") continue;
      if (s.NotAction !== undefined) problems.push(`${id}: NotAction allows everything but a list`);
      for (const a of list(s.Action)) if (a === "*" || /^(s3|dynamodb):.*\*/i.test(a)) problems.push(`${id}: ${a}`);
    }
  return problems;
}

/** The runners' roles: no storage, nothing but logs, VPC interfaces and reading the runner secret. */
export function runnerRoleProblems(t: Tpl): string[] {
  const problems: string[] = [];
  const runners = imageFunctions(t);
  if (runners.length < 2) problems.push(`expected the two runner functions, found ${runners.length}`);
  const secrets = new Set(resources(t, "AWS::SecretsManager::Secret").map((s) => s.id));
  for (const fn of runners) {
    const roleId = refOf(fn.props.Role)!;
    for (const m of managedOf(t, roleId)) if (!ALLOWED_MANAGED.includes(m)) problems.push(`${fn.id}: managed policy ${m}`);
    for (const s of statementsOf(t, roleId)) {
      if (s.Effect !== "Allow") continue;
      for (const a of list(s.Action)) {
        if (/^(s3|dynamodb|s3-object-lambda|s3express):/i.test(a)) problems.push(`${fn.id}: storage action ${a}`);
        else if (!["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"].includes(a)) problems.push(`${fn.id}: action ${a}`);
        else if (!list(s.Resource).every((r) => secrets.has(refOf(r) ?? ""))) problems.push(`${fn.id}: ${a} on ${JSON.stringify(s.Resource)}`);
      }
    }
  }
  return problems;
}

/** Every runner (image) function has tenant isolation PER_TENANT. */
export function tenantIsolationProblems(t: Tpl): string[] {
  const runners = imageFunctions(t);
  return [
    ...(runners.length < 2 ? [`expected the two runner functions, found ${runners.length}`] : []),
    ...runners.filter((f) => f.props.TenancyConfig?.TenantIsolationMode !== "PER_TENANT").map((f) => `${f.id}: TenancyConfig ${JSON.stringify(f.props.TenancyConfig)}`),
  ];
}

/** Every bucket: public access blocked, encrypted, and a bucket policy denying requests without TLS. */
export function bucketProblems(t: Tpl): string[] {
  const problems: string[] = [];
  const policies = resources(t, "AWS::S3::BucketPolicy");
  for (const b of resources(t, "AWS::S3::Bucket")) {
    const block = b.props.PublicAccessBlockConfiguration ?? {};
    for (const k of ["BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"]) if (block[k] !== true) problems.push(`${b.id}: ${k} is not true`);
    if (!b.props.BucketEncryption?.ServerSideEncryptionConfiguration?.length) problems.push(`${b.id}: no encryption`);
    const tlsOnly = policies.filter((p) => refOf(p.props.Bucket) === b.id).flatMap((p) => list(p.props.PolicyDocument?.Statement))
      .some((s: any) => s.Effect === "Deny" && list(s.Action).includes("s3:*") && s.Principal?.AWS === "*" && s.Condition?.Bool?.["aws:SecureTransport"] === "false");
    if (!tlsOnly) problems.push(`${b.id}: no policy denying requests without TLS`);
  }
  return problems;
}

/** No function's environment holds a secret: secret-like names only as <NAME>_ARN = Ref of a Secrets Manager secret. */
export function environmentSecretProblems(t: Tpl): string[] {
  const secrets = new Set(resources(t, "AWS::SecretsManager::Secret").map((s) => s.id));
  const problems: string[] = [];
  for (const fn of functions(t))
    for (const [name, value] of Object.entries<any>(fn.props.Environment?.Variables ?? {})) {
      if (JSON.stringify(value).includes("{{resolve:")) problems.push(`${fn.id}: ${name} is resolved into the configuration`);
      if (!SECRET_LIKE.test(name)) continue;
      if (!name.endsWith("_ARN")) problems.push(`${fn.id}: ${name} holds a value`);
      else if (!secrets.has(value?.Ref)) problems.push(`${fn.id}: ${name} is not a secret's ARN: ${JSON.stringify(value)}`);
    }
  const api = functions(t).find((f) => f.props.Handler === "index.handler");
  for (const name of ["TOOLSHED_SYNC_SECRET_ARN", "TOOLSHED_RUNNER_SECRET_ARN", "TOOLSHED_ADMIN_TOKEN_ARN"])
    if (!api?.props.Environment?.Variables?.[name]) problems.push(`the API has no ${name}`);
  return problems;
}

/** A schedule calls the GC entry (infra/lambda.ts gcHandler), and EventBridge may invoke it. */
export function gcScheduleProblems(t: Tpl): string[] {
  const gc = functions(t).find((f) => f.props.Handler === "index.gcHandler");
  if (!gc) return ["no function runs index.gcHandler"];
  const rule = resources(t, "AWS::Events::Rule").find((r) => /^(rate|cron)\(/.test(r.props.ScheduleExpression ?? "") && r.props.State !== "DISABLED" && list(r.props.Targets).some((x: any) => refOf(x.Arn) === gc.id));
  const allowed = resources(t, "AWS::Lambda::Permission").some((p) => refOf(p.props.FunctionName) === gc.id && p.props.Principal === "events.amazonaws.com");
  return [...(rule ? [] : ["no enabled schedule targets the GC function"]), ...(allowed ? [] : ["EventBridge may not invoke the GC function"])];
}

/** Every function has an alarm on its errors and one on its throttles, each with an action. */
export function alarmProblems(t: Tpl): string[] {
  const alarms = resources(t, "AWS::CloudWatch::Alarm");
  return functions(t).flatMap((fn) =>
    ["Errors", "Throttles"].filter((metric) => !alarms.some((a) => a.props.Namespace === "AWS/Lambda" && a.props.MetricName === metric && list(a.props.AlarmActions).length > 0 && list(a.props.Dimensions).some((d: any) => d.Name === "FunctionName" && refOf(d.Value) === fn.id)))
      .map((metric) => `${fn.id}: no alarm on ${metric}`));
}

/** The API's function URL streams its answers (InvokeMode RESPONSE_STREAM: infra/lambda.ts answers through awslambda.streamifyResponse). */
export function apiStreamingProblems(t: Tpl): string[] {
  const api = functions(t).find((f) => f.props.Handler === "index.handler");
  if (!api) return ["no API function"];
  const urls = resources(t, "AWS::Lambda::Url").filter((u) => refOf(u.props.TargetFunctionArn) === api.id);
  if (!urls.length) return ["the API has no function URL"];
  return urls.filter((u) => u.props.InvokeMode !== "RESPONSE_STREAM").map((u) => `${u.id}: InvokeMode ${u.props.InvokeMode ?? "BUFFERED (default)"}`);
}

/** The API may invoke the runners and nothing else. */
export function apiInvokeProblems(t: Tpl): string[] {
  const api = functions(t).find((f) => f.props.Handler === "index.handler");
  if (!api) return ["no API function"];
  const runners = new Set(imageFunctions(t).map((f) => f.id));
  return statementsOf(t, refOf(api.props.Role)!).filter((s) => list(s.Action).some((a) => a.startsWith("lambda:")))
    .flatMap((s) => [...list(s.Action).filter((a) => a !== "lambda:InvokeFunction").map((a) => `API action ${a}`), ...list(s.Resource).filter((r) => !runners.has(refOf(r) ?? "")).map((r) => `API invokes ${JSON.stringify(r)}`)]);
}

const subnetsOf = (fn: { props: any }) => list(fn.props.VpcConfig?.SubnetIds).map(refOf);

/** The runner without network: in subnets with no route out; the one with network: internal ranges denied before the internet is allowed. */
export function egressProblems(t: Tpl): string[] {
  const problems: string[] = [];
  const runners = imageFunctions(t);
  const isolated = runners.filter((f) => f.props.Environment?.Variables?.TOOLSHED_RUNNER_EGRESS === "none");
  const open = runners.filter((f) => f.props.Environment?.Variables?.TOOLSHED_RUNNER_EGRESS !== "none");
  if (isolated.length !== 1 || open.length !== 1) problems.push(`expected one runner without and one with network, found ${isolated.length} and ${open.length}`);
  const tableOf = (subnet: string | undefined) => resources(t, "AWS::EC2::SubnetRouteTableAssociation").find((a) => refOf(a.props.SubnetId) === subnet)?.props.RouteTableId;
  for (const fn of isolated)
    for (const subnet of subnetsOf(fn)) {
      const table = refOf(tableOf(subnet));
      for (const r of resources(t, "AWS::EC2::Route").filter((r) => refOf(r.props.RouteTableId) === table)) problems.push(`${fn.id}: subnet ${subnet} routes ${r.props.DestinationCidrBlock} out`);
    }
  const entries = resources(t, "AWS::EC2::NetworkAclEntry");
  for (const fn of open)
    for (const subnet of subnetsOf(fn)) {
      const acl = refOf(resources(t, "AWS::EC2::SubnetNetworkAclAssociation").find((a) => refOf(a.props.SubnetId) === subnet)?.props.NetworkAclId);
      if (!acl) { problems.push(`${fn.id}: subnet ${subnet} has the default network ACL`); continue; }
      const out = entries.filter((e) => refOf(e.props.NetworkAclId) === acl && e.props.Egress === true);
      const internet = Math.min(...out.filter((e) => e.props.RuleAction === "allow" && e.props.CidrBlock === "0.0.0.0/0").map((e) => e.props.RuleNumber));
      for (const cidr of DENIED_EGRESS_CIDRS)
        if (!out.some((e) => e.props.RuleAction === "deny" && e.props.CidrBlock === cidr && e.props.Protocol === -1 && e.props.RuleNumber < internet)) problems.push(`${fn.id}: ${cidr} is not denied before the internet is allowed`);
    }
  return problems;
}

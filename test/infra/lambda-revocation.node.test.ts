/**
 * A key revoked through one Lambda instance, on another (issue #28 §5; docs/tenant-keys.md "How soon a
 * revocation takes effect"): two API instances of the Lambda runtime, each in a Node process of its own
 * with its own caches (test/support/lambda-instances.ts: the API bundled as deployed, invoked through
 * lambda-local), over one bucket on a real S3 server (s3rver: the key store is in it, read-after-write),
 * with the real runner (bubblewrap, behind the local Invoke endpoint). The scenario and the bounds:
 * test/support/revocation-across-instances.ts.
 */
import { afterAll, beforeAll, it } from "vitest";
import { lambdaEnv, type LambdaEnv } from "../support/lambda-env.js";
import { startLambdaInstances, type LambdaInstances } from "../support/lambda-instances.js";
import { expectDocumentedBounds, revokeAcrossInstances, startWatchedRunner } from "../support/revocation-across-instances.js";
import { RUNNER_SECRET } from "./container/helpers.js";

const ADMIN = "lambda-revocation-admin";
let aws: LambdaEnv;
let runner: Awaited<ReturnType<typeof startWatchedRunner>>;
let lambdas: LambdaInstances;

beforeAll(async () => {
  // The key store (KV over S3) and the files in one bucket; no table: neither the keys nor a foreground run need one.
  aws = await lambdaEnv({ bucket: "toolshed-revocation", adminToken: ADMIN, table: false, vars: { TOOLSHED_SYNC_SECRET: "lambda-revocation-sync-secret-0123" } });
  runner = await startWatchedRunner();
  lambdas = await startLambdaInstances(2, { ...aws.vars, TOOLSHED_RUNNER_URL: runner.url, TOOLSHED_RUNNER_SECRET: RUNNER_SECRET });
}, 120_000);

afterAll(async () => {
  await lambdas?.stop();
  await runner?.close();
  await aws?.stop();
});

it("a key revoked through instance A: A refuses it at once, B within its key cache's 5 s; on B its wait answers key_gone within 5 s + the key watch's 5 s, its command is killed within 1 s more, its background task within 5 s + 1 s; nothing written back", async () => {
  const [a, b] = lambdas.instances;
  const t = await revokeAcrossInstances({ a: a!.url, b: b!.url, adminToken: ADMIN, tenant: "revx", invokeAnswers: runner.invokeAnswers });
  console.log(`Lambda, revocation across instances (ms from the revocation's start): ${JSON.stringify(t)}`);
  // The S3-backed key store is read-after-write: no propagation on top of the cache's TTL.
  expectDocumentedBounds(t);
}, 180_000);

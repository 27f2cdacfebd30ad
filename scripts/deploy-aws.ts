#!/usr/bin/env node
/**
 * npm run deploy:aws [-- --dry-run] [--out DIR] [--runner-concurrency N]
 *
 * Bundles the API and synthesizes the AWS stack (infra/aws) into a cloud assembly, offline: no
 * AWS account, no Docker, no context lookups. Then prints where the template went and the
 * commands that deploy it (the AWS CDK CLI builds and pushes the runner image, uploads the API
 * bundle and creates the stack: docs/deploying-aws.md). This script never deploys by itself.
 */
import { relative } from "node:path";
import { parseArgs } from "node:util";
import { STACK_NAME, synthesize } from "../infra/aws/app.ts";

const { values } = parseArgs({
  options: { "dry-run": { type: "boolean", default: false }, out: { type: "string" }, "runner-concurrency": { type: "string" } },
});
const concurrency = values["runner-concurrency"] === undefined ? undefined : Number(values["runner-concurrency"]);
if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency > 0)) {
  console.error(`--runner-concurrency must be a positive integer (got ${values["runner-concurrency"]})`);
  process.exit(2);
}

const { outdir, templateFile } = await synthesize({ ...(values.out ? { outdir: values.out } : {}), ...(concurrency !== undefined ? { runnerConcurrency: concurrency } : {}) });
const rel = (p: string) => relative(process.cwd(), p) || ".";
console.log(`Synthesized stack ${STACK_NAME}:`);
console.log(`  template  ${rel(templateFile)}`);
console.log(`  assembly  ${rel(outdir)}  (the API bundle and the runner image's build context are assets in it)`);
if (values["dry-run"]) {
  console.log("Dry run: nothing deployed.");
} else {
  console.log("\nTo deploy (needs AWS credentials and Docker; once per account and region, bootstrap first):");
  console.log(`  npx --yes aws-cdk@2 bootstrap`);
  console.log(`  npx --yes aws-cdk@2 deploy --app ${rel(outdir)} ${STACK_NAME}`);
}

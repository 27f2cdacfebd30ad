/**
 * The CDK app: bundles the API, builds the stack and synthesizes it into a cloud assembly
 * (CloudFormation template + assets), offline. `cdk deploy --app <outdir>` deploys that assembly;
 * scripts/deploy-aws.ts drives both (npm run deploy:aws).
 */
import { App } from "aws-cdk-lib";
import { join } from "node:path";
import { bundleApi, REPO_ROOT } from "./bundle-api.ts";
import { ToolshedStack } from "./stack.ts";

export const STACK_NAME = "Toolshed";

export interface SynthOptions {
  /** Where the cloud assembly goes (default: cdk.out in the repository). */
  outdir?: string;
  runnerConcurrency?: number;
}

export async function synthesize(opts: SynthOptions = {}): Promise<{ outdir: string; templateFile: string; stack: ToolshedStack }> {
  const apiCodeDir = await bundleApi();
  const app = new App({ outdir: opts.outdir ?? join(REPO_ROOT, "cdk.out") });
  const stack = new ToolshedStack(app, STACK_NAME, {
    repoRoot: REPO_ROOT, apiCodeDir,
    description: "Toolshed: the API, its bucket and table, the bash runners (PER_TENANT) and their network",
    ...(opts.runnerConcurrency !== undefined ? { runnerConcurrency: opts.runnerConcurrency } : {}),
  });
  const assembly = app.synth();
  return { outdir: assembly.directory, templateFile: join(assembly.directory, stack.templateFile), stack };
}

/**
 * The deployment's secrets in Secrets Manager, generated at creation: functions get their ARNs
 * (TOOLSHED_*_ARN) and read the values at start (lib/shared/secret-env.ts), so no value is ever
 * in a function's configuration, the template or the console.
 */
import * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import { Construct } from "constructs";

export class ToolshedSecrets extends Construct {
  /** Signs the runner's sync tokens (API only: the runner must never hold it). */
  readonly sync: secretsmanager.Secret;
  /** Signs invocations of the runner (API and runner: docs/runner-security.md). */
  readonly runner: secretsmanager.Secret;
  /** The admin API's bearer token. */
  readonly admin: secretsmanager.Secret;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    const generated = (name: string, description: string) =>
      new secretsmanager.Secret(this, name, {
        description,
        // 48 characters of letters and digits: no punctuation to quote in a shell or a header.
        generateSecretString: { passwordLength: 48, excludePunctuation: true },
      });
    this.sync = generated("SyncSecret", "Toolshed TOOLSHED_SYNC_SECRET: signs the runner's sync tokens (API only)");
    this.runner = generated("RunnerSecret", "Toolshed TOOLSHED_RUNNER_SECRET: signs runner invocations (API and runner)");
    this.admin = generated("AdminToken", "Toolshed TOOLSHED_ADMIN_TOKEN: the admin API's bearer token");
  }
}

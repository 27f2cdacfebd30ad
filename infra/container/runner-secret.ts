/**
 * Run by the image's entrypoint before the runtime starts, while the role's credentials are still
 * in the environment: reads TOOLSHED_RUNNER_SECRET_ARN from Secrets Manager and writes the value
 * to the file named by its argument (mode 0600), where the handler reads and deletes it
 * (takeRunnerSecret). The entrypoint then starts the runtime without the credentials.
 *   node runner-secret.mjs /tmp/.runner-secret
 */
import { writeFileSync } from "node:fs";
import { resolveSecretEnv } from "../../lib/shared/secret-env.js";
import { RUNNER_SECRET_VAR } from "../../lib/exec/runner-auth.js";

const file = process.argv[2];
if (!file) throw new Error("usage: runner-secret <file>");
const env = await resolveSecretEnv(process.env, undefined, [RUNNER_SECRET_VAR]);
writeFileSync(file, env[RUNNER_SECRET_VAR] ?? "", { mode: 0o600 });

/**
 * The image's entrypoint step (infra/container/runner-secret.ts, bundled as the Dockerfile runs it):
 * with the role's credentials it reads TOOLSHED_RUNNER_SECRET_ARN from Secrets Manager into a file
 * only the owner can read; the handler then takes the secret from that file (takeRunnerSecret).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { build } from "esbuild";
import { afterAll, beforeAll, expect, it } from "vitest";
import { takeRunnerSecret } from "../../../infra/container/handler.js";
import { startSecretsServer, type SecretsServer } from "../../support/secrets-manager-server.js";

const ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:runner-AbCdEf";
const dir = mkdtempSync(join(tmpdir(), "toolshed-runner-secret-"));
let server: SecretsServer;

beforeAll(async () => {
  server = await startSecretsServer({ [ARN]: "runner-secret-value" });
  await build({
    entryPoints: ["infra/container/runner-secret.ts"], outfile: join(dir, "runner-secret.mjs"), bundle: true, platform: "node", target: "node22", format: "esm", logLevel: "silent",
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  });
}, 120_000);
afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

const run = (env: Record<string, string>, file: string) =>
  promisify(execFile)(process.execPath, [join(dir, "runner-secret.mjs"), file], {
    env: { PATH: process.env.PATH ?? "", AWS_REGION: "us-east-1", AWS_ACCESS_KEY_ID: "role-key", AWS_SECRET_ACCESS_KEY: "role-secret", AWS_ENDPOINT_URL_SECRETS_MANAGER: server.endpoint, AWS_MAX_ATTEMPTS: "1", ...env },
  });

it("writes the secret the ARN names into a file of mode 0600, which the handler takes and deletes", async () => {
  const file = join(dir, "secret");
  await run({ TOOLSHED_RUNNER_SECRET_ARN: ARN }, file);
  expect(server.asked).toEqual([`secretsmanager.GetSecretValue ${ARN}`]);
  expect(statSync(file).mode & 0o777).toBe(0o600);
  expect(readFileSync(file, "utf8")).toBe("runner-secret-value");
  const env: Record<string, string | undefined> = { TOOLSHED_RUNNER_SECRET_FILE: file };
  expect(takeRunnerSecret(env)).toBe("runner-secret-value");
  expect(() => statSync(file)).toThrow();
});

it("fails, writing nothing, when the secret cannot be read (the entrypoint then stops)", async () => {
  const file = join(dir, "missing");
  const err = await run({ TOOLSHED_RUNNER_SECRET_ARN: `${ARN}-gone` }, file).catch((e: { code: number; stderr: string }) => e);
  expect((err as { code: number }).code).not.toBe(0);
  expect((err as { stderr: string }).stderr).toMatch(/Reading the secret .*-gone .*ResourceNotFoundException/);
  expect(() => statSync(file)).toThrow();
});

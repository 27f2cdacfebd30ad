/**
 * Secrets by reference (lib/shared/secret-env.ts): the real Secrets Manager client against a
 * local server that speaks its JSON protocol (GetSecretValue) on 127.0.0.1.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveSecretEnv, secretsManagerReader, type SecretReader } from "../../../lib/shared/secret-env.js";
import { startSecretsServer, type SecretsServer } from "../../support/secrets-manager-server.js";

const STORED: Record<string, string> = {
  "arn:aws:secretsmanager:us-east-1:123456789012:secret:sync-AbCdEf": "sync-value-1",
  "arn:aws:secretsmanager:us-east-1:123456789012:secret:admin-AbCdEf": "admin-value-2",
};
let server: SecretsServer;
let read: SecretReader;
let asked: string[];

beforeAll(async () => {
  server = await startSecretsServer(STORED);
  asked = server.asked;
  read = secretsManagerReader({ region: "us-east-1", endpoint: server.endpoint, credentials: { accessKeyId: "test", secretAccessKey: "test" }, maxAttempts: 1 });
});
afterAll(() => server.stop());

describe("resolveSecretEnv", () => {
  it("reads each <NAME>_ARN with GetSecretValue and puts the value in <NAME>, dropping the ARN", async () => {
    asked.length = 0;
    const env = await resolveSecretEnv(
      { TOOLSHED_SYNC_SECRET_ARN: Object.keys(STORED)[0], TOOLSHED_ADMIN_TOKEN_ARN: Object.keys(STORED)[1], TOOLSHED_BUCKET: "b" },
      read,
    );
    expect(env).toEqual({ TOOLSHED_SYNC_SECRET: "sync-value-1", TOOLSHED_ADMIN_TOKEN: "admin-value-2", TOOLSHED_BUCKET: "b" });
    expect(asked.sort()).toEqual(Object.keys(STORED).map((arn) => `secretsmanager.GetSecretValue ${arn}`).sort());
  });

  it("leaves plain values as they are and reads nothing without an _ARN variable", async () => {
    asked.length = 0;
    const plain = { TOOLSHED_SYNC_SECRET: "s", TOOLSHED_RUNNER_SECRET: "r", TOOLSHED_ADMIN_TOKEN: "a" };
    expect(await resolveSecretEnv(plain, read)).toBe(plain);
    expect(asked).toEqual([]);
  });

  it("refuses a name set both ways", async () => {
    await expect(resolveSecretEnv({ TOOLSHED_RUNNER_SECRET: "r", TOOLSHED_RUNNER_SECRET_ARN: Object.keys(STORED)[0] }, read)).rejects.toThrow(/Both TOOLSHED_RUNNER_SECRET and TOOLSHED_RUNNER_SECRET_ARN/);
  });

  it("fails at start naming the secret (never a value) when it cannot be read", async () => {
    const missing = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gone-XyZ";
    const err = await resolveSecretEnv({ TOOLSHED_SYNC_SECRET_ARN: missing, TOOLSHED_ADMIN_TOKEN_ARN: Object.keys(STORED)[1] }, read).catch((e: Error) => e);
    expect(String(err)).toMatch(/Reading the secret arn:aws:secretsmanager:.*gone-XyZ .*ResourceNotFoundException/);
    expect(String(err)).not.toContain("admin-value-2");
  });

  it("reads only the names it is given", async () => {
    const env = await resolveSecretEnv({ TOOLSHED_SYNC_SECRET_ARN: Object.keys(STORED)[0], TOOLSHED_RUNNER_SECRET_ARN: Object.keys(STORED)[1] }, read, ["TOOLSHED_RUNNER_SECRET"]);
    expect(env).toEqual({ TOOLSHED_SYNC_SECRET_ARN: Object.keys(STORED)[0], TOOLSHED_RUNNER_SECRET: "admin-value-2" });
  });
});

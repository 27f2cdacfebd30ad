/**
 * Secrets by reference: a deployment gives a function `<NAME>_ARN` (a Secrets Manager secret's
 * ARN or name) instead of `<NAME>`, and the function reads the value once, at start, before it
 * builds its app. So no secret value is in the function's configuration (the console, the
 * template, `GetFunctionConfiguration`). Plain `<NAME>` (local runs, tests, Workers) works as
 * before; setting both is refused, since which one wins would be a guess.
 */
import { GetSecretValueCommand, SecretsManagerClient, type SecretsManagerClientConfig } from "@aws-sdk/client-secrets-manager";

/** The settings that may come by reference. */
export const SECRET_VARS = ["TOOLSHED_SYNC_SECRET", "TOOLSHED_RUNNER_SECRET", "TOOLSHED_ADMIN_TOKEN"] as const;

/** Reads one secret's value by ARN or name. */
export type SecretReader = (arn: string) => Promise<string>;

/** GetSecretValue with the function's own credentials (its role). */
export function secretsManagerReader(config: SecretsManagerClientConfig = {}): SecretReader {
  let client: SecretsManagerClient | undefined;
  return async (arn) => {
    client ??= new SecretsManagerClient(config);
    let out;
    try {
      out = await client.send(new GetSecretValueCommand({ SecretId: arn }));
    } catch (e) {
      const err = e as { name?: string; message?: string };
      throw new Error(`Reading the secret ${arn} from Secrets Manager failed (${err.name ?? "Error"}: ${err.message ?? String(e)}); check that it exists and that the function's role may GetSecretValue on it.`);
    }
    if (typeof out.SecretString !== "string" || out.SecretString === "") throw new Error(`The secret ${arn} has no string value; set one (aws secretsmanager put-secret-value --secret-id ${arn} --secret-string ...).`);
    return out.SecretString;
  };
}

/**
 * The environment with every `<NAME>_ARN` of `names` replaced by `<NAME>` = the secret's value
 * (the `_ARN` variable dropped). Without any `_ARN` variable it returns `env` itself and reads nothing.
 */
export async function resolveSecretEnv<E extends Record<string, string | undefined>>(
  env: E,
  read: SecretReader = secretsManagerReader({ region: env.AWS_REGION ?? "us-east-1" }),
  names: readonly string[] = SECRET_VARS,
): Promise<E> {
  const wanted = names.filter((name) => env[`${name}_ARN`]);
  if (wanted.length === 0) return env;
  for (const name of wanted)
    if (env[name]) throw new Error(`Both ${name} and ${name}_ARN are set; set only one (${name}_ARN on AWS, ${name} locally).`);
  const values = await Promise.all(wanted.map((name) => read(env[`${name}_ARN`]!)));
  const out: Record<string, string | undefined> = { ...env };
  wanted.forEach((name, i) => {
    out[name] = values[i];
    delete out[`${name}_ARN`];
  });
  return out as E;
}

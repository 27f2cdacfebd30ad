/**
 * Encryption of tenant secrets at rest: AES-256-GCM (WebCrypto: Workers and Node) under a key
 * derived with HKDF-SHA-256 from the deployment's TOOLSHED_SECRETS_KEY. Each value gets a random
 * 96-bit IV, and the tenant and the secret's name are the additional data, so a ciphertext moved
 * to another tenant or name does not decrypt. Without the deployment key no secret is stored or
 * used (UNAVAILABLE, saying so).
 */
import { ToolError } from "../../shared/errors.js";
import { IV_BYTES, sealer } from "../../shared/seal.js";
import { concatBytes, decodeBase64, encodeBase64 } from "../../shared/text.js";

/** The variable that holds the deployment's secrets key, on the API only (never the runner). */
export const SECRETS_KEY_VAR = "TOOLSHED_SECRETS_KEY";
export const MIN_SECRETS_KEY = 32;

export interface Sealed {
  /** base64 of the 12-byte IV. */
  iv: string;
  /** base64 of the ciphertext and its tag. */
  ct: string;
}

const aad = (tenant: string, name: string) => `toolshed-secret.v1\n${tenant}\n${name}`;
/** The sealer of tenant secrets (lib/shared/seal.ts): its own key, from the deployment's secrets key. */
const box = (deploymentKey: string) => sealer(requireSecretsKey(deploymentKey), "toolshed-secrets");

/** The deployment key as configured, or UNAVAILABLE saying how to set it. */
export function requireSecretsKey(key: string | undefined): string {
  if (!key) throw new ToolError("UNAVAILABLE", `Secrets are off on this deployment: it has no ${SECRETS_KEY_VAR}. Set it on the API (a random value of at least ${MIN_SECRETS_KEY} characters, e.g. \`openssl rand -hex 32\`); see docs/secrets.md.`, { reason: "secrets_key_missing" });
  if (key.length < MIN_SECRETS_KEY) throw new ToolError("UNAVAILABLE", `${SECRETS_KEY_VAR} is shorter than ${MIN_SECRETS_KEY} characters; set a longer random value on the API (docs/secrets.md).`, { reason: "secrets_key_missing" });
  return key;
}

export async function sealSecret(deploymentKey: string, tenant: string, name: string, value: string): Promise<Sealed> {
  const sealed = await box(deploymentKey).seal(value, aad(tenant, name));
  return { iv: encodeBase64(sealed.subarray(0, IV_BYTES)), ct: encodeBase64(sealed.subarray(IV_BYTES)) };
}

export async function openSecret(deploymentKey: string, tenant: string, name: string, sealed: Sealed): Promise<string> {
  try {
    const opener = box(deploymentKey);
    const [iv, ct] = [decodeBase64(sealed.iv), decodeBase64(sealed.ct)];
    if (!iv || !ct) throw new Error("not base64"); // a record no seal of ours wrote: undecryptable, as below
    return new TextDecoder().decode(await opener.open(concatBytes([iv, ct]), aad(tenant, name)));
  } catch (e) {
    if (e instanceof ToolError) throw e;
    throw new ToolError("UNAVAILABLE", `The secret ${name} cannot be decrypted with this deployment's ${SECRETS_KEY_VAR} (it was stored under another key). Set it again with PUT /v1/secrets/${name}.`, { reason: "secret_undecryptable", secret: name });
  }
}

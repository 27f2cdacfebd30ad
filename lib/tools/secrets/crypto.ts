/**
 * Encryption of tenant secrets at rest: AES-256-GCM (WebCrypto: Workers and Node) under a key
 * derived with HKDF-SHA-256 from the deployment's TOOLSHED_SECRETS_KEY. Each value gets a random
 * 96-bit IV, and the tenant and the secret's name are the additional data, so a ciphertext moved
 * to another tenant or name does not decrypt. Without the deployment key no secret is stored or
 * used (UNAVAILABLE, saying so).
 */
import { ToolError } from "../../shared/errors.js";

/** The variable that holds the deployment's secrets key, on the API only (never the runner). */
export const SECRETS_KEY_VAR = "TOOLSHED_SECRETS_KEY";
export const MIN_SECRETS_KEY = 32;

const enc = new TextEncoder();

export interface Sealed {
  /** base64 of the 12-byte IV. */
  iv: string;
  /** base64 of the ciphertext and its tag. */
  ct: string;
}

const b64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const unb64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
const aad = (tenant: string, name: string) => enc.encode(`toolshed-secret.v1\n${tenant}\n${name}`);

/** The deployment key as configured, or UNAVAILABLE saying how to set it. */
export function requireSecretsKey(key: string | undefined): string {
  if (!key) throw new ToolError("UNAVAILABLE", `Secrets are off on this deployment: it has no ${SECRETS_KEY_VAR}. Set it on the API (a random value of at least ${MIN_SECRETS_KEY} characters, e.g. \`openssl rand -hex 32\`); see docs/secrets.md.`, { reason: "secrets_key_missing" });
  if (key.length < MIN_SECRETS_KEY) throw new ToolError("UNAVAILABLE", `${SECRETS_KEY_VAR} is shorter than ${MIN_SECRETS_KEY} characters; set a longer random value on the API (docs/secrets.md).`, { reason: "secrets_key_missing" });
  return key;
}

async function aesKey(deploymentKey: string): Promise<CryptoKey> {
  const base = await crypto.subtle.importKey("raw", enc.encode(requireSecretsKey(deploymentKey)), "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey({ name: "HKDF", hash: "SHA-256", salt: enc.encode("toolshed-secrets"), info: enc.encode("aes-256-gcm.v1") }, base, { name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]);
}

export async function sealSecret(deploymentKey: string, tenant: string, name: string, value: string): Promise<Sealed> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ct = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: aad(tenant, name) }, await aesKey(deploymentKey), enc.encode(value)));
  return { iv: b64(iv), ct: b64(ct) };
}

export async function openSecret(deploymentKey: string, tenant: string, name: string, sealed: Sealed): Promise<string> {
  try {
    const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: unb64(sealed.iv), additionalData: aad(tenant, name) }, await aesKey(deploymentKey), unb64(sealed.ct));
    return new TextDecoder().decode(plain);
  } catch (e) {
    if (e instanceof ToolError) throw e;
    throw new ToolError("UNAVAILABLE", `The secret ${name} cannot be decrypted with this deployment's ${SECRETS_KEY_VAR} (it was stored under another key). Set it again with PUT /v1/secrets/${name}.`, { reason: "secret_undecryptable", secret: name });
  }
}

/**
 * HMAC-SHA256 under a secret, with the secret's key imported once per isolate: `crypto.subtle.importKey`
 * at every sign and verify was ~2 ms of the Worker's samples per live call (docs/benchmarks/investigations-live.md).
 * createApp makes one HmacKeys per app (lib/ holds no module-level state) and hands it to every
 * signer and checker of the app (sync tokens, packed write-back receipts, a live sandbox's secrets).
 * Keyed by the secret itself: a rotated secret is another entry, never the old key; at most `maxSecrets`
 * are kept (the oldest dropped first). Only imported keys are kept (never a pending import: a
 * promise made in one request is not awaited by another). WebCrypto only: Workers and Node.
 */
import { bytesToBase64Url } from "./text.js";

const enc = new TextEncoder();

const importHmac = (secret: string) => crypto.subtle.importKey("raw", enc.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);

export class HmacKeys {
  private readonly keys = new Map<string, CryptoKey>();
  constructor(private readonly maxSecrets = 4) {}

  /** The secret's signing key: imported on its first use in this isolate. */
  async of(secret: string): Promise<CryptoKey> {
    const known = this.keys.get(secret);
    if (known) return known;
    const key = await importHmac(secret);
    if (!this.keys.has(secret) && this.keys.size >= this.maxSecrets) this.keys.delete(this.keys.keys().next().value!);
    this.keys.set(secret, key);
    return key;
  }
}

/** HMAC-SHA256 of `data` under `secret`, base64url; the key from `keys` when given (else imported for this call alone). */
export async function hmacSign(secret: string, data: string, keys: HmacKeys | undefined): Promise<string> {
  const key = keys ? await keys.of(secret) : await importHmac(secret);
  return bytesToBase64Url(new Uint8Array(await crypto.subtle.sign("HMAC", key, enc.encode(data))));
}

/**
 * Sealing what is kept at rest and must come back: AES-256-GCM (WebCrypto: Workers and Node) under a
 * key derived with HKDF-SHA-256 from a deployment secret, one key per purpose (the HKDF salt), a
 * random 96-bit IV per seal, and additional data that names where the ciphertext is kept (moved
 * elsewhere, it does not open). The one way Toolshed does it: tenant secrets (TOOLSHED_SECRETS_KEY,
 * lib/tools/secrets/crypto.ts), a live session's state on DynamoDB and kept idempotent answers (the
 * sync secret: lib/exec/live/dynamodb-item.ts, lib/api/idempotency.ts). Sealed bytes: IV || ciphertext+tag.
 */
import { utf8 } from "./text.js";

export interface Sealer {
  seal(plain: Uint8Array | string, aad: string): Promise<Uint8Array>;
  /** Throws when `sealed` was not sealed under this secret and purpose with this `aad`. */
  open(sealed: Uint8Array, aad: string): Promise<Uint8Array>;
}

export const IV_BYTES = 12;

/** Derived keys, per purpose and secret: one derivation per isolate (a few of them at most). */
const keys = new Map<string, Promise<CryptoKey>>();

function keyOf(secret: string, purpose: string): Promise<CryptoKey> {
  const id = `${purpose}\0${secret}`;
  let k = keys.get(id);
  if (!k) {
    k = (async () => {
      const base = await crypto.subtle.importKey("raw", utf8.encode(secret), "HKDF", false, ["deriveKey"]);
      return crypto.subtle.deriveKey({ name: "HKDF", hash: "SHA-256", salt: utf8.encode(purpose), info: utf8.encode("aes-256-gcm.v1") }, base, { name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]);
    })();
    k.catch(() => keys.delete(id));
    keys.set(id, k);
  }
  return k;
}

/** A sealer under `secret` for `purpose` (e.g. "toolshed-secrets"; each purpose its own key). */
export function sealer(secret: string, purpose: string): Sealer {
  return {
    async seal(plain, aad) {
      const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
      const data = typeof plain === "string" ? utf8.encode(plain) : plain;
      const ct = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: utf8.encode(aad) }, await keyOf(secret, purpose), data));
      const out = new Uint8Array(IV_BYTES + ct.length);
      out.set(iv);
      out.set(ct, IV_BYTES);
      return out;
    },
    async open(sealed, aad) {
      return new Uint8Array(await crypto.subtle.decrypt({ name: "AES-GCM", iv: sealed.subarray(0, IV_BYTES), additionalData: utf8.encode(aad) }, await keyOf(secret, purpose), sealed.subarray(IV_BYTES)));
    },
  };
}

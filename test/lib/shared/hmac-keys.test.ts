/**
 * lib/shared/hmac-keys.ts: a secret's HMAC key is imported once per HmacKeys (one per app), the MAC is
 * the one an uncached import gives, and a rotated secret is signed under its own key, never the old one.
 */
import { afterEach, expect, it, vi } from "vitest";
import { HmacKeys, hmacSign } from "../../../lib/shared/hmac-keys.js";
import { mintSyncToken, verifySyncToken } from "../../../lib/sync/token.js";

afterEach(() => void vi.restoreAllMocks());

const OLD = "sync-secret-before-rotation-0123";
const NEW = "sync-secret-after-rotation-45678";

it("imports each secret's key once, signs as an uncached import does, and never signs a rotated secret with the old key", async () => {
  const keys = new HmacKeys();
  const plain = { old: await hmacSign(OLD, "data", undefined), new: await hmacSign(NEW, "data", undefined) };
  expect(plain.old).not.toBe(plain.new);
  const imports = vi.spyOn(crypto.subtle, "importKey");
  expect(await hmacSign(OLD, "data", keys)).toBe(plain.old);
  expect(await hmacSign(OLD, "data", keys)).toBe(plain.old);
  expect(imports).toHaveBeenCalledTimes(1);
  expect(await hmacSign(NEW, "data", keys)).toBe(plain.new); // rotated: its own key
  expect(imports).toHaveBeenCalledTimes(2);

  // A token minted under the old secret does not verify under the new one through the same cache, and the reverse.
  const token = await mintSyncToken(OLD, { t: "t", w: "w", r: "r" }, 60, { keys });
  expect(await verifySyncToken(NEW, token, { keys })).toBeNull();
  expect((await verifySyncToken(OLD, token, { keys }))?.t).toBe("t");
  expect(imports).toHaveBeenCalledTimes(2);
});

it("keeps at most maxSecrets keys, the oldest dropped first", async () => {
  const keys = new HmacKeys(2);
  const imports = vi.spyOn(crypto.subtle, "importKey");
  for (const s of ["secret-a-0123456789", "secret-b-0123456789", "secret-c-0123456789"]) await keys.of(s);
  expect(imports).toHaveBeenCalledTimes(3);
  await keys.of("secret-c-0123456789");
  await keys.of("secret-b-0123456789");
  expect(imports).toHaveBeenCalledTimes(3);
  await keys.of("secret-a-0123456789"); // dropped: imported again
  expect(imports).toHaveBeenCalledTimes(4);
});

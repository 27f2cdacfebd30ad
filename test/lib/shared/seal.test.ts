/**
 * The one sealer (lib/shared/seal.ts), in workerd's WebCrypto: what it seals opens only under the
 * same secret, purpose and additional data; and what was sealed before it became the one way
 * (a tenant secret sealed by lib/tools/secrets/crypto.ts on 2026-11-29) still opens.
 */
import { describe, expect, it } from "vitest";
import { sealer } from "../../../lib/shared/seal.js";
import { openSecret } from "../../../lib/tools/secrets/crypto.js";

const SECRET = "s".repeat(40);

describe("sealer", () => {
  it("opens what it sealed; another secret, purpose or additional data does not; every seal has its own IV", async () => {
    const box = sealer(SECRET, "toolshed-test");
    const a = await box.seal("hello ünïcode", "where/a");
    const b = await box.seal("hello ünïcode", "where/a");
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(false);
    expect(new TextDecoder().decode(await box.open(a, "where/a"))).toBe("hello ünïcode");
    await expect(box.open(a, "where/b")).rejects.toThrow();
    await expect(sealer(SECRET, "toolshed-other").open(a, "where/a")).rejects.toThrow();
    await expect(sealer("t".repeat(40), "toolshed-test").open(a, "where/a")).rejects.toThrow();
    expect(new TextDecoder().decode(await box.open(await box.seal(new Uint8Array(), "e"), "e"))).toBe("");
  });

  it("a tenant secret sealed before the sealer was shared still opens", async () => {
    const sealed = { iv: "n0xqzeRfAtefJGpD", ct: "lWKEJ/5kQH2jhDM2u1XfaSAU4geqHSREoQ6o/s1s3Y7k9aV8LeSKC6IifVc=" };
    expect(await openSecret("k".repeat(40), "acme", "NPM_TOKEN", sealed)).toBe("npm_sealed-before-2026-11-29");
  });
});

/**
 * Idempotency-Key claims (lib/limits/claims.ts), as the tenant's limits object and memoryLimits
 * keep them: one holder per key; a takeover only of the claim seen, only once its lease is over;
 * a release only of one's own claim; an expired claim is free again; a rate-limited call claims nothing.
 */
import { describe, expect, it } from "vitest";
import { claimKey, memoryClaims, releaseClaim } from "../../../lib/limits/claims.js";
import { memoryLimits } from "../../../lib/limits/store.js";

const ask = (over?: string) => ({ key: "k".repeat(64), leaseMs: 1000, keepMs: 10_000, ...(over ? { over } : {}) });

describe("claims", () => {
  it("the first claim takes the key; the next sees the holder's claim and takes nothing", async () => {
    const store = memoryClaims();
    const first = await claimKey(store, ask(), 0);
    expect(first.taken).toBe(true);
    const second = await claimKey(store, ask(), 10);
    expect(second).toEqual({ taken: false, claim: first.claim });
    expect(first.claim).toMatchObject({ started: 0, lease_until: 1000, expires: 10_000 });
  });

  it("a takeover needs the claim seen and its lease over; a stale takeover after another one takes nothing", async () => {
    const store = memoryClaims();
    const first = await claimKey(store, ask(), 0);
    expect((await claimKey(store, ask(first.claim.id), 999)).taken).toBe(false); // lease still on
    expect((await claimKey(store, ask("another-claim"), 1000)).taken).toBe(false); // not the claim seen
    const over = await claimKey(store, ask(first.claim.id), 1000);
    expect(over.taken).toBe(true);
    expect(over.claim.id).not.toBe(first.claim.id);
    // A second retry that saw the first claim too comes late: the new holder stands.
    expect((await claimKey(store, ask(first.claim.id), 1001)).taken).toBe(false);
  });

  it("an expired claim is free again; a release drops only the claim it names", async () => {
    const store = memoryClaims();
    const first = await claimKey(store, ask(), 0);
    const again = await claimKey(store, ask(), 10_000);
    expect(again.taken).toBe(true);
    expect(await releaseClaim(store, ask().key, first.claim.id)).toBe(false);
    expect((await claimKey(store, ask(), 10_001)).taken).toBe(false);
    expect(await releaseClaim(store, ask().key, again.claim.id)).toBe(true);
    expect((await claimKey(store, ask(), 10_002)).taken).toBe(true);
  });

  it("takeCall with a claim: taken with the token; a call over the rate limit takes no claim", async () => {
    const limits = memoryLimits(() => 0);
    await limits.set("t", { calls_per_minute: 1 });
    const caller = { key_id: "a" };
    const one = await limits.takeCall("t", caller, ask());
    expect(one.ok).toBe(true);
    expect(one.claim?.taken).toBe(true);
    const refused = await limits.takeCall("t", caller, { ...ask(), key: "z".repeat(64) });
    expect(refused.ok).toBe(false);
    expect(refused.claim).toBeUndefined();
    // The refused call's key is still free.
    expect((await limits.claimKey("t", { ...ask(), key: "z".repeat(64) })).taken).toBe(true);
  });
});

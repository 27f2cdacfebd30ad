/**
 * One base64url in lib/shared/text.ts (bytesToBase64Url / base64UrlToBytes, the text helpers on
 * top): the listing cursors (sealed-cursor.ts), sync tokens and receipts (lib/sync/token.ts,
 * stage.ts) and the manifest's digests (lib/sync/manifest.ts) all go through it, and what the code
 * before it handed out (the fixtures below, made 2026-12-01 by the hand-rolled conversions) still
 * opens, verifies and matches unchanged.
 */
import { describe, expect, it } from "vitest";
import { base64UrlToBytes, bytesToBase64Url, fromBase64Url, toBase64Url } from "../../../lib/shared/text.js";
import { cursorSealer, openedCursor, sealedCursor } from "../../../lib/layout/sealed-cursor.js";
import { verifySyncToken } from "../../../lib/sync/token.js";
import { digestOf } from "../../../lib/sync/buckets.js";

const PAYLOAD = "k~\u00e9~\xff\u{1F600}position-that-makes-+/-bytes";
/** Made by the code before this change (sealed-cursor.ts, token.ts and manifest.ts converting by hand). */
const OLD = {
  cursor: "MtgEmZW2uYMOvAz9DI_TTjGP58urazNx4hKnODjvhr1JEsQ3LduE-ZlNfWjeylkSmBPY7MIKgnV1dFS4UY7pP02oZ90",
  token: "eyJ0IjoiYWNtZSIsInciOiJ3czEiLCJyIjoicjAxMjM0NTY3ODlhYmNkZSIsImV4cCI6MTc5NjA4MzI2MH0.23QdWBXnLyHVJ5cItRytda_rEHw_JRuXhGoIBrb7UKw",
  digest: "sG5qO5l6JtcQe30_72mlGVaH4Lx7fLl-9YYxjB-skTU",
};

describe("base64url of bytes", () => {
  it("is RFC 4648 base64url without padding, for every byte value and every length mod 3", () => {
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    for (let n = 0; n <= 6; n++) {
      const bytes = all.subarray(250 - n, 256);
      expect(bytesToBase64Url(bytes)).toBe(Buffer.from(bytes).toString("base64url"));
      expect(base64UrlToBytes(bytesToBase64Url(bytes))).toEqual(new Uint8Array(bytes));
    }
    expect(bytesToBase64Url(all)).toBe(Buffer.from(all).toString("base64url"));
    expect(base64UrlToBytes(Buffer.from(all).toString("base64url"))).toEqual(all);
  });

  it("refuses what is not base64url: the standard alphabet's + and /, whitespace, a cut quantum", () => {
    for (const bad of ["ab+c", "ab/c", "ab c", "abcde", "a", "ab=c"]) expect(base64UrlToBytes(bad), bad).toBeNull();
    expect(base64UrlToBytes("")).toEqual(new Uint8Array(0));
    expect(base64UrlToBytes("_-8")).toEqual(new Uint8Array([0xff, 0xef]));
  });

  it("the text helpers are the same conversion over UTF-8", () => {
    expect(toBase64Url(PAYLOAD)).toBe(bytesToBase64Url(new TextEncoder().encode(PAYLOAD)));
    expect(fromBase64Url(toBase64Url(PAYLOAD))).toBe(PAYLOAD);
  });
});

describe("tokens handed out before decode unchanged", () => {
  it("a sealed listing cursor opens to its payload", async () => {
    const box = cursorSealer("fixture-secret-0123456789abcdef");
    expect(await openedCursor(box, "keys", "t/acme/", OLD.cursor, "cursor")).toBe(PAYLOAD);
    const fresh = await sealedCursor(box, "keys", "t/acme/", PAYLOAD);
    expect(await openedCursor(box, "keys", "t/acme/", fresh, "cursor")).toBe(PAYLOAD);
  });

  it("a sync token verifies to its claims; a manifest digest is the same string", async () => {
    const claims = await verifySyncToken("fixture-sync-secret-0123456789", OLD.token, { now: Date.UTC(2026, 11, 1) });
    expect(claims).toMatchObject({ t: "acme", w: "ws1", r: "r0123456789abcde" });
    expect(await digestOf([{ path: "a/b.txt", etag: "e1" }, { path: "c", etag: "e2" }])).toBe(OLD.digest);
  });
});

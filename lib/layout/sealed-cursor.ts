/**
 * A listing's cursor sealed, for a listing whose position can name what the caller is not shown:
 * GET /v1/keys for a manage key that may not see every key of its tenant (its position is a key id
 * and the KV's own cursor, which under npm start's Workers KV holds the whole KV key, tenant id
 * included: lib/api/auth/key-listing.ts). Sealed with lib/shared/seal.ts (AES-256-GCM under a key
 * derived with HKDF-SHA-256 from a deployment secret, its own purpose "toolshed-page-cursors", so
 * never the key of anything else sealed under that secret), with the listing and its prefix (the
 * tenant's) as additional data: the caller reads nothing from it, and one of another tenant or
 * listing, a changed or a cut one does not open (INVALID_ARGUMENT, page-cursor.ts's refusal).
 *
 *   cursor = base64url("2" + IV (12 bytes) + AES-GCM(payload) + tag (16 bytes))
 *
 * The other listings' cursors are only encoded (page-cursor.ts, version "1"): their positions name
 * entries the caller is shown anyway. One seal or open costs a few µs
 * (docs/benchmarks/investigations-per-call.md, "GET /v1/keys with sealed cursors").
 */
import { randomId } from "../shared/hash.js";
import { sealer, type Sealer } from "../shared/seal.js";
import { base64UrlToBytes, bytesToBase64Url } from "../shared/text.js";
import { cursorRefused } from "./page-cursor.js";

const SEALED = 0x32; // "2": page-cursor.ts's encoded cursors start with "1"

/**
 * The sealer of a deployment's cursors: under `secret` (the same on every instance, so a cursor
 * opens on any of them); without one, under a secret made here, for this app only (a cursor of
 * another instance is then refused: list again).
 */
export const cursorSealer = (secret: string | undefined): Sealer => sealer(secret ?? randomId(32), "toolshed-page-cursors");

const aadOf = (listing: string, prefix: string) => `${listing}\n${prefix}`;

/** `payload` (a position below `prefix`, or a store's cursor) sealed for the caller, bound to the listing and prefix. */
export async function sealedCursor(box: Sealer, listing: string, prefix: string, payload: string): Promise<string> {
  const sealed = await box.seal(payload, aadOf(listing, prefix));
  const bytes = new Uint8Array(sealed.length + 1);
  bytes[0] = SEALED;
  bytes.set(sealed, 1);
  return bytesToBase64Url(bytes);
}

/** The payload of a caller's cursor, one sealedCursor gave for this listing and prefix; else INVALID_ARGUMENT naming what to pass instead. */
export async function openedCursor(box: Sealer, listing: string, prefix: string, cursor: string, what: string): Promise<string> {
  const bytes = base64UrlToBytes(cursor);
  if (bytes?.[0] !== SEALED) throw cursorRefused(cursor, bytes?.[0] === 0x31 ? "belongs to another listing, or was handed out before this listing's cursors were sealed (2026-11-30)" : "is not one a listing gave", what);
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(await box.open(bytes.subarray(1), aadOf(listing, prefix)));
  } catch {
    throw cursorRefused(cursor, "belongs to another listing (another tenant's) or was changed", what);
  }
}

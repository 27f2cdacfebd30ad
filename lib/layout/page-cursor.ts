/**
 * The cursors a caller pages a storage listing with (a workspace's files, the tenant's workspaces,
 * the admin's tenants): where the next page starts, relative to the listing's prefix, as base64url,
 * bound to the listing. A listing whose position can name what its caller is not shown (a tenant's
 * API keys: a key id and the KV's own cursor) seals it instead: lib/layout/sealed-cursor.ts. Never a storage key (it names the tenant) nor the store's own cursor (opaque
 * to us, so it cannot be checked; a memory or merged listing's is the key itself).
 *
 *   cursor = base64url("1" + binding + position)   binding: FNV-1a of the listing's name and prefix
 *                                                  (8 hex); position: the page's end below the prefix
 *
 * Passed back, a cursor is checked and becomes a `startAfter` of prefix + position: the store lists
 * from there, below the same prefix, so no cursor reaches a key outside it. One made for another
 * listing (another workspace, directory or tenant, or a recursive listing for a flat one) or not made
 * here (forged, cut, or a store cursor from before 2026-11-30) is INVALID_ARGUMENT. The binding is
 * no secret: forging one for one's own prefix only moves one's own listing.
 * Costs: one list request a page, as with the store's cursor (startAfter in its place).
 */
import { ToolError } from "../shared/errors.js";
import { fnv1aHex } from "../shared/hash.js";
import { fromBase64Url, toBase64Url } from "../shared/text.js";
import type { ListOptions, ListResult, StorageDriver } from "../storage/types.js";
import { AFTER_ALL, compareKeys } from "./key-order.js";

const VERSION = "1";

/** The storage position after a page's last entry: its last key, or past everything below its last rolled-up prefix. */
function pageEnd(r: ListResult): string | undefined {
  let end: string | undefined;
  for (const k of [...r.objects.map((o) => o.key), ...r.prefixes.map((p) => p + AFTER_ALL)]) if (end === undefined || compareKeys(k, end) > 0) end = k;
  return end;
}

const bindingOf = (listing: string, prefix: string) => fnv1aHex(`${listing}\n${prefix}`);

/** A cursor for the caller: `payload` (a position below `prefix`, or a store's own cursor that names no tenant) bound to the listing. */
export const boundCursor = (listing: string, prefix: string, payload: string): string => toBase64Url(VERSION + bindingOf(listing, prefix) + payload);

/** The refusal of a caller's cursor (`why` it is refused) that names what to pass instead; every listing's cursors give this one. */
export const cursorRefused = (cursor: string, why: string, what: string): ToolError =>
  new ToolError("INVALID_ARGUMENT", `cursor ${why}: pass back the cursor of the previous page of this same listing (${what}) as it was, or leave cursor out to list from the first page.`, { cursor: cursor.slice(0, 64) });

/** The payload of a caller's cursor, checked to be one boundCursor gave for this listing and prefix; else INVALID_ARGUMENT naming what to pass instead. */
export function cursorPayload(listing: string, prefix: string, cursor: string, what: string): string {
  const bad = (why: string) => cursorRefused(cursor, why, what);
  let text: string;
  try {
    text = fromBase64Url(cursor);
  } catch {
    throw bad("is not one a listing gave");
  }
  if (!text.startsWith(VERSION) || text.length <= VERSION.length + 8) throw bad("is not one a listing gave");
  if (text.slice(VERSION.length, VERSION.length + 8) !== bindingOf(listing, prefix)) throw bad("belongs to another listing");
  return text.slice(VERSION.length + 8);
}

/**
 * One page of `opts.prefix`, from the caller's `cursor` (one this function gave for the same
 * `listing` and prefix), and the cursor of the next page while more may follow. `listing` names
 * what is listed (with the prefix it binds the cursor); `what` says it in the refusal. A page the
 * store thinned to nothing while more follows (R2's tombstones) is followed to the next with the
 * store's own cursor, never handed out (8 such pages in a row: UNAVAILABLE, every call is bounded).
 */
export async function listPageAt(driver: StorageDriver, opts: Omit<ListOptions, "cursor" | "startAfter">, page: { listing: string; what: string; cursor?: string | undefined }): Promise<{ result: ListResult; cursor?: string }> {
  const startAfter = page.cursor ? opts.prefix + cursorPayload(page.listing, opts.prefix, page.cursor, page.what) : undefined;
  const { result, end } = await listPageFrom(driver, opts, startAfter, page.what);
  return { result, ...(end !== undefined ? { cursor: boundCursor(page.listing, opts.prefix, end.slice(opts.prefix.length)) } : {}) };
}

/**
 * One page of `opts.prefix` after the storage key `startAfter` (from its start when undefined), and
 * the storage position after its last entry while more may follow (`end`). The step listPageAt makes
 * from a caller's cursor; a listing that hands out its own positions (a key's covered workspaces,
 * lib/workspace/covered-listing.ts) makes it too. Thinned pages are followed as listPageAt says.
 */
export async function listPageFrom(driver: StorageDriver, opts: Omit<ListOptions, "cursor" | "startAfter">, startAfter: string | undefined, what: string): Promise<{ result: ListResult; end?: string }> {
  let result = await driver.list({ ...opts, ...(startAfter !== undefined ? { startAfter } : {}) });
  for (let round = 0; result.cursor && result.objects.length + result.prefixes.length === 0; round++) {
    if (round >= 8) throw new ToolError("UNAVAILABLE", `The listing (${what}) met only deleted entries for ${round + 1} pages in a row; retry in a moment (they are being cleared).`);
    result = await driver.list({ ...opts, cursor: result.cursor });
  }
  const end = result.cursor ? pageEnd(result) : undefined;
  return { result, ...(end !== undefined ? { end } : {}) };
}

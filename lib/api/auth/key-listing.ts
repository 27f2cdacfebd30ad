/**
 * One page of a tenant's API keys: GET /v1/keys (only the keys the calling manage key could have
 * made: `shown`) and the admin's GET /v1/admin/tenants/{tenant}/keys (all of them).
 *
 * A manage key that may not see every key learns of the others nothing (docs/tenant-keys.md): the
 * page is filled with keys it is shown, reading on past the ones it is not, and looks one shown key
 * past a full page before it hands out a cursor, so a page's length, and whether a cursor follows,
 * depend only on the keys it is shown (bounded: below); the cursor is sealed (lib/layout/sealed-cursor.ts),
 * since its position is a key id and the KV's own cursor (Workers KV has no "start after"; under
 * npm start its cursor holds the whole KV key, the tenant id included).
 *
 *   position = { kv: the KV cursor the listing resumes from (none: the start), after: the last key id passed there }
 *
 * Each key's id entry carries its bounds as list metadata (keys.ts listedMetadata), so a key the
 * caller is not shown is passed on the listing alone, never read; a key whose entry has none (made
 * before the entries carried them, or bounds over 1,000 characters) is read to decide, as before.
 * Costs: 1 KV LIST a round and 2 KV GETs a key read (the keys shown, one past a full page, and keys
 * without bounds on their entry). A round lists as many keys as the page still needs (1 for the
 * look past a full page); once a key not shown (or one passed before, resuming within a KV page)
 * was met, 10, then twice as many each round, up to 1,000. A page makes at most MAX_LISTS rounds
 * (about 17,000 keys listed) and MAX_READS reads (Workers allow 1,000 KV operations a request):
 * past them it ends where it stopped, with a cursor, shorter than the limit, even empty: more keys
 * may follow, ask with the cursor. So a run of more than ~17,000 keys the caller is not shown (or
 * ~200 keys made before their entries carried bounds) can shorten a page: the one thing it can tell of them.
 * The admin's listing (everything shown) makes no look past a full page: 1 LIST + 2 GETs a key, as before.
 */
import { ToolError } from "../../shared/errors.js";
import type { Sealer } from "../../shared/seal.js";
import { compareKeys } from "../../layout/key-order.js";
import { cursorSealer, openedCursor, sealedCursor } from "../../layout/sealed-cursor.js";
import type { KeyValueStore, StorageDriver } from "../../storage/types.js";
import type { ToolList } from "../../layout/workspace-meta.js";
import { getTenant, hashKey, keyIdKey, keyInfoOf, listedBoundsOf, MAX_LIST_PAGE, type ApiKeyRecord, type ListedBounds } from "./keys.js";

const LISTING = "api keys";
const WHAT = "GET /v1/keys, or the admin's keys of the same tenant";
/** The most key records one page reads, and KV list rounds it makes (see the file comment). */
export const MAX_READS = 2 * MAX_LIST_PAGE;
export const MAX_LISTS = 24;
/** Keys a round lists at least once a key not shown was met (doubling each round, up to LIST_MOST): fewer rounds across a run of them. */
const ROUND_AFTER_HIDDEN = 10;
/** The most keys one KV list gives (Workers KV's own bound). */
const LIST_MOST = 1000;

type Position = { kv?: string; after?: string };

/** The sealer of the keys listing's cursors: the deployment's sync secret, else its admin token (every instance alike); else this app's own. */
export const keyListCursors = (deps: { syncSecret?: string | undefined; adminToken?: string | undefined }): Sealer => cursorSealer(deps.syncSecret ?? deps.adminToken);

/** A KV listing from a cursor of ours the store refuses (expired, say): the caller lists again, not INTERNAL. */
async function withCursor<T>(cursor: string | undefined, list: () => Promise<T>): Promise<T> {
  try {
    return await list();
  } catch (e) {
    if (cursor && !(e instanceof ToolError)) throw new ToolError("INVALID_ARGUMENT", "cursor is not valid: pass back the cursor of the previous page as it was.", {});
    throw e;
  }
}

async function recordOf(kv: KeyValueStore, idKey: string): Promise<ApiKeyRecord | null> {
  const hash = await kv.get(idKey);
  const raw = hash ? await kv.get(hashKey(hash)) : null;
  return raw ? (keyInfoOf(JSON.parse(raw) as ApiKeyRecord) as ApiKeyRecord) : null; // null: revoked between the list and the read
}

/** What the caller's rule (`shown`) decides on: a key's id and bounds, from its id entry's metadata or its record. */
export type KeyCandidate = ListedBounds & { key_id: string; tools?: ToolList | "all" };

/**
 * One page of `tenant`'s API keys (never the key or its hash), in key id order; `shown` keeps those
 * of a batch the caller may see (absent: all). KV lists are eventually consistent: a new key may take a minute to show.
 */
export async function listApiKeys(
  kv: KeyValueStore,
  storage: StorageDriver,
  tenant: string,
  opts: { cursor?: string | undefined; limit?: number | undefined },
  cursors: Sealer,
  shown?: <T extends KeyCandidate>(keys: T[]) => Promise<T[]>,
): Promise<{ keys: ApiKeyRecord[]; cursor?: string }> {
  await getTenant(storage, tenant);
  const prefix = keyIdKey(tenant, "");
  const limit = Math.min(opts.limit ?? MAX_LIST_PAGE, MAX_LIST_PAGE);
  let at: Position = opts.cursor ? (JSON.parse(await openedCursor(cursors, LISTING, prefix, opts.cursor, WHAT)) as Position) : {};
  const keys: ApiKeyRecord[] = [];
  const page = async (next: Position | null) => ({ keys, ...(next ? { cursor: await sealedCursor(cursors, LISTING, prefix, JSON.stringify(next)) } : {}) });
  let reads = 0;
  let hiddenRounds = 0; // rounds since a key not shown (or passed before: from.after) was met: each lists twice as many keys, up to LIST_MOST
  for (let lists = 0; ; lists++) {
    if (reads >= MAX_READS || lists >= MAX_LISTS || (keys.length === limit && !shown)) return page(at);
    const from = at;
    const want = keys.length < limit ? limit - keys.length : 1; // 1: the look past a full page
    // from.after: the round lists again keys it passed.
    const size = hiddenRounds > 0 ? Math.min(LIST_MOST, Math.max(want, ROUND_AFTER_HIDDEN << (hiddenRounds - 1))) : from.after !== undefined ? Math.max(want, ROUND_AFTER_HIDDEN) : want;
    if (hiddenRounds > 0) hiddenRounds++;
    const r = await withCursor(from.kv, () => kv.list({ prefix, limit: size, metadata: true, ...(from.kv ? { cursor: from.kv } : {}) }));
    const listed = r.keys.map((k, i) => ({ id: k.slice(prefix.length), bounds: listedBoundsOf(r.metadata?.[i]) })).filter((l) => from.after === undefined || compareKeys(l.id, from.after) > 0);
    if (listed.length < r.keys.length && hiddenRounds === 0) hiddenRounds = 1;
    // A key whose entry carries its bounds and that the caller is not shown is passed without a read.
    const passed = new Set<string>();
    if (shown) {
      const known = listed.flatMap((l) => (l.bounds ? [{ ...l.bounds, key_id: l.id }] : []));
      const kept = new Set((await shown(known)).map((k) => k.key_id));
      for (const k of known) if (!kept.has(k.key_id)) passed.add(k.key_id);
    }
    // In order, in batches of as many reads as the page still needs; the rule then decides on the records read.
    for (let i = 0; i < listed.length; ) {
      const need = Math.min(keys.length < limit ? limit - keys.length : 1, MAX_READS - reads);
      const batch: string[] = [];
      let j = i;
      for (; j < listed.length; j++) {
        if (passed.has(listed[j]!.id)) continue;
        if (batch.length >= need) break;
        batch.push(listed[j]!.id);
      }
      if (j === i) return page(at); // the next key needs a read, and the page has made all it may
      const records = await Promise.all(batch.map((id) => recordOf(kv, prefix + id)));
      reads += batch.length;
      const read = records.filter((k): k is ApiKeyRecord => k !== null);
      const visible = new Set((shown ? await shown(read) : read).map((k) => k.key_id));
      const byId = new Map(batch.map((id, n) => [id, records[n]]));
      for (; i < j; i++) {
        const rec = byId.get(listed[i]!.id);
        if (rec && visible.has(rec.key_id)) {
          if (keys.length === limit) return page(at); // one more is shown: the page ends before it
          keys.push(rec);
        } else if (hiddenRounds === 0) hiddenRounds = 1;
        at = { ...(from.kv ? { kv: from.kv } : {}), after: listed[i]!.id };
      }
    }
    if (!r.cursor) return page(null);
    at = { kv: r.cursor, ...(listed.length === 0 && from.after !== undefined ? { after: from.after } : {}) }; // a round of keys all passed before: still after it
  }
}

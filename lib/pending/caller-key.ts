/**
 * The key that made a held call, as it is now: an approved call runs with it, so a key revoked
 * before the approval runs nothing, and a key narrowed since runs only what it may now.
 *
 * lib/auth/keys.ts exports no lookup by key id, so this pages through the tenant's keys
 * (listApiKeys: 1 KV LIST + 2 KV GETs per key and page). KV listings are eventually consistent:
 * a key created within the last minute may not be listed yet, and is then taken for revoked
 * (its approved call runs nothing and says so; approving again a minute later cannot help, since
 * an answer is taken once: the agent makes the call again). A lookup by id in keys.ts would end both.
 */
import { listApiKeys, MAX_LIST_PAGE, type AuthInfo } from "../auth/keys.js";
import type { AppDeps } from "../deps.js";

/** Most listing pages read looking for the key (100 keys each). */
const MAX_PAGES = 100;

/** The key's tenant, scopes and tool list now; null when it was revoked (or never was this tenant's). */
export async function currentKey(deps: Pick<AppDeps, "kv" | "storage">, tenant: string, keyId: string): Promise<AuthInfo | null> {
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const r = await listApiKeys(deps.kv, deps.storage, tenant, { limit: MAX_LIST_PAGE, ...(cursor ? { cursor } : {}) });
    const k = r.keys.find((x) => x.key_id === keyId);
    if (k) return { tenant, key_id: k.key_id, scopes: k.scopes, ...(k.tools !== undefined ? { tools: k.tools } : {}) };
    if (!r.cursor) return null;
    cursor = r.cursor;
  }
  return null;
}

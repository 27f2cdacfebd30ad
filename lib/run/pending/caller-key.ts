/**
 * The key that made a held call, as it is now: an approved call runs with it, so a key revoked
 * before the approval runs nothing, and a key narrowed since runs only what it may now.
 * One lookup by key id (lib/api/auth/keys.ts getApiKeyById: 2 KV GETs), never a listing (KV listings
 * lag: a key made a minute ago would be taken for revoked).
 */
import { getApiKeyById, type AuthInfo } from "../../api/auth/keys.js";
import type { AppDeps } from "../../api/deps.js";

/** The key's tenant, scopes and tool list now; null when it was revoked (or never was this tenant's). */
export async function currentKey(deps: Pick<AppDeps, "kv">, tenant: string, keyId: string): Promise<AuthInfo | null> {
  return getApiKeyById(deps.kv, tenant, keyId);
}

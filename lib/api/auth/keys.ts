/**
 * Tenants and their API keys. A tenant record lives in object storage (strongly consistent,
 * created with If-None-Match: *, so two creates of one id cannot both win); API keys live in
 * KV (read on every request). A key is shown once at creation and stored only as its SHA-256
 * hash. Keys look like `tsk_<key id>_<secret>` so they are easy to spot in logs and scanners.
 */
import { ToolError } from "../../shared/errors.js";
import { randomId, sha256Hex } from "../../shared/hash.js";
import { ID_PATTERN, TENANTS_PREFIX, tenantRecordKey } from "../../workspace/paths.js";
import { isConditionFailed, type KeyValueStore, type StorageDriver } from "../../storage/types.js";
import type { ToolList } from "../../run/toolset.js";
import type { IsolateCache } from "../../shared/isolate-cache.js";
import type { Limits } from "../../limits/fields.js";

/** `approve` answers pending calls (ask_user, the approval gate); `manage` adds and changes the tenant's custom tools; neither is in the default set, so an agent's key cannot approve its own calls or define tools. */
export const SCOPES = ["read", "write", "execute", "network", "approve", "manage"] as const;
export type Scope = (typeof SCOPES)[number];
export const DEFAULT_SCOPES: Scope[] = ["read", "write", "execute"];
export const KEY_PREFIX = "tsk_";

/**
 * The key id a presented key names (`tsk_<key id>_<secret>`), or null when it is not shaped like
 * a key. Read from the text alone: it says nothing about whether such a key exists.
 */
export function keyIdOf(presented: string): string | null {
  return /^tsk_([a-z0-9]{1,32})_[^_\s]{1,64}$/.exec(presented)?.[1] ?? null;
}

export interface Tenant {
  id: string;
  name: string;
  created_at: string;
}

export interface ApiKeyRecord {
  key_id: string;
  tenant: string;
  name: string;
  scopes: Scope[];
  /** The tools this key may use (lib/run/toolset.ts): a preset or names; absent: all. */
  tools?: ToolList;
  /** The key's own limits (lib/limits/fields.ts); each applies as the smaller of it and the tenant's. Absent: the tenant's. */
  limits?: Limits;
  created_at: string;
}

export interface AuthInfo {
  tenant: string;
  key_id: string;
  scopes: Scope[];
  /** The key's tool list (absent: all); lib/run/toolset.ts applies it. */
  tools?: ToolList;
  /** The key's own limits (absent: the tenant's); lib/limits applies them. */
  limits?: Limits;
}

const hashKey = (hash: string) => `apikey/${hash}`;
const keyIdKey = (tenant: string, keyId: string) => `keyid/${tenant}/${keyId}`;

export async function createTenant(storage: StorageDriver, input: { id?: string; name?: string }): Promise<Tenant> {
  const id = input.id ?? `tn_${randomId(12)}`;
  if (!ID_PATTERN.test(id)) throw new ToolError("INVALID_ARGUMENT", `Invalid tenant id ${JSON.stringify(id)}: use 1-63 lower-case letters, digits, '-' or '_'.`, { id });
  const tenant: Tenant = { id, name: input.name ?? id, created_at: new Date().toISOString() };
  try {
    await storage.put(tenantRecordKey(id), JSON.stringify(tenant), { ifNoneMatch: "*", contentType: "application/json" });
  } catch (e) {
    if (isConditionFailed(e)) throw new ToolError("ALREADY_EXISTS", `Tenant ${id} already exists.`, { id });
    throw e;
  }
  return tenant;
}

export async function getTenant(storage: StorageDriver, id: string): Promise<Tenant> {
  const r = ID_PATTERN.test(id) ? await storage.get(tenantRecordKey(id)) : null;
  if (!r) throw new ToolError("NOT_FOUND", `Tenant not found: ${id}.`, { tenant: id });
  return JSON.parse(await new Response(r.body).text()) as Tenant;
}

export async function createApiKey(kv: KeyValueStore, storage: StorageDriver, tenant: string, input: { name?: string; scopes?: Scope[]; tools?: ToolList; limits?: Limits }): Promise<{ key: string; record: ApiKeyRecord }> {
  await getTenant(storage, tenant);
  const keyId = randomId(10);
  const key = `${KEY_PREFIX}${keyId}_${randomId(32)}`;
  const record: ApiKeyRecord = { key_id: keyId, tenant, name: input.name ?? "default", scopes: input.scopes ?? DEFAULT_SCOPES, ...(input.tools !== undefined ? { tools: input.tools } : {}), ...(input.limits !== undefined ? { limits: input.limits } : {}), created_at: new Date().toISOString() };
  const hash = await sha256Hex(key);
  await kv.put(hashKey(hash), JSON.stringify(record));
  await kv.put(keyIdKey(tenant, keyId), hash);
  return { key, record };
}

export async function revokeApiKey(kv: KeyValueStore, tenant: string, keyId: string, cache?: IsolateCache<AuthInfo | null>): Promise<void> {
  const hash = /^[a-z0-9]{1,32}$/.test(keyId) ? await kv.get(keyIdKey(tenant, keyId)) : null;
  if (!hash) throw new ToolError("NOT_FOUND", `API key not found: ${keyId}.`, { key_id: keyId });
  await kv.delete(hashKey(hash));
  await kv.delete(keyIdKey(tenant, keyId));
  cache?.forget(hash);
}

/** A tenant's key by its id, as it is now (2 KV GETs); null when revoked or never this tenant's. */
export async function getApiKeyById(kv: KeyValueStore, tenant: string, keyId: string): Promise<AuthInfo | null> {
  const hash = /^[a-z0-9]{1,32}$/.test(keyId) ? await kv.get(keyIdKey(tenant, keyId)) : null;
  const raw = hash ? await kv.get(hashKey(hash)) : null;
  if (!raw) return null;
  const rec = JSON.parse(raw) as ApiKeyRecord;
  if (rec.tenant !== tenant || rec.key_id !== keyId) return null;
  return { tenant: rec.tenant, key_id: rec.key_id, scopes: rec.scopes, ...(rec.tools !== undefined ? { tools: rec.tools } : {}), ...(rec.limits !== undefined ? { limits: rec.limits } : {}) };
}

/**
 * The tenant and scopes of a presented key, or null. With `cache` (createApp's), a key's record
 * is read from KV at most once per isolate every few seconds: a key revoked through this isolate
 * stops at once, through another within the cache's TTL (5 s) on top of KV's own propagation.
 */
export async function resolveApiKey(kv: KeyValueStore, key: string, cache?: IsolateCache<AuthInfo | null>): Promise<AuthInfo | null> {
  if (!key.startsWith(KEY_PREFIX) || key.length > 100) return null;
  const hash = await sha256Hex(key);
  const load = async (): Promise<AuthInfo | null> => {
    const raw = await kv.get(hashKey(hash));
    if (!raw) return null;
    const rec = JSON.parse(raw) as ApiKeyRecord;
    return { tenant: rec.tenant, key_id: rec.key_id, scopes: rec.scopes, ...(rec.tools !== undefined ? { tools: rec.tools } : {}), ...(rec.limits !== undefined ? { limits: rec.limits } : {}) };
  };
  return cache ? cache.get(hash, load) : load();
}

/** The most a listing page holds: each entry costs one more read (the tenant record, the key record). */
export const MAX_LIST_PAGE = 100;

/** A listing with a caller's cursor: a cursor the store refuses is the caller's mistake, not INTERNAL. */
async function withCursor<T>(cursor: string | undefined, list: () => Promise<T>): Promise<T> {
  try {
    return await list();
  } catch (e) {
    if (cursor && !(e instanceof ToolError)) throw new ToolError("INVALID_ARGUMENT", "cursor is not valid: pass back the cursor of the previous page as it was.", {});
    throw e;
  }
}

/** One page of tenants, in id order. */
export async function listTenants(storage: StorageDriver, opts: { cursor?: string; limit?: number }): Promise<{ tenants: Tenant[]; cursor?: string }> {
  const r = await withCursor(opts.cursor, () => storage.list({ prefix: TENANTS_PREFIX, delimiter: "/", limit: Math.min(opts.limit ?? MAX_LIST_PAGE, MAX_LIST_PAGE), ...(opts.cursor ? { cursor: opts.cursor } : {}) }));
  const ids = r.prefixes.map((p) => p.slice(TENANTS_PREFIX.length, -1)).filter((id) => ID_PATTERN.test(id));
  // A prefix whose record is gone (a tenant half deleted by hand) is skipped.
  const tenants = await Promise.all(ids.map((id) => getTenant(storage, id).catch(() => null)));
  return { tenants: tenants.filter((t): t is Tenant => t !== null), ...(r.cursor ? { cursor: r.cursor } : {}) };
}

/** One page of a tenant's API keys (never the key or its hash). KV lists are eventually consistent: a new key may take a minute to show. */
export async function listApiKeys(kv: KeyValueStore, storage: StorageDriver, tenant: string, opts: { cursor?: string; limit?: number }): Promise<{ keys: ApiKeyRecord[]; cursor?: string }> {
  await getTenant(storage, tenant);
  const prefix = keyIdKey(tenant, "");
  const r = await withCursor(opts.cursor, () => kv.list({ prefix, limit: Math.min(opts.limit ?? MAX_LIST_PAGE, MAX_LIST_PAGE), ...(opts.cursor ? { cursor: opts.cursor } : {}) }));
  const records = await Promise.all(
    r.keys.map(async (k) => {
      const hash = await kv.get(k);
      const raw = hash ? await kv.get(hashKey(hash)) : null;
      if (!raw) return null; // revoked between the list and the read
      const rec = JSON.parse(raw) as ApiKeyRecord;
      const info: ApiKeyRecord = { key_id: rec.key_id, tenant: rec.tenant, name: rec.name, scopes: rec.scopes, tools: rec.tools ?? "all", created_at: rec.created_at };
      return info;
    }),
  );
  return { keys: records.filter((k): k is ApiKeyRecord => k !== null), ...(r.cursor ? { cursor: r.cursor } : {}) };
}

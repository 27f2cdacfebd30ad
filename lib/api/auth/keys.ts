/**
 * Tenants and their API keys. A tenant record lives in object storage (strongly consistent,
 * created with If-None-Match: *, so two creates of one id cannot both win); API keys live in
 * KV (read on every request). A key is shown once at creation and stored only as its SHA-256
 * hash. Keys look like `tsk_<key id>_<secret>` so they are easy to spot in logs and scanners.
 */
import { ToolError } from "../../shared/errors.js";
import { randomId, sha256Hex } from "../../shared/hash.js";
import { ID_PATTERN, TENANTS_PREFIX, tenantRecordKey } from "../../layout/paths.js";
import { listPageAt } from "../../layout/page-cursor.js";
import { isConditionFailed, KV_METADATA_MAX, type KeyValueStore, type StorageDriver } from "../../storage/types.js";
import type { ToolList } from "../../layout/workspace-meta.js";
import type { IsolateCache } from "../../shared/isolate-cache.js";
import { DEFAULT_SCOPES, OAUTH_KEY_ID_PREFIX, SCOPES, type AuthInfo, type Scope } from "../../contract/caller.js";
import type { Limits } from "../../limits/fields.js";
import { oauthPrincipalStands } from "./oauth-principal.js";

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
  /** The workspaces it may reach: ids or id prefixes ending in `*` (lib/api/auth/key-bounds.ts); absent: all. */
  workspaces?: string[];
  /** When it stops working (ISO time); absent: never. */
  expires_at?: string;
  /** The key id that made it through POST /v1/keys; absent: made by the admin. */
  created_by?: string;
  /**
   * Every key above it, nearest first (`created_by`, its maker, …, up to a key the admin made), kept
   * on the record when it is made, so revoking a key in the middle does not cut the chain (approvals:
   * lib/run/pending/approve.ts). Absent: made by the admin, or by a key made before lineages were kept.
   */
  lineage?: string[];
  /** The key's own limits (lib/limits/fields.ts); each applies as the smaller of it and the tenant's. Absent: the tenant's. */
  limits?: Limits;
  /** The keys above it that have limits, nearest first, with those limits (immutable: a key's limits change only with a new key). */
  maker_limits?: { key_id: string; limits: Limits }[];
  created_at: string;
  /** On the record of a secret that was rotated: it works until then (rotation's grace). */
  grace_until?: string;
  /** On the current record: the hashes of secrets rotated away that are still in their grace (revocation deletes them too). */
  previous?: string[];
}

/** What a request may do with a key, from its stored record (one way, for every reader). */
function authOf(rec: ApiKeyRecord): AuthInfo {
  const ends = [rec.expires_at, rec.grace_until].filter((t): t is string => t !== undefined).sort((a, b) => Date.parse(a) - Date.parse(b));
  return {
    tenant: rec.tenant,
    key_id: rec.key_id,
    scopes: rec.scopes,
    ...(rec.tools !== undefined ? { tools: rec.tools } : {}),
    ...(rec.workspaces !== undefined ? { workspaces: rec.workspaces } : {}),
    ...(rec.limits !== undefined ? { limits: rec.limits } : {}),
    ...(rec.maker_limits !== undefined ? { maker_limits: rec.maker_limits } : {}),
    ...(ends.length ? { expires_at: ends[0]! } : {}),
    ...(rec.expires_at !== undefined ? { key_expires_at: rec.expires_at } : {}),
    ...(rec.created_by !== undefined ? { made_by: rec.created_by } : {}),
    ...(rec.lineage !== undefined ? { lineage: rec.lineage } : {}),
  };
}
/** Where a key's record is kept (by the hash of its secret), and where its id points at that hash. */
export const hashKey = (hash: string) => `apikey/${hash}`;
export const keyIdKey = (tenant: string, keyId: string) => `keyid/${tenant}/${keyId}`;

/** What a key may reach (key-bounds.ts KeyBounds), as its id entry carries it for the listing. */
export type ListedBounds = Pick<ApiKeyRecord, "scopes" | "tools" | "workspaces" | "expires_at" | "limits">;

/**
 * The id entry's list metadata: the key's bounds, so GET /v1/keys decides which keys a caller is
 * shown from the KV listing alone (lib/api/auth/key-listing.ts); none when they do not fit
 * (KV_METADATA_MAX: a key of many workspace patterns or tool names), and such a key is read to decide.
 * A key's bounds never change (a rotation keeps them), so the copy never goes stale.
 */
function listedMetadata(rec: ApiKeyRecord): { metadata?: string } {
  const { scopes, tools, workspaces, expires_at, limits } = rec;
  const text = JSON.stringify(definedOf({ scopes, tools, workspaces, expires_at, limits }));
  return text.length <= KV_METADATA_MAX ? { metadata: text } : {};
}

/** A key's bounds from its id entry's metadata; null when it has none (made before the entries carried them, or too large) or it does not read. */
export function listedBoundsOf(metadata: string | undefined): ListedBounds | null {
  if (metadata === undefined) return null;
  try {
    const b = JSON.parse(metadata) as ListedBounds;
    return Array.isArray(b?.scopes) ? b : null;
  } catch {
    return null;
  }
}

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
  const valid = ID_PATTERN.test(id);
  const r = valid ? await storage.get(tenantRecordKey(id)) : null;
  if (!r) {
    const create = valid ? `; POST /v1/admin/tenants {"id":"${id}"} creates it` : "";
    throw new ToolError("NOT_FOUND", `Tenant not found: ${id}. GET /v1/admin/tenants lists the tenants${create}.`, { tenant: id });
  }
  return JSON.parse(await new Response(r.body).text()) as Tenant;
}

export interface NewKey {
  name?: string;
  scopes?: Scope[];
  tools?: ToolList;
  workspaces?: string[];
  expires_at?: string;
  created_by?: string;
  lineage?: string[];
  limits?: Limits;
  maker_limits?: { key_id: string; limits: Limits }[];
}

export async function createApiKey(kv: KeyValueStore, storage: StorageDriver, tenant: string, input: NewKey): Promise<{ key: string; record: ApiKeyRecord }> {
  await getTenant(storage, tenant);
  const keyId = randomId(10);
  const key = `${KEY_PREFIX}${keyId}_${randomId(32)}`;
  const { name, scopes, ...bounds } = input;
  const record: ApiKeyRecord = { key_id: keyId, tenant, name: name ?? "default", scopes: scopes ?? DEFAULT_SCOPES, ...definedOf(bounds), created_at: new Date().toISOString() };
  const hash = await sha256Hex(key);
  await kv.put(hashKey(hash), JSON.stringify(record));
  await kv.put(keyIdKey(tenant, keyId), hash, listedMetadata(record));
  return { key, record };
}

const definedOf = <T extends object>(o: T): Partial<T> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

/** The one answer for a key id the caller cannot reach (never made, revoked, another tenant's: no oracle), with where the keys are listed. */
export const keyNotFound = (keyId: string) =>
  new ToolError("NOT_FOUND", `API key not found: ${keyId}. List the keys with GET /v1/keys (those within this key's bounds), or as the operator with GET /v1/admin/tenants/{tenant}/keys.`, { key_id: keyId });

/** A tenant's key record by its id with its current hash (2 KV GETs), or null. */
async function currentRecord(kv: KeyValueStore, tenant: string, keyId: string): Promise<{ hash: string; rec: ApiKeyRecord } | null> {
  const hash = /^[a-z0-9]{1,32}$/.test(keyId) ? await kv.get(keyIdKey(tenant, keyId)) : null;
  const raw = hash ? await kv.get(hashKey(hash)) : null;
  if (!hash || !raw) return null;
  const rec = JSON.parse(raw) as ApiKeyRecord;
  return rec.tenant === tenant && rec.key_id === keyId ? { hash, rec } : null;
}

export async function revokeApiKey(kv: KeyValueStore, tenant: string, keyId: string, cache?: IsolateCache<AuthInfo | null>): Promise<void> {
  const found = await currentRecord(kv, tenant, keyId);
  if (!found) throw keyNotFound(keyId);
  // Every secret of the key goes: the current one and those rotated away that are still in their grace.
  for (const h of [found.hash, ...(found.rec.previous ?? [])]) {
    await kv.delete(hashKey(h));
    cache?.forget(h);
  }
  cache?.forget(byIdCacheKey(tenant, keyId));
  await kv.delete(keyIdKey(tenant, keyId));
}

/**
 * A new secret for a key (same id, scopes, tools, workspaces, expiry); the old secret keeps working
 * for `graceSeconds` (0: stops at once). Shown once, like a new key.
 */
export async function rotateApiKey(kv: KeyValueStore, tenant: string, keyId: string, graceSeconds: number, cache?: IsolateCache<AuthInfo | null>, now = Date.now()): Promise<{ key: string; record: ApiKeyRecord }> {
  const found = await currentRecord(kv, tenant, keyId);
  if (!found) throw keyNotFound(keyId);
  const key = `${KEY_PREFIX}${keyId}_${randomId(32)}`;
  const hash = await sha256Hex(key);
  const { previous, grace_until: _, ...rec } = found.rec;
  const stillInGrace: string[] = [];
  for (const h of previous ?? []) {
    const old = await kv.get(hashKey(h));
    if (old && Date.parse((JSON.parse(old) as ApiKeyRecord).grace_until ?? "") > now) stillInGrace.push(h);
  }
  if (graceSeconds > 0) {
    await kv.put(hashKey(found.hash), JSON.stringify({ ...rec, grace_until: new Date(now + graceSeconds * 1000).toISOString() } satisfies ApiKeyRecord));
    stillInGrace.push(found.hash);
  } else await kv.delete(hashKey(found.hash));
  cache?.forget(found.hash);
  const record: ApiKeyRecord = { ...rec, ...(stillInGrace.length ? { previous: stillInGrace } : {}) };
  await kv.put(hashKey(hash), JSON.stringify(record));
  await kv.put(keyIdKey(tenant, keyId), hash, listedMetadata(record));
  return { key, record };
}

/** A tenant's key by its id, as it is now (2 KV GETs); null when revoked or never this tenant's. */
export async function getApiKeyById(kv: KeyValueStore, tenant: string, keyId: string): Promise<AuthInfo | null> {
  const found = await currentRecord(kv, tenant, keyId);
  return found ? authOf(found.rec) : null;
}

/** Where a caller's record is kept: API keys in KV, the tenants' OAuth configs in object storage. */
export interface CallerStores {
  kv: KeyValueStore;
  storage: StorageDriver;
}

/**
 * The caller `keyId` of `tenant` as it stands now, for work asked in its name and done later (a held
 * call a human approves, lib/run/pending/approve.ts; a live sandbox's polls; a background subagent's
 * calls): its key record as it is now (null when revoked), or, for an OAuth principal, which has no
 * record (its tokens end by themselves), the principal with no bound of its own (the scopes the work
 * was asked with bound it) while the tenant still trusts its issuer (lib/api/auth/oauth-principal.ts), else null.
 */
export async function callerNow(stores: CallerStores, tenant: string, keyId: string): Promise<AuthInfo | null> {
  if (keyId.startsWith(OAUTH_KEY_ID_PREFIX)) return (await oauthPrincipalStands(stores.storage, tenant, keyId)) ? { tenant, key_id: keyId, scopes: [...SCOPES] } : null;
  return getApiKeyById(stores.kv, tenant, keyId);
}

/** Where the isolate's key cache (createApp's apiKeys, keyed by secret hashes otherwise) keeps a key looked up by its id. */
const byIdCacheKey = (tenant: string, keyId: string) => `id:${tenant}/${keyId}`;

/**
 * Whether key `keyId` of `tenant` still stands: not revoked, not expired (an OAuth principal: its issuer still trusted, callerNow). What a live sandbox's polls
 * ask (lib/sync/live-server.ts); the record is cached per isolate as a presented key's is (revoked
 * through this isolate: seen at once), the expiry checked at every ask. A revocation through another
 * isolate reaches a sandbox within its poll (LIVE_POLL_MS, 20 s) + the cache's 5 s + KV's propagation.
 */
export function keyStands(stores: CallerStores, cache?: IsolateCache<AuthInfo | null>) {
  return async (tenant: string, keyId: string): Promise<boolean> => {
    const load = () => callerNow(stores, tenant, keyId);
    const key = cache ? await cache.get(byIdCacheKey(tenant, keyId), load) : await load();
    return key !== null && (key.key_expires_at === undefined || Date.parse(key.key_expires_at) > Date.now());
  };
}

/** A key's record as the listing and the key routes show it (never a hash). */
export function keyInfoOf(rec: ApiKeyRecord): Omit<ApiKeyRecord, "previous" | "grace_until" | "lineage"> & { tools: ToolList | "all" } {
  const { previous: _p, grace_until: _g, lineage: _l, ...shown } = rec;
  return { ...shown, tools: rec.tools ?? "all" };
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
    return authOf(JSON.parse(raw) as ApiKeyRecord);
  };
  return cache ? cache.get(hash, load) : load();
}

/** The most a listing page holds: each entry costs one more read (the tenant record, the key record). */
export const MAX_LIST_PAGE = 100;

/** One page of tenants, in id order. */
export async function listTenants(storage: StorageDriver, opts: { cursor?: string; limit?: number }): Promise<{ tenants: Tenant[]; cursor?: string }> {
  const { result: r, cursor } = await listPageAt(storage, { prefix: TENANTS_PREFIX, delimiter: "/", limit: Math.min(opts.limit ?? MAX_LIST_PAGE, MAX_LIST_PAGE) }, { listing: "tenants", what: "GET /v1/admin/tenants", cursor: opts.cursor });
  const ids = r.prefixes.map((p) => p.slice(TENANTS_PREFIX.length, -1)).filter((id) => ID_PATTERN.test(id));
  // A prefix whose record is gone (a tenant half deleted by hand) is skipped.
  const tenants = await Promise.all(ids.map((id) => getTenant(storage, id).catch(() => null)));
  return { tenants: tenants.filter((t): t is Tenant => t !== null), ...(cursor ? { cursor } : {}) };
}

/** The storage quotas of one workspace for one caller (lib/limits/storage-quota.ts), or none when the app counts nothing. */
import { filesPrefix } from "../layout/paths.js";
import { storageQuota, type StorageQuotaHandle } from "../limits/storage-quota.js";
import type { Caller, LimitsStore } from "../limits/store.js";
import type { StorageAllowances } from "../limits/storage-allowance.js";
import type { StorageDriver } from "../storage/types.js";

/**
 * `deps`: the limits, and the isolate's storage allowances where it keeps them (createApp: a write's charge
 * off its path, lib/limits/storage-allowance.ts); `later`: the request's waitUntil. `driver`: the workspace's
 * merged view (its first count lists it). `caller`: the key (its own limits apply), or {key_id: ""} for the tenant's.
 */
export function quotaOf(deps: { limits?: LimitsStore; storageAllowances?: StorageAllowances }, tenant: string, ws: string, caller: Caller, driver: StorageDriver, later?: (p: Promise<unknown>) => void): StorageQuotaHandle | undefined {
  const { limits, storageAllowances } = deps;
  return limits ? storageQuota({ limits, ...(storageAllowances ? { allowances: storageAllowances } : {}), ...(later ? { later } : {}) }, tenant, ws, caller, driver, filesPrefix(tenant, ws)) : undefined;
}

/** The caller of an authenticated request: its key and the key's own limits. */
export const callerOf = (auth: { key_id: string; limits?: Caller["limits"]; maker_limits?: Caller["maker_limits"] }): Caller => ({
  key_id: auth.key_id,
  ...(auth.limits ? { limits: auth.limits } : {}),
  ...(auth.maker_limits?.length ? { maker_limits: auth.maker_limits } : {}),
});

/** As a WorkspaceOptions field: `{quota}` when there is one, else nothing. */
export const quotaOpt = <Q>(quota: Q | undefined): { quota: Q } | Record<never, never> => (quota ? { quota } : {});

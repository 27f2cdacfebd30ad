/**
 * The tenant's policy record, KV `policy/<tenant>` (its schema and PUT /v1/admin/tenants/{t}/policy:
 * lib/tools/web/policy.ts), read through the isolate's cache of tenant settings. It is read here,
 * below the tools, because every run with network carries the policy's web domain lists to its
 * egress proxy (runRequest, tool-support.ts); the approval gate's read of the same call is the same
 * cache entry, so a command's call reads KV for it once.
 */
import type { IsolateCache } from "../shared/isolate-cache.js";
import type { WebDomains } from "../shared/web-domains.js";
import type { KeyValueStore } from "../storage/types.js";

export const tenantPolicyKey = (tenant: string) => `policy/${tenant}`;

/** The stored policy (`{}` when none); `T` is the caller's view of it (lib/tools/web/policy.ts TenantPolicy). Through `cache` (deps.policies, per isolate, seconds) when given. */
export async function readTenantPolicy<T extends { web?: WebDomains | undefined }>(kv: KeyValueStore, tenant: string, cache?: IsolateCache): Promise<T> {
  const load = async () => {
    const raw = await kv.get(tenantPolicyKey(tenant));
    return raw ? (JSON.parse(raw) as T) : ({} as T);
  };
  return cache ? ((await cache.get(tenant, load)) as T) : load();
}

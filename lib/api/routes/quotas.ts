/**
 * Quotas checked by routes before they write (docs/limits-and-quotas.md): `workspaces` at create
 * and fork. The usage is counted from storage (one list per 1,000 workspaces, stopped at the
 * limit), so it never drifts; two creates racing past the last free slot can both pass (the
 * overshoot is at most the creates in flight at that moment).
 */
import type { AppDeps } from "../deps.js";
import type { AuthInfo } from "../../contract/caller.js";
import { effectiveLimits, quotaExceeded } from "../../limits/fields.js";
import { tenantWorkspacesPrefix } from "../../layout/paths.js";
import type { StorageDriver } from "../../storage/types.js";

/** The tenant's workspaces, counted up to `atMost` (a listing of workspace prefixes, 1,000 a page). */
export async function countWorkspaces(storage: StorageDriver, tenant: string, atMost: number): Promise<number> {
  let n = 0;
  let cursor: string | undefined;
  do {
    const r = await storage.list({ prefix: tenantWorkspacesPrefix(tenant), delimiter: "/", limit: 1000, ...(cursor ? { cursor } : {}) });
    n += r.prefixes.length;
    cursor = r.cursor;
  } while (cursor && n < atMost);
  return n;
}

/** QUOTA_EXCEEDED when the tenant (or the key) already has as many workspaces as its `workspaces` limit allows. */
export async function checkWorkspaceQuota(deps: AppDeps, auth: AuthInfo): Promise<void> {
  if (!deps.limits) return;
  const limit = effectiveLimits(await deps.limits.get(auth.tenant), auth.limits).workspaces;
  const usage = await countWorkspaces(deps.storage, auth.tenant, limit);
  if (usage >= limit) throw quotaExceeded("workspaces", usage, limit, "No workspace was created");
}

/**
 * The scheduled tick of both runtimes (Workers `scheduled`, the Lambda `gcHandler`): GC of packs and
 * manifests (lib/layers/gc-schedule.ts), and for each tenant it reaches, the audit log's retention
 * (lib/run/audit/retention.ts; TOOLSHED_AUDIT_RETENTION_DAYS, default 365, 0 keeps entries for the
 * workspace's life), each workspace's call-task records past their ttl (lib/run/tasks/store.ts:
 * up to 20 per workspace and tick, beside the sweep of every task's creation), and each workspace's
 * undo journals past their retention, every session's (lib/workspace/undo-retention.ts: a session
 * that stopped making calls is pruned only here).
 */
import { gcTick, type GcTickOptions, type GcTickReport } from "../layers/gc-schedule.js";
import { auditRetentionDays, pruneAudit, workspaceIds } from "../run/audit/retention.js";
import { sweepCallTasks } from "../run/tasks/store.js";
import type { KeyValueStore, StorageDriver } from "../storage/types.js";
import { undoPrefix } from "../layout/paths.js";
import { pruneWorkspaceUndo, RETAIN_CALLS, RETAIN_MS } from "../workspace/undo-retention.js";
import { stampTime } from "../workspace/undo-journal.js";

export interface HousekeepingEnv {
  TOOLSHED_AUDIT_RETENTION_DAYS?: string;
}

export function housekeepingTick(deps: { storage: StorageDriver; kv: KeyValueStore }, env: HousekeepingEnv, opts: GcTickOptions = {}): Promise<GcTickReport> {
  const days = auditRetentionDays(env.TOOLSHED_AUDIT_RETENTION_DAYS);
  return gcTick(deps, { ...opts, perTenant: async (tenant, now) => ({ ...(await pruneAudit(deps.storage, tenant, { days, now })), call_tasks_deleted: await sweepTenantCallTasks(deps.storage, tenant, now), undo_calls_deleted: await pruneTenantUndo(deps.storage, tenant, now) }) });
}

/** Every workspace's call-task records past their ttl (and 24 h past their last write); how many were deleted. */
export async function sweepTenantCallTasks(storage: StorageDriver, tenant: string, now: number): Promise<number> {
  let deleted = 0;
  for (const ws of await workspaceIds(storage, tenant)) deleted += (await sweepCallTasks(storage, tenant, ws, now)).length;
  return deleted;
}

/** Every workspace's undo calls past the retention (RETAIN_CALLS per session, none older than RETAIN_MS); how many were deleted. */
export async function pruneTenantUndo(storage: StorageDriver, tenant: string, now: number): Promise<number> {
  let deleted = 0;
  for (const ws of await workspaceIds(storage, tenant)) deleted += await pruneWorkspaceUndo(storage, undoPrefix(tenant, ws), stampTime, { calls: RETAIN_CALLS, ms: RETAIN_MS, now });
  return deleted;
}

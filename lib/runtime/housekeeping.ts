/**
 * The scheduled tick of both runtimes (Workers `scheduled`, the Lambda `gcHandler`): GC of packs and
 * manifests (lib/layers/gc-schedule.ts), and for each tenant it reaches, the audit log's retention
 * (lib/run/audit/retention.ts; TOOLSHED_AUDIT_RETENTION_DAYS, default 365, 0 keeps entries for the
 * workspace's life).
 */
import { gcTick, type GcTickOptions, type GcTickReport } from "../layers/gc-schedule.js";
import { auditRetentionDays, pruneAudit } from "../run/audit/retention.js";
import type { KeyValueStore, StorageDriver } from "../storage/types.js";

export interface HousekeepingEnv {
  TOOLSHED_AUDIT_RETENTION_DAYS?: string;
}

export function housekeepingTick(deps: { storage: StorageDriver; kv: KeyValueStore }, env: HousekeepingEnv, opts: GcTickOptions = {}): Promise<GcTickReport> {
  const days = auditRetentionDays(env.TOOLSHED_AUDIT_RETENTION_DAYS);
  return gcTick(deps, { ...opts, perTenant: async (tenant, now) => ({ ...(await pruneAudit(deps.storage, tenant, { days, now })) }) });
}

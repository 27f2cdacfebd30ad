/**
 * How long the audit log is kept (docs/audit.md "Retention"): entries older than the retention are
 * deleted by the scheduled GC tick (lib/layers/gc-schedule.ts `perTenant`), tenant after tenant, from
 * the tenant's own log and every workspace's. Entry ids begin with their time (entry.ts), so the
 * old entries are the first of each listing: a prune lists from the start and stops at the first
 * entry inside the retention, and touches no other object. A workspace's log still goes with the
 * workspace; a restore never brings entries back (they are not workspace files).
 *
 * Cost per tenant and tick: 1 LIST of the tenant's workspaces (per 1,000), then per log 1 LIST
 * (per 1,000 entries) and one batched DELETE per 1,000 old entries; at most `maxDeletions` per tick
 * (`more: true`: the next tick goes on).
 */
import { auditPrefix, ID_PATTERN, tenantAuditPrefix, tenantWorkspacesPrefix } from "../../layout/paths.js";
import type { StorageDriver } from "../../storage/types.js";
import { compactTime } from "./entry.js";

/** Days an entry is kept by default (TOOLSHED_AUDIT_RETENTION_DAYS; 0 keeps entries for the workspace's life). */
export const AUDIT_RETENTION_DAYS = 365;
/** Most entries one tick deletes for one tenant. */
export const AUDIT_PRUNE_MAX_DELETIONS = 5000;
const DAY_MS = 86_400_000;

export interface AuditPruneReport {
  audit_deleted: number;
  /** Old entries are left for the next tick (the tick's deletions ran out). */
  more: boolean;
}

/** The retention in days from the setting: a whole number ≥ 0, else the default. */
export function auditRetentionDays(setting: string | undefined): number {
  if (setting === undefined || setting.trim() === "") return AUDIT_RETENTION_DAYS;
  const n = Number(setting);
  return Number.isSafeInteger(n) && n >= 0 ? n : AUDIT_RETENTION_DAYS;
}

/** The tenant's workspace ids (1 LIST per 1,000): what the housekeeping tick walks. */
export async function workspaceIds(storage: StorageDriver, tenant: string): Promise<string[]> {
  const prefix = tenantWorkspacesPrefix(tenant);
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const r = await storage.list({ prefix, delimiter: "/", ...(cursor ? { cursor } : {}) });
    for (const p of r.prefixes) {
      const id = p.slice(prefix.length, -1);
      if (ID_PATTERN.test(id)) ids.push(id);
    }
    cursor = r.cursor;
  } while (cursor);
  return ids;
}

/** Deletes the log's entries older than `before` (a compact time), at most `budget`; returns how many, and whether more are left. */
async function pruneLog(storage: StorageDriver, prefix: string, before: string, budget: number): Promise<{ deleted: number; more: boolean }> {
  let deleted = 0;
  let cursor: string | undefined;
  for (;;) {
    const r = await storage.list({ prefix, limit: 1000, ...(cursor ? { cursor } : {}) });
    const old = r.objects.map((o) => o.key).filter((k) => k.slice(prefix.length) < before);
    const take = old.slice(0, budget - deleted);
    if (take.length) await storage.delete(take);
    deleted += take.length;
    // Listed in time order: an entry inside the retention ends the log's old part.
    if (old.length < r.objects.length || !r.cursor) return { deleted, more: false };
    if (deleted >= budget) return { deleted, more: true };
    cursor = r.cursor;
  }
}

/** Deletes one tenant's audit entries older than `days` (0: none). */
export async function pruneAudit(storage: StorageDriver, tenant: string, opts: { days: number; now?: number; maxDeletions?: number }): Promise<AuditPruneReport> {
  if (opts.days <= 0) return { audit_deleted: 0, more: false };
  const before = compactTime(new Date((opts.now ?? Date.now()) - opts.days * DAY_MS));
  let budget = opts.maxDeletions ?? AUDIT_PRUNE_MAX_DELETIONS;
  let total = 0;
  const logs = [tenantAuditPrefix(tenant), ...(await workspaceIds(storage, tenant)).map((ws) => auditPrefix(tenant, ws))];
  for (const prefix of logs) {
    const r = await pruneLog(storage, prefix, before, budget);
    total += r.deleted;
    budget -= r.deleted;
    if (r.more || budget <= 0) return { audit_deleted: total, more: true };
  }
  return { audit_deleted: total, more: false };
}

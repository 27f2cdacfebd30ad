/**
 * GC on a schedule (README "Versions", "GC"): a cron tick (Workers `scheduled`, or the Lambda
 * `gcHandler` behind an EventBridge schedule) collects garbage tenant after tenant, with the same
 * `collectGarbage` the admin route runs and its defaults (grace period, deletions per tenant).
 *
 * One tick is bounded: at most `maxTenants` tenants and no new tenant started after `budgetMs`.
 * Where it stopped is kept in KV (`gc/cursor`: the last tenant done), so the next tick goes on from
 * there and every tenant is reached in turn; after the last tenant the next tick starts again at the
 * first. KV is a hint here, nothing more: a lost or stale cursor only changes which tenant goes first.
 * A tenant whose GC fails is logged and skipped (the error names the key, never a secret); the
 * others go on. A tenant with `more: true` is simply reached again on a later tick.
 */
import { ID_PATTERN, TENANTS_PREFIX } from "../layout/paths.js";
import type { KeyValueStore, StorageDriver } from "../storage/types.js";
import { collectGarbage, type GcReport, type UndoPrune } from "./gc.js";

export const GC_CURSOR_KEY = "gc/cursor";
export const GC_TICK_MAX_TENANTS = 50;
export const GC_TICK_BUDGET_MS = 60_000;

export interface GcTickOptions {
  maxTenants?: number;
  budgetMs?: number;
  /** Passed to collectGarbage. */
  graceSeconds?: number;
  /** The clock (tests move it past the grace period); collectGarbage gets its reading. */
  now?: () => number;
  log?: (line: string) => void;
  /** Passed to collectGarbage: undo retention pruned on GC's listing of each undo prefix, before its records are read. */
  pruneUndo?: UndoPrune;
  /**
   * More housekeeping for each tenant the tick reaches, after its GC (the entries pass the audit
   * log's retention: lib/run/audit/retention.ts); what it answers is logged with the tenant's line.
   * A failure is logged and the tick goes on.
   */
  perTenant?: (tenant: string, now: number) => Promise<Record<string, unknown>>;
}

export interface GcTickReport {
  tenants: ({ tenant: string; report: GcReport } | { tenant: string; error: string })[];
  /** The tenant the next tick starts after; null: the next tick starts at the first tenant. */
  cursor: string | null;
}

/** Tenant ids whose prefix `t/<id>/` lists after `after`'s (storage order), at most `limit`. */
async function tenantsAfter(storage: StorageDriver, after: string | null, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const r = await storage.list({ prefix: TENANTS_PREFIX, delimiter: "/", ...(cursor ? { cursor } : after ? { startAfter: `${TENANTS_PREFIX}${after}/\uffff` } : {}) });
    for (const p of r.prefixes) {
      const id = p.slice(TENANTS_PREFIX.length, -1);
      if (ID_PATTERN.test(id) && (after === null || p > `${TENANTS_PREFIX}${after}/`)) ids.push(id);
    }
    cursor = r.cursor;
  } while (cursor && ids.length < limit);
  return ids.slice(0, limit);
}

export async function gcTick(deps: { storage: StorageDriver; kv: KeyValueStore }, opts: GcTickOptions = {}): Promise<GcTickReport> {
  const now = opts.now ?? Date.now;
  const log = opts.log ?? ((line: string) => console.log(line));
  const maxTenants = opts.maxTenants ?? GC_TICK_MAX_TENANTS;
  const deadline = now() + (opts.budgetMs ?? GC_TICK_BUDGET_MS);
  const saved = await deps.kv.get(GC_CURSOR_KEY);
  const after = saved && ID_PATTERN.test(saved) ? saved : null;
  // Internal keys below a tenant are ASCII, so `t/<after>/\uffff` sorts after all of them.
  // One more than a tick takes: whether tenants are left after it. None left after the cursor: start over.
  let tenants = await tenantsAfter(deps.storage, after, maxTenants + 1);
  if (tenants.length === 0 && after !== null) tenants = await tenantsAfter(deps.storage, null, maxTenants + 1);
  const last = tenants.length <= maxTenants;
  tenants = tenants.slice(0, maxTenants);
  const out: GcTickReport = { tenants: [], cursor: null };
  for (const tenant of tenants) {
    if (out.tenants.length > 0 && now() >= deadline) break;
    try {
      const report = await collectGarbage(deps.storage, tenant, { now: now(), ...(opts.graceSeconds !== undefined ? { graceSeconds: opts.graceSeconds } : {}), pruneUndo: opts.pruneUndo });
      out.tenants.push({ tenant, report });
      const more = opts.perTenant ? await opts.perTenant(tenant, now()).catch((e: unknown) => ({ housekeeping_error: e instanceof Error ? e.message : String(e) })) : {};
      log(JSON.stringify({ gc: tenant, manifests_deleted: report.manifests_deleted, packs_deleted: report.packs_deleted, segments_deleted: report.segments_deleted, leftovers_deleted: report.leftovers_deleted, bytes_freed: report.bytes_freed, more: report.more, missing_manifests: report.missing_manifests.length, ...more }));
    } catch (e) {
      const error = e instanceof Error ? e.message : String(e);
      out.tenants.push({ tenant, error });
      log(JSON.stringify({ gc: tenant, error }));
    }
    out.cursor = tenant;
  }
  // Past the last tenant: the next tick starts at the first again.
  if (last && out.tenants.length === tenants.length) out.cursor = null;
  if (out.cursor) await deps.kv.put(GC_CURSOR_KEY, out.cursor);
  else if (saved !== null) await deps.kv.delete(GC_CURSOR_KEY);
  return out;
}

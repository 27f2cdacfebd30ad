/**
 * The scheduled tick of both runtimes (Workers `scheduled`, the Lambda `gcHandler`): GC of packs and
 * manifests (lib/layers/gc-schedule.ts), and for each tenant it reaches, the audit log's retention
 * (lib/run/audit/retention.ts; TOOLSHED_AUDIT_RETENTION_DAYS, default 365, 0 keeps entries for the
 * workspace's life), each workspace's call-task records past their ttl (lib/run/tasks/store.ts:
 * up to 20 of each key's folder and 20 of the first layout's per workspace and tick, beside the sweep
 * of a key's folder at each of its tasks' creation), each workspace's run records a day past their
 * run's end (housekeepRuns in lib/exec/tasks.ts, the rule of a task start's housekeeping, on one page
 * of 1,000 keys per workspace and tick, each tick's page after the last one's: the records of
 * foreground runs whose isolate died before deleting them, and of tasks in a workspace that started
 * no other since), and each workspace's undo
 * journals past their retention, every session's and the workspace's bound across them
 * (lib/workspace/undo-retention.ts: a workspace that stopped making calls is pruned only here). The
 * undo prune runs inside GC's mark, on the listing GC makes of each undo prefix for its roots, before
 * it reads the records there: one listing serves both, and a pack only a pruned record named is freed
 * in the same tick. With the live service (`deps.live`), each workspace's forgotten live ends: a marker older
 * than a sandbox's lease whose coordinator holds neither its generation nor its end is billed from the marker
 * (lib/exec/live/forgotten-end.ts sweepForgottenEnds: one LIST per workspace, at most LIVE_SESSIONS_PER_TENANT
 * coordinator requests per tenant and tick), under a waitUntil of the tick's own that it awaits before it ends.
 */
import { gcTick, type GcTickOptions, type GcTickReport } from "../layers/gc-schedule.js";
import type { UndoPrune } from "../layers/gc.js";
import { auditRetentionDays, pruneAudit, workspaceIds } from "../run/audit/retention.js";
import { sweepCallTasks } from "../run/tasks/store.js";
import { housekeepRuns } from "../exec/tasks.js";
import type { KeyValueStore, StorageDriver } from "../storage/types.js";
import { undoPrefix } from "../layout/paths.js";
import { pruneWorkspaceUndo, UNDO_RETENTION } from "../workspace/undo-retention.js";
import { stampTime } from "../workspace/undo-record.js";
import { sweepForgottenEnds } from "../exec/live/forgotten-end.js";
import type { LiveService } from "../exec/live/service.js";
import type { WaitUntil } from "../shared/after-answer.js";
import { settleDeferred } from "./lambda-stream.js";

export interface HousekeepingEnv {
  TOOLSHED_AUDIT_RETENTION_DAYS?: string;
}

export interface HousekeepingDeps {
  storage: StorageDriver;
  kv: KeyValueStore;
  /** The app's live service (lib/api/live-events.ts appLiveService): without it, forgotten live ends are not swept. */
  live?: LiveService | undefined;
}

export async function housekeepingTick(deps: HousekeepingDeps, env: HousekeepingEnv, opts: GcTickOptions = {}): Promise<GcTickReport> {
  const days = auditRetentionDays(env.TOOLSHED_AUDIT_RETENTION_DAYS);
  const undo = undoRetention(deps.storage);
  // The usage records and audit entries of the ends it bills are written under this, and awaited before the tick ends.
  const deferred = new Set<Promise<unknown>>();
  const later: WaitUntil = (p) => {
    const kept: Promise<unknown> = p.catch((e: unknown) => console.error("housekeeping: work after an end failed", e instanceof Error ? e.message : String(e))).finally(() => deferred.delete(kept));
    deferred.add(kept);
  };
  try {
    return await gcTick(deps, {
      ...opts,
      pruneUndo: undo.prune,
      perTenant: async (tenant, now) => {
        const audit = await pruneAudit(deps.storage, tenant, { days, now });
        const records = await sweepTenantRecords({ ...deps, later }, tenant, now);
        return { ...audit, ...records, undo_calls_deleted: undo.dropped(tenant) };
      },
    });
  } finally {
    await settleDeferred(deferred, Infinity);
  }
}

/** Run records' pages the tick reads per workspace (1,000 keys each): one LIST, at most one DELETE. */
const TICK_RUN_PAGES = 1;

/**
 * Where each workspace's run-record sweep stopped, per tenant (KV: `{<workspace>: <position>}`, only
 * workspaces with more left), so the next tick reads the page after: with more than a page of
 * records, the first page's (young ones, a run ids' order is no age order) no longer hides the rest.
 * A hint, as GC's cursor: a lost or stale one only changes which page a tick reads first.
 */
export const runSweepKey = (tenant: string): string => `housekeeping/run-sweep/${tenant}`;
/** A position no tick moved on for this long is dropped by KV (a workspace deleted, the tenant gone). */
const RUN_SWEEP_TTL_S = 7 * 24 * 3600;

/** Sessions with a forgotten live end whose coordinator one tenant's sweep asks at most, per tick (a tenant with more is reached again next tick). */
const LIVE_SESSIONS_PER_TENANT = 32;

interface RecordSweep {
  call_tasks_deleted: number;
  run_records_deleted: number;
  /** Forgotten live ends billed from their markers (with the live service). */
  live_ends_billed?: number;
  housekeeping_error?: string;
}

/**
 * Every workspace's call-task records past their ttl (and 24 h past their last write) and run
 * records a day past their run's end; how many objects of each were deleted. A workspace whose run
 * records could not be swept does not stop the others: the first such error is the tenant's
 * `housekeeping_error`, beside the counts (the next tick tries again).
 */
export async function sweepTenantRecords(deps: HousekeepingDeps & { later?: WaitUntil }, tenant: string, now: number): Promise<RecordSweep> {
  const { storage, kv, live } = deps;
  const out: RecordSweep = { call_tasks_deleted: 0, run_records_deleted: 0, ...(live ? { live_ends_billed: 0 } : {}) };
  let liveAsks = LIVE_SESSIONS_PER_TENANT;
  const saved = await savedPositions(kv, tenant);
  const positions: Record<string, string> = {};
  for (const ws of await workspaceIds(storage, tenant)) {
    out.call_tasks_deleted += (await sweepCallTasks(storage, tenant, ws, now)).length;
    try {
      const r = await housekeepRuns(storage, tenant, ws, now, TICK_RUN_PAGES, saved[ws]);
      out.run_records_deleted += r.deleted;
      if (r.next !== null) positions[ws] = r.next;
    } catch (e) {
      if (saved[ws] !== undefined) positions[ws] = saved[ws]; // the same page again next tick
      out.housekeeping_error ??= `run records of workspace ${ws}: ${e instanceof Error ? e.message : String(e)}`;
    }
    if (live && liveAsks > 0) {
      try {
        const swept = await sweepForgottenEnds(live, tenant, ws, { now, maxSessions: liveAsks, later: deps.later });
        liveAsks -= swept.asked;
        out.live_ends_billed! += swept.billed;
      } catch (e) {
        out.housekeeping_error ??= `live sandbox markers of workspace ${ws}: ${e instanceof Error ? e.message : String(e)}`;
      }
    }
  }
  const json = JSON.stringify(positions);
  if (json !== JSON.stringify(saved)) await (Object.keys(positions).length ? kv.put(runSweepKey(tenant), json, { expirationTtl: RUN_SWEEP_TTL_S }) : kv.delete(runSweepKey(tenant)));
  return out;
}

async function savedPositions(kv: KeyValueStore, tenant: string): Promise<Record<string, string>> {
  try {
    const v: unknown = JSON.parse((await kv.get(runSweepKey(tenant))) ?? "{}");
    return v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).filter((e): e is [string, string] => typeof e[1] === "string")) : {};
  } catch {
    return {}; // unreadable: from the first page
  }
}

/**
 * Undo retention over GC's listings (UNDO_RETENTION: per session and per workspace): `prune`
 * for GC's mark, `dropped` the tenant's count after its GC. A failed prune leaves GC the whole
 * listing (a record deleted meanwhile reads as gone) and is thrown by `dropped`, as the tenant's
 * housekeeping error.
 */
function undoRetention(storage: StorageDriver): { prune: UndoPrune; dropped: (tenant: string) => number } {
  const tally = new Map<string, { dropped: number; error?: unknown }>();
  const of = (tenant: string) => tally.get(tenant) ?? tally.set(tenant, { dropped: 0 }).get(tenant)!;
  return {
    prune: async (tenant, ws, listed, now) => {
      try {
        const r = await pruneWorkspaceUndo(storage, undoPrefix(tenant, ws), listed, stampTime, { ...UNDO_RETENTION, now });
        of(tenant).dropped += r.dropped;
        return r.kept;
      } catch (e) {
        of(tenant).error ??= e;
        return listed;
      }
    },
    dropped: (tenant) => {
      const t = of(tenant);
      tally.delete(tenant);
      if (t.error !== undefined) throw t.error;
      return t.dropped;
    },
  };
}

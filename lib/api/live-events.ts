/**
 * A live sandbox's start and end, as the app records them (docs/live-sessions.md, docs/usage.md,
 * docs/audit.md): an audit entry at its start and at its end, and one usage record at its end
 * (route "live sandbox": sandbox_ms its wall time, from its start to its end, bytes_written what its final
 * write-back wrote, as its runner reported it), or, when that end was accounted before the runner wrote back (an
 * end the API decided), a second record of the write-back's bytes alone (route "live sandbox write-back",
 * lib/exec/live/final-write-back.ts); no end entry when its
 * workspace was deleted (the log went with it). Given to the live service by createApp; neither fails a call.
 * Both are written under the waitUntil of the request that learned of the start or end (`later`); before
 * (2026-12-02) the end's usage record went to the sink at once, outside every waitUntil, and workerd could
 * cancel its store write with the request.
 */
import type { AppDeps } from "./deps.js";
import { liveService, type LiveEvents, type LiveService } from "../exec/live/service.js";
import type { LiveEnd, LiveKey } from "../exec/live/types.js";
import { emitUsage } from "../run/metering/usage.js";
import { recordAudit } from "../run/audit/store.js";
import { newAuditId, type AuditEntry } from "../run/audit/entry.js";

/** The usage record's route name of a live sandbox (docs/usage.md). */
export const LIVE_USAGE_ROUTE = "live sandbox";
/** The route name of the record of a final write-back made after its sandbox's end was accounted (an end the API decided). */
export const LIVE_WRITE_BACK_USAGE_ROUTE = "live sandbox write-back";

/**
 * The app's live service (docs/live-sessions.md): the coordinator, the tenant's concurrent_runs, these records and the
 * markers in storage. One builder for createApp and for the scheduled tick (lib/runtime/housekeeping.ts), which bills
 * forgotten ends with the same records; undefined where live sessions are off (no coordinator).
 */
export function appLiveService(deps: AppDeps): LiveService | undefined {
  if (!deps.liveCoordinator) return undefined;
  return liveService(deps.liveCoordinator, {
    ...(deps.limits ? { limits: deps.limits } : {}), events: liveEvents(deps), markers: deps.storage,
    ...(deps.liveMaxLifeMs ? { max_life_ms: deps.liveMaxLifeMs } : {}), ...(deps.liveBusyWaitMs !== undefined ? { busy_wait_ms: deps.liveBusyWaitMs } : {}),
  });
}

export function liveEvents(deps: Pick<AppDeps, "storage" | "onUsage">): LiveEvents {
  /** Who started each generation, for its end's records (this isolate's memory: another isolate's end names no key). */
  const starters = new Map<string, string>();
  const entry = (key: LiveKey, route: string, key_id: string, args: Record<string, unknown>): AuditEntry => ({
    id: newAuditId(), at: new Date().toISOString(), tenant: key.tenant, workspace: key.workspace, key_id, session: key.session,
    door: "runner", route, args, outcome: { ok: true, status: 200 },
  });
  return {
    async started(key, s, later) {
      starters.set(s.generation, s.key_id);
      if (starters.size > 1000) starters.delete(starters.keys().next().value!);
      await recordAudit(deps.storage, entry(key, "live sandbox start", s.key_id, { generation: s.generation, idle_ms: s.idle_ms, max_life_ms: s.max_life_ms }), later);
    },
    async ended(key, end: LiveEnd, later) {
      const key_id = starters.get(end.generation) ?? "";
      starters.delete(end.generation);
      emitUsage(deps.onUsage, { tenant: key.tenant, workspace: key.workspace, ...(key_id ? { key: key_id } : {}), route: LIVE_USAGE_ROUTE, ok: true, ms: end.wall_ms, bytes_read: 0, bytes_written: end.bytes_written ?? 0, sandbox_ms: end.wall_ms, ...(end.cpu_ms !== undefined ? { cpu_ms: end.cpu_ms } : {}), ...(end.net_bytes_in !== undefined ? { net_bytes_in: end.net_bytes_in, net_bytes_out: end.net_bytes_out ?? 0 } : {}) }, later);
      // Its workspace's audit log went with the workspace: an entry now would be a leftover under a prefix without a record.
      if (end.reason === "workspace_deleted") return;
      await recordAudit(deps.storage, entry(key, "live sandbox end", key_id, { generation: end.generation, reason: end.reason, wall_ms: end.wall_ms, ...(end.cpu_ms !== undefined ? { cpu_ms: end.cpu_ms } : {}), processes_lost: end.lost_total ?? end.lost_processes.length }), later);
    },
    async writtenBack(key, w, later) {
      const net = w.net_bytes_in !== undefined || w.net_bytes_out !== undefined ? { net_bytes_in: w.net_bytes_in ?? 0, net_bytes_out: w.net_bytes_out ?? 0 } : {};
      emitUsage(deps.onUsage, { tenant: key.tenant, workspace: key.workspace, ...(w.key_id ? { key: w.key_id } : {}), route: LIVE_WRITE_BACK_USAGE_ROUTE, ok: true, ms: 0, bytes_read: 0, bytes_written: w.bytes_written ?? 0, ...net }, later);
    },
  };
}

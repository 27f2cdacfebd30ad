/**
 * The end of a live sandbox nobody reported: its coordinator forgot it (a reset: a deploy, a restart; or its
 * end went with an answer whose caller had died) and its runner never posted `ended` (it crashed too, or
 * was cut off). Its coordinator holds neither it nor its end, yet its marker (markers.ts) is still there,
 * which only an end never accounted leaves (accountEnds deletes it). Three finders, whichever comes first:
 * - an acquirer past concurrent_runs that asks about its slot (lib/exec/limited.ts acquireSlot): accountForgottenEnd;
 * - the scheduled tick (lib/runtime/housekeeping.ts), for a marker older than the sandbox's lease (its maximum
 *   life and a minute: its runner is past its life, its lease ended), whatever the tenant's limit: sweepForgottenEnds;
 * - its workspace's delete (lib/exec/workspace-gone.ts), before the marker goes with the workspace.
 * Each accounts it from what the marker knows, through the same end mark as every end (service.ts accountEnds,
 * markers.ts billOnce), so it is billed once, and its runner's `ended`, should it come after all, bills no end
 * again (final-write-back.ts; in a deleted workspace it bills none from its report: the delete did).
 *
 * What is billed: from the marker's time (the runner's start) to the finder's now, at most the sandbox's maximum
 * life: when the runner died is not known once the coordinator forgot its last poll, so this is an upper bound
 * (its idle timeout may have ended it sooner; found by the tick, it is always the maximum life). Its CPU and its
 * lost processes are not known either. Bundles for Workers.
 */
import { liveMarkerKey } from "../../layout/live-markers.js";
import type { WaitUntil } from "../../shared/after-answer.js";
import type { LiveEndReason } from "../../sync/live-types.js";
import { listMarkers, type LiveMarker } from "./markers.js";
import { accountEnds, liveLeaseMs, type LiveService } from "./service.js";
import type { LiveEnd, LiveKey } from "./types.js";

/** Accounts a forgotten generation's end from its marker as listed or read: answers whether it was billed here. Never throws. */
export async function billForgottenEnd(svc: LiveService, key: LiveKey, m: Pick<LiveMarker, "generation" | "started_at">, later: WaitUntil | undefined, now = Date.now(), reason: LiveEndReason = "crashed"): Promise<boolean> {
  if (!svc.markers || !svc.events) return false;
  const ended_at = Math.max(m.started_at, Math.min(now, m.started_at + svc.max_life_ms));
  const end: LiveEnd = { generation: m.generation, reason, arrived: true, started_at: m.started_at, ended_at, wall_ms: ended_at - m.started_at, lost_processes: [], from_marker: true };
  return (await accountEnds(svc, key, [end], later)).includes(m.generation);
}

/** Accounts `generation`'s end from its marker when the marker is there (one HEAD): answers whether it was billed here. Never throws. */
export async function accountForgottenEnd(svc: LiveService, key: LiveKey, generation: string, later: WaitUntil | undefined, now = Date.now()): Promise<boolean> {
  if (!svc.markers || !svc.events) return false;
  const storage = svc.markers;
  const marker = await Promise.resolve()
    .then(() => storage.head(liveMarkerKey(key.tenant, key.workspace, key.session, generation)))
    .catch((e: unknown) => (console.error("live sandbox marker not read", e instanceof Error ? e.message : String(e)), null));
  if (!marker) return false;
  return billForgottenEnd(svc, key, { generation, started_at: marker.modified.getTime() }, later, now);
}

/** What one workspace's sweep did: sessions whose coordinator was asked, and ends billed. */
export interface ForgottenSweep {
  asked: number;
  billed: number;
}

/**
 * The scheduled tick's sweep of one workspace: one LIST (its first page of 1,000 markers), and for each session
 * holding a marker older than a sandbox's lease (at most `maxSessions`), one coordinator status: its ends accounted
 * as a call's would be, a marked generation it neither holds nor just ended billed from its marker. A coordinator
 * that does not answer is asked again next tick. Markers billed are deleted, so the next tick's first page moves on.
 */
export async function sweepForgottenEnds(svc: LiveService, tenant: string, workspace: string, opts: { now: number; maxSessions: number; later?: WaitUntil | undefined }): Promise<ForgottenSweep> {
  const out: ForgottenSweep = { asked: 0, billed: 0 };
  if (!svc.markers || !svc.events || opts.maxSessions <= 0) return out;
  const cutoff = opts.now - liveLeaseMs(svc.max_life_ms);
  const sessions = new Map<string, LiveMarker[]>();
  for (const m of await listMarkers(svc.markers, tenant, workspace, 1)) {
    if (m.started_at >= cutoff) continue;
    if (!sessions.has(m.session) && sessions.size >= opts.maxSessions) continue;
    sessions.set(m.session, [...(sessions.get(m.session) ?? []), m]);
  }
  for (const [session, markers] of sessions) {
    const key = { tenant, workspace, session };
    out.asked++;
    const seen = await svc.coordinator.status(key).catch(() => null);
    if (!seen) continue;
    await accountEnds(svc, key, seen.ends, opts.later);
    for (const m of markers) {
      if (seen.sandbox?.generation === m.generation || seen.ends.some((e) => e.generation === m.generation)) continue; // its coordinator's to account
      if (await billForgottenEnd(svc, key, m, opts.later, opts.now)) out.billed++;
    }
  }
  return out;
}

/**
 * The end of a live sandbox nobody reported: its coordinator forgot it (a reset: a deploy, a restart; or its
 * end went with an answer whose caller had died) and its runner never posted `ended` (it crashed too, or
 * was cut off). Found when its concurrent_runs slot is asked about (lib/exec/limited.ts acquireSlot, past the
 * limit): its coordinator holds neither it nor its end, yet its marker (markers.ts) is still there, which
 * only an end never accounted leaves (accountEnds deletes it). It is accounted from what the marker knows,
 * through the same end mark as every end (service.ts accountEnds, markers.ts billOnce), so it is billed
 * once, and its runner's `ended`, should it come after all, bills no end again (final-write-back.ts).
 *
 * What is billed: from the marker's time (the runner's start) to now, at most the sandbox's maximum life:
 * when the runner died is not known once the coordinator forgot its last poll, so this is an upper bound
 * (its idle timeout may have ended it sooner). Its CPU and its lost processes are not known either.
 * Bundles for Workers.
 */
import { liveMarkerKey } from "../../layout/live-markers.js";
import type { WaitUntil } from "../../shared/after-answer.js";
import { accountEnds, type LiveService } from "./service.js";
import type { LiveEnd, LiveKey } from "./types.js";

/** Accounts `generation`'s end from its marker when the marker is there: answers whether it was billed here. Never throws. */
export async function accountForgottenEnd(svc: LiveService, key: LiveKey, generation: string, later: WaitUntil | undefined, now = Date.now()): Promise<boolean> {
  if (!svc.markers || !svc.events) return false;
  const storage = svc.markers;
  const marker = await Promise.resolve()
    .then(() => storage.head(liveMarkerKey(key.tenant, key.workspace, key.session, generation)))
    .catch((e: unknown) => (console.error("live sandbox marker not read", e instanceof Error ? e.message : String(e)), null));
  if (!marker) return false;
  const started_at = marker.modified.getTime();
  const ended_at = Math.max(started_at, Math.min(now, started_at + svc.max_life_ms));
  const end: LiveEnd = { generation, reason: "crashed", arrived: true, started_at, ended_at, wall_ms: ended_at - started_at, lost_processes: [] };
  return (await accountEnds(svc, key, [end], later)).includes(generation);
}

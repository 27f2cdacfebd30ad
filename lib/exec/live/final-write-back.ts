/**
 * A live runner's `ended` (POST /v1/sync/live/ended), accounted: its generation's end, and the bytes
 * of its final write-back (what its background processes changed since the last command:
 * LiveStatus.bytes_written, and the network bytes no command took), each billed exactly once
 * (docs/usage.md, docs/live-sessions.md).
 *
 * An end the API decides (DELETE .../sandbox, a restart of the shell, a replacement, a revoked key, a
 * runner taken for lost) is accounted when the coordinator ends the generation, before the runner
 * writes back: its "live sandbox" record holds its time only. The runner's `ended` then finds the
 * generation ended and bills the bytes in a record of their own ("live sandbox write-back"). A runner
 * that reaches its own end (idle, its life's end) bills them in its end record. A generation the
 * coordinator no longer knows and whose end nobody accounted (the coordinator was reset: a deploy, a
 * restart) is accounted here, from the runner's report: its record, its audit end entry, its marker.
 *
 * Once, however the runner's `ended` is sent (retried after an answer lost, twice at once through two
 * isolates) and whoever accounts first: each part is billed by the caller that creates its mark
 * (markers.ts billOnce: "end", made by accountEnds; "write-back", made here before the coordinator
 * hears the end). Bundles for Workers.
 */
import type { WaitUntil } from "../../shared/after-answer.js";
import { boundedEnded, type LiveEnded, type LiveSessionRef } from "../../sync/live-types.js";
import { billOnce } from "./markers.js";
import { endRestOf } from "./session-records.js";
import { accountEnds, type LiveService } from "./service.js";
import type { LiveEnd, LiveKey } from "./types.js";

/** An end without the final write-back's bytes (another post of the same `ended` billed them). */
const withoutBytes = ({ bytes_written: _b, net_bytes_in: _i, net_bytes_out: _o, ...rest }: LiveEnd): LiveEnd => rest;

/** The end a runner reports, for a generation its coordinator no longer holds (reset): its time and processes as the runner says. */
function reportedEnd(e: LiveEnded, now: number): LiveEnd {
  const b = boundedEnded(e);
  const st = b.status;
  return {
    generation: e.generation, reason: b.reason, arrived: true, started_at: st.started_at, ended_at: now, wall_ms: st.wall_ms,
    ...(st.cpu_ms !== undefined ? { cpu_ms: st.cpu_ms } : {}), ...endRestOf(st),
    lost_processes: b.lost_processes, ...(b.lost_total !== undefined ? { lost_total: b.lost_total } : {}),
  };
}

/** Whether the workspace is there (one read of its record); a read that fails answers yes (billed from the report, as before). */
const stillThere = (workspaceHere: (() => Promise<boolean>) | undefined): Promise<boolean> => (workspaceHere ? workspaceHere().catch(() => true) : Promise.resolve(true));

/**
 * The runner's last word: the write-back's mark taken first (a storage error throws before the
 * coordinator heard anything, and the runner's retry finds all as it was), then the coordinator's end,
 * then the records: the end's (accountEnds, once by its mark), else the write-back's alone.
 */
export async function accountRunnerEnd(svc: LiveService, ref: LiveSessionRef, e: LiveEnded, later: WaitUntil | undefined, workspaceHere?: () => Promise<boolean>): Promise<void> {
  const key: LiveKey = { tenant: ref.tenant, workspace: ref.workspace, session: ref.session };
  const bytes = endRestOf(e.status);
  // A deleted workspace's sandbox wrote nothing back and its end was accounted by the delete; a mark there would be a
  // leftover under a prefix without a record: what its processes exchanged with the network since the last command goes unbilled.
  const gone = e.reason === "workspace_deleted";
  const some = !gone && Object.keys(bytes).length > 0;
  // Without a place for marks (a coordinator tested alone) the bytes go only with an end the coordinator still held, as before.
  const marked = some && svc.markers ? await billOnce(svc.markers, key, e.generation, "write-back") : null;
  const ends = await svc.coordinator.ended(key, ref.generation, e);
  const own = ends.some((x) => x.generation === e.generation);
  // Not the coordinator's any more: already accounted (its end's mark is there), or never (a reset): accountEnds tells which.
  // In a workspace deleted since, neither: its delete accounted every marked end its coordinator did not hold (from the
  // marker: workspace-gone.ts), and its end mark went with the workspace, so a report billed now would be a second bill.
  const reported = !own && !gone && svc.markers && (await stillThere(workspaceHere)) ? [reportedEnd(e, Date.now())] : [];
  const all = [...ends, ...reported].map((x) => (x.generation === e.generation && marked === false ? withoutBytes(x) : x));
  const billed = await accountEnds(svc, key, all, later);
  if (marked && !billed.includes(e.generation) && svc.events) {
    await svc.events.writtenBack(key, { generation: e.generation, ...(ref.key_id ? { key_id: ref.key_id } : {}), ...bytes }, later).catch((err: unknown) => console.error("live sandbox write-back not recorded", err instanceof Error ? err.message : String(err)));
  }
}

/**
 * What ends with a workspace (DELETE /v1/workspaces/{ws}; docs/storage.md "What deletion keeps",
 * docs/live-sessions-internals.md "A workspace's delete"). Once its record is gone:
 * - its live sandboxes end at once, found by their markers (live/markers.ts: one listing): reason
 *   `workspace_deleted`, their runners' held polls answered the end now, their concurrent_runs slots
 *   released, their usage recorded; no audit entry into the gone workspace, no loss told to a later call
 *   (lib/api/live-events.ts, live/session-state.ts). Before, each ran on to its runner's next idle
 *   poll's end (up to 20 s), holding its slot; a sandbox the listing missed still ends there. A marked
 *   sandbox its coordinator forgot (a reset) whose runner never reported is billed from its marker.
 * - its background tasks' background_tasks places are freed, the tasks found among the keys the delete
 *   lists anyway (x/runs/<run>/task.json without a result.json: no operation added). Their runners are
 *   told to stop at their next kill check, about every second (the sync run route answers `kill` once the
 *   workspace is gone, lib/sync/runs.ts); they never report, so before their places stayed taken until
 *   their leases ended (the task's timeout and some minutes).
 */
import type { WaitUntil } from "../shared/after-answer.js";
import type { LimitsStore } from "../limits/store.js";
import { internalPrefix, RUN_ID_PATTERN } from "../layout/paths.js";
import type { StorageDriver } from "../storage/types.js";
import type { WorkspaceDeleteHooks } from "../workspace/registry.js";
import { listMarkers, type LiveMarker } from "./live/markers.js";
import { billForgottenEnd } from "./live/forgotten-end.js";
import { accountEnds, liveSessionId, type LiveService } from "./live/service.js";
import { releaseTaskPlaces } from "./task-places.js";

export interface WorkspaceRunsDeps {
  storage: StorageDriver;
  live?: LiveService | undefined;
  limits?: LimitsStore | undefined;
}

/** Live sandboxes ended side by side at most. */
const ENDS_AT_ONCE = 8;

const logged = (what: string) => (e: unknown) => console.error(`workspace delete: ${what}`, e instanceof Error ? e.message : String(e));

/** The hooks to give deleteWorkspace, and `done` to await after it (the tasks' places freed). */
export function endsWithWorkspace(deps: WorkspaceRunsDeps, tenant: string, workspace: string, later: WaitUntil | undefined): { hooks: WorkspaceDeleteHooks; done: () => Promise<void> } {
  const runs = `${internalPrefix(tenant, workspace)}runs/`;
  const started = new Set<string>();
  const reported = new Set<string>();
  return {
    hooks: {
      recordGone: () => endLiveSandboxes(deps, tenant, workspace, later).catch(logged("its live sandboxes were not all ended (each ends at its runner's next idle poll)")),
      deleting: (keys) => {
        for (const key of keys) {
          if (!key.startsWith(runs)) continue;
          const [id, object] = key.slice(runs.length).split("/");
          if (!id || !RUN_ID_PATTERN.test(id)) continue;
          if (object === "task.json") started.add(id);
          else if (object === "result.json") reported.add(id);
        }
      },
    },
    done: () => releaseTaskPlaces(deps.limits, tenant, workspace, [...started].filter((id) => !reported.has(id))),
  };
}

/**
 * Ends the live sandbox of every session marked in the workspace (one coordinator request each), and accounts for it.
 * A marked generation its coordinator neither held nor ended (a reset forgot it, its runner never reported: a
 * forgotten end) is billed from its marker here (forgotten-end.ts), before the marker goes with the workspace;
 * before 2026-12-02 it was billed by nobody. Its end mark is made before the delete lists the prefix, so it goes
 * with it; its runner's `ended`, should it come after all, bills nothing in the gone workspace (final-write-back.ts).
 */
async function endLiveSandboxes(deps: WorkspaceRunsDeps, tenant: string, workspace: string, later: WaitUntil | undefined): Promise<void> {
  const svc = deps.live;
  if (!svc) return;
  const bySession = new Map<string, LiveMarker[]>();
  for (const m of await listMarkers(deps.storage, tenant, workspace)) bySession.set(m.session, [...(bySession.get(m.session) ?? []), m]);
  const sessions = [...bySession];
  for (let i = 0; i < sessions.length; i += ENDS_AT_ONCE) {
    await Promise.all(sessions.slice(i, i + ENDS_AT_ONCE).map(async ([session, markers]) => {
      const key = { tenant, workspace, session };
      svc.joined.forget(liveSessionId(key));
      const answer = await svc.coordinator.end(key, "workspace_deleted").catch((e: unknown) => (logged(`session ${session}'s live sandbox was not ended`)(e), null));
      if (!answer) return; // not answered: what it holds is unknown, nothing is billed on a guess
      await accountEnds(svc, key, answer.ends, later);
      for (const m of markers) {
        if (!answer.ends.some((e) => e.generation === m.generation)) await billForgottenEnd(svc, key, m, later, Date.now(), "workspace_deleted");
      }
    }));
  }
}

/**
 * The LiveHub the sync server hands live runners' requests to (lib/sync/live-server.ts): the
 * session's coordinator, with a runner's end accounted for (its slot released, usage and audit
 * written under `later`, the waitUntil of the runner's request) once, and its final write-back's
 * bytes billed once (final-write-back.ts). The session comes from the live
 * token's claims only. Made per request (createApp). Bundles for Workers.
 */
import type { LiveHub } from "../../sync/live-types.js";
import type { LiveService } from "./service.js";
import { accountRunnerEnd } from "./final-write-back.js";
import type { WaitUntil } from "../../shared/after-answer.js";

export function liveHub(svc: LiveService, later: WaitUntil | undefined): LiveHub {
  const key = (r: { tenant: string; workspace: string; session: string }) => ({ tenant: r.tenant, workspace: r.workspace, session: r.session });
  return {
    next: (ref, status) => svc.coordinator.next(key(ref), ref.generation, status),
    result: (ref, post) => svc.coordinator.result(key(ref), ref.generation, post),
    resultThenNext: (ref, post) => svc.coordinator.resultThenNext(key(ref), ref.generation, post),
    ended: (ref, ended, workspaceHere) => accountRunnerEnd(svc, ref, ended, later, workspaceHere),
  };
}

/**
 * A live runner's `ended` (POST /v1/sync/live/ended), accounted: its generation's end, when the
 * coordinator still held it (accountEnds), and the bytes of its final write-back (what its background
 * processes changed since the last command: LiveStatus.bytes_written, and the network bytes no
 * command took), billed exactly once (docs/usage.md, docs/live-sessions.md).
 *
 * An end the API decides (DELETE .../sandbox, a restart of the shell, a replacement, its workspace
 * deleted, a runner taken for lost) is accounted when the coordinator ends the generation, before
 * the runner writes back: its "live sandbox" record holds its time only. The runner's `ended` then
 * finds the generation ended and bills the bytes in a record of their own ("live sandbox
 * write-back"). A runner that reaches its own end (idle, its life's end) bills them in its end record.
 *
 * Once, however the runner's `ended` is sent (retried after an answer lost, twice at once through
 * two isolates): the bytes are billed only by the post that creates the generation's mark, create-only
 * (If-None-Match: *), before the coordinator hears the end. The mark is a run record's `billed` object
 * (lib/sync/run-records.ts) under a run id made of the generation, so the run records' housekeeping
 * collects it a day after (lib/exec/tasks.ts housekeepRuns). One PUT per end that wrote back or reached
 * the network after its last command; nothing for one that did not. Bundles for Workers.
 */
import type { WaitUntil } from "../../shared/after-answer.js";
import { runPrefix } from "../../layout/paths.js";
import { createOnly, keysOf, runIdFor } from "../../sync/run-records.js";
import type { LiveEnded, LiveSessionRef } from "../../sync/live-types.js";
import { endRestOf } from "./session-records.js";
import { accountEnds, type LiveService } from "./service.js";
import type { LiveEnd, LiveKey } from "./types.js";

/** The bytes of a final write-back: what no command's record holds. */
export type WriteBackBytes = ReturnType<typeof endRestOf>;

/** The create-only mark that a generation's final write-back was billed. */
export async function writeBackMarkKey(key: LiveKey, generation: string): Promise<string> {
  const runId = await runIdFor(key.tenant, key.workspace, `live sandbox write-back\0${key.session}\0${generation}`);
  return keysOf(runPrefix(key.tenant, key.workspace, runId)).billed;
}

/** An end without the final write-back's bytes (another post of the same `ended` billed them). */
const withoutBytes = ({ bytes_written: _b, net_bytes_in: _i, net_bytes_out: _o, ...rest }: LiveEnd): LiveEnd => rest;

/**
 * The runner's last word: the mark taken first (a storage error throws before the coordinator heard
 * anything, and the runner's retry finds all as it was), then the coordinator's end, then the records.
 */
export async function accountRunnerEnd(svc: LiveService, ref: LiveSessionRef, e: LiveEnded, later: WaitUntil | undefined): Promise<void> {
  const key: LiveKey = { tenant: ref.tenant, workspace: ref.workspace, session: ref.session };
  const bytes = endRestOf(e.status);
  // A deleted workspace's sandbox wrote nothing back, and a mark would be a leftover under a prefix without a record:
  // what its processes exchanged with the network since the last command goes unbilled (docs/usage.md).
  const some = e.reason !== "workspace_deleted" && Object.keys(bytes).length > 0;
  // Without a place for the mark (a coordinator tested alone) the bytes go only with an end the coordinator still held, as before.
  const marked = some && svc.markers ? await createOnly(svc.markers, await writeBackMarkKey(key, e.generation), "", "text/plain") : null;
  const ends = await svc.coordinator.ended(key, ref.generation, e);
  const own = ends.some((x) => x.generation === e.generation);
  if (marked && !own && svc.events) {
    await svc.events.writtenBack(key, { generation: e.generation, ...(ref.key_id ? { key_id: ref.key_id } : {}), ...bytes }, later).catch((err: unknown) => console.error("live sandbox write-back not recorded", err instanceof Error ? err.message : String(err)));
  }
  await accountEnds(svc, key, marked === false ? ends.map((x) => (x.generation === e.generation ? withoutBytes(x) : x)) : ends, later);
}

/**
 * A live sandbox's marker in its workspace (lib/layout/live-markers.ts: x/live/<session>/<generation>):
 * put beside its runner's start (run-live.ts startRunner), deleted when its end is accounted
 * (service.ts accountEnds). A workspace's delete lists them to end its live sandboxes at once
 * (lib/exec/workspace-gone.ts) without asking every session's coordinator. One PUT and one DELETE per
 * sandbox; neither fails a call (a marker missed is caught by the runner's idle poll, lib/sync/live-server.ts).
 *
 * And a generation's billed marks, create-only (If-None-Match: *): its end billed (service.ts accountEnds, or its
 * runner's `ended` after a coordinator reset) and its final write-back billed (final-write-back.ts). Each is a run
 * record's `billed` object (lib/sync/run-records.ts) under a run id made of the generation, collected with the run
 * records a day later (lib/exec/tasks.ts housekeepRuns).
 */
import { liveMarkerKey, liveMarkerOf, liveMarkersPrefix } from "../../layout/live-markers.js";
import { runPrefix } from "../../layout/paths.js";
import type { StorageDriver } from "../../storage/types.js";
import { createOnly, keysOf, runIdFor } from "../../sync/run-records.js";
import type { LiveKey } from "./types.js";

const logged = (what: string) => (e: unknown) => console.error(`live sandbox marker not ${what}`, e instanceof Error ? e.message : String(e));

export const markLive = (storage: StorageDriver, key: LiveKey, generation: string): Promise<void> =>
  storage.put(liveMarkerKey(key.tenant, key.workspace, key.session, generation), "").then(() => {}, logged("written"));

export const unmarkLive = (storage: StorageDriver, key: LiveKey, generation: string): Promise<void> =>
  storage.delete(liveMarkerKey(key.tenant, key.workspace, key.session, generation)).then(() => {}, logged("deleted"));

/** The sessions of a workspace whose marker is younger than `maxAgeMs` (older ones name sandboxes past their maximum life): one listing a page of 1,000. */
export async function liveMarked(storage: StorageDriver, tenant: string, workspace: string, maxAgeMs: number, now = Date.now()): Promise<string[]> {
  const prefix = liveMarkersPrefix(tenant, workspace);
  const sessions = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await storage.list({ prefix, ...(cursor ? { cursor } : {}) });
    for (const o of page.objects) {
      const m = liveMarkerOf(o.key.slice(prefix.length));
      if (m && now - o.modified.getTime() <= maxAgeMs) sessions.add(m.session);
    }
    cursor = page.cursor;
  } while (cursor);
  return [...sessions];
}

/** What of a generation was billed: its end (time, and the write-back when the end's record carries it), or its final write-back alone. */
export type BilledPart = "end" | "write-back";

export async function billedMarkKey(key: LiveKey, generation: string, part: BilledPart): Promise<string> {
  const runId = await runIdFor(key.tenant, key.workspace, `live sandbox ${part}\0${key.session}\0${generation}`);
  return keysOf(runPrefix(key.tenant, key.workspace, runId)).billed;
}

/** Creates the mark; true when this caller is the first (it bills), false when it was there. Throws on a storage error. */
export const billOnce = async (storage: StorageDriver, key: LiveKey, generation: string, part: BilledPart): Promise<boolean> =>
  createOnly(storage, await billedMarkKey(key, generation, part), "", "text/plain");

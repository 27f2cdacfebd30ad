/**
 * A live sandbox's marker in its workspace (lib/layout/live-markers.ts: x/live/<session>/<generation>):
 * put beside its runner's start (run-live.ts startRunner), deleted when its end is accounted
 * (service.ts accountEnds). A workspace's delete lists them to end its live sandboxes at once
 * (lib/exec/workspace-gone.ts) without asking every session's coordinator. One PUT and one DELETE per
 * sandbox; neither fails a call (a marker missed is caught by the runner's idle poll, lib/sync/live-server.ts).
 * A marker still there once its coordinator holds neither the generation nor its end names an end nobody
 * accounted (a reset, a mark that could not be made): forgotten-end.ts bills it from the marker.
 *
 * And a generation's billed marks, create-only (If-None-Match: *): its end billed (service.ts accountEnds, or its
 * runner's `ended` after a coordinator reset) and its final write-back billed (final-write-back.ts). Each is a run
 * record's `billed` object (lib/sync/run-records.ts) under a run id made of the generation, collected with the run
 * records a day later (lib/exec/tasks.ts housekeepRuns).
 */
import { liveMarkerKey, liveMarkerOf, liveMarkersPrefix } from "../../layout/live-markers.js";
import { runPrefix } from "../../layout/paths.js";
import { randomId } from "../../shared/hash.js";
import type { StorageDriver } from "../../storage/types.js";
import { createOnly, keysOf, runIdFor } from "../../sync/run-records.js";
import type { LiveKey } from "./types.js";

const logged = (what: string) => (e: unknown) => console.error(`live sandbox marker not ${what}`, e instanceof Error ? e.message : String(e));

export const markLive = (storage: StorageDriver, key: LiveKey, generation: string): Promise<void> =>
  storage.put(liveMarkerKey(key.tenant, key.workspace, key.session, generation), "").then(() => {}, logged("written"));

export const unmarkLive = (storage: StorageDriver, key: LiveKey, generation: string): Promise<void> =>
  storage.delete(liveMarkerKey(key.tenant, key.workspace, key.session, generation)).then(() => {}, logged("deleted"));

/** A marker as listed: its session, its generation and when it was put (its runner's start). */
export interface LiveMarker {
  session: string;
  generation: string;
  started_at: number;
}

/** A workspace's markers, a page of 1,000 keys per LIST: every page, or at most `pages`. */
export async function listMarkers(storage: StorageDriver, tenant: string, workspace: string, pages = Infinity): Promise<LiveMarker[]> {
  const prefix = liveMarkersPrefix(tenant, workspace);
  const out: LiveMarker[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < pages; page++) {
    const r = await storage.list({ prefix, limit: 1000, ...(cursor ? { cursor } : {}) });
    for (const o of r.objects) {
      const m = liveMarkerOf(o.key.slice(prefix.length));
      if (m) out.push({ ...m, started_at: o.modified.getTime() });
    }
    cursor = r.cursor;
    if (!cursor) break;
  }
  return out;
}

/** What of a generation was billed: its end (time, and the write-back when the end's record carries it), or its final write-back alone. */
export type BilledPart = "end" | "write-back";

export async function billedMarkKey(key: LiveKey, generation: string, part: BilledPart): Promise<string> {
  const runId = await runIdFor(key.tenant, key.workspace, `live sandbox ${part}\0${key.session}\0${generation}`);
  return keysOf(runPrefix(key.tenant, key.workspace, runId)).billed;
}

/** Tries at making a mark, and the pause before each try after the first (a storage error is most often brief). */
const MARK_PAUSES_MS = [0, 100, 400];

/**
 * Creates the mark; true when this caller is the first (it bills), false when it was there. A try that fails
 * with a storage error is tried again (three tries): the mark holds this caller's own random token, so a
 * PUT that landed though its answer was lost is known for this caller's own at the next try (its body read
 * back), not taken for another's (which would bill the end nowhere). Throws when every try failed.
 */
export async function billOnce(storage: StorageDriver, key: LiveKey, generation: string, part: BilledPart): Promise<boolean> {
  const mark = await billedMarkKey(key, generation, part);
  const mine = randomId(16);
  let failed: unknown;
  for (const pause of MARK_PAUSES_MS) {
    if (failed !== undefined) await new Promise((r) => setTimeout(r, pause));
    try {
      if (await createOnly(storage, mark, mine, "text/plain")) return true;
      if (failed === undefined) return false;
      const found = await storage.get(mark);
      return found !== null && (await new Response(found.body).text()) === mine;
    } catch (e) {
      failed = e;
    }
  }
  throw failed;
}

/**
 * A live sandbox's marker in its workspace (lib/layout/live-markers.ts: x/live/<session>/<generation>):
 * put beside its runner's start (run-live.ts startRunner), deleted when its end is accounted
 * (service.ts accountEnds). A workspace's delete lists them to end its live sandboxes at once
 * (lib/exec/workspace-gone.ts) without asking every session's coordinator. One PUT and one DELETE per
 * sandbox; neither fails a call (a marker missed is caught by the runner's idle poll, lib/sync/live-server.ts).
 */
import { liveMarkerKey, liveMarkerOf, liveMarkersPrefix } from "../../layout/live-markers.js";
import type { StorageDriver } from "../../storage/types.js";
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

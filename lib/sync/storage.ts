/**
 * SyncClient over a StorageDriver and one workspace. Used in-process by tests and by the sync
 * endpoint (lib/sync/server.ts). Bundles for Workers.
 */
import { saveOutputLog } from "./output-logs.js";
import { Whiteouts } from "../layers/whiteout.js";
import { filesPrefix as filesPrefixOf, normalizeFilePath } from "../layout/paths.js";
import { isConditionFailed, type StorageDriver } from "../storage/types.js";
import { makeDirMarker, removeDirMarker } from "../workspace/markers.js";
import { readModes, updateModes } from "../layout/modes.js";
import { readBatchFile } from "./batch.js";
import { answerManifest, type ConditionalSync } from "./manifest.js";
import type { SyncClient, SyncEntry } from "./types.js";

export function storageSyncClient(driver: StorageDriver, tenant: string, workspace: string): SyncClient & ConditionalSync {
  const filesPrefix = filesPrefixOf(tenant, workspace);
  const key = (path: string) => filesPrefix + normalizeFilePath(path);
  return {
    manifestSince: (q) => answerManifest({ storage: driver, prefix: filesPrefix, layer: null, whiteouts: Whiteouts.of(driver, {}), modes: () => readModes(driver, tenant, workspace) }, q),
    async manifest() {
      const out: SyncEntry[] = [];
      let cursor: string | undefined;
      do {
        const page = await driver.list({ prefix: filesPrefix, ...(cursor ? { cursor } : {}) });
        for (const o of page.objects) out.push({ path: o.key.slice(filesPrefix.length), etag: o.etag, size: o.size });
        cursor = page.cursor;
      } while (cursor);
      return out;
    },
    async fetch(path) {
      const got = await driver.get(key(path));
      return got ? { body: got.body, etag: got.etag, size: got.size } : null;
    },
    async fetchMany(paths) {
      const files = await Promise.all(paths.map((p) => readBatchFile(driver, key(p), p)));
      return (async function* () {
        yield* files;
      })();
    },
    putOutputLog: (runId, body, size) => saveOutputLog(driver, tenant, workspace, runId, body, size),
    async put(path, body, opts) {
      try {
        const info = await driver.put(key(path), body, {
          ...(opts.ifMatch !== undefined ? { ifMatch: opts.ifMatch } : {}),
          ...(opts.ifNoneMatch ? { ifNoneMatch: opts.ifNoneMatch } : {}),
          ...(opts.size !== undefined ? { length: opts.size } : {}),
        });
        return { ok: true, etag: info.etag };
      } catch (e) {
        if (isConditionFailed(e)) return { ok: false, conflict: true };
        throw e;
      }
    },
    async delete(path, opts) {
      // StorageDriver.delete has no condition (R2 has none; S3's is recent): check, then
      // delete. The window between the two is a few milliseconds; see the README.
      const k = key(path);
      const head = await driver.head(k);
      if (!head) return { ok: true };
      if (head.etag !== opts.ifMatch) return { ok: false, conflict: true };
      await driver.delete(k);
      return { ok: true };
    },
    async mkdir(dir) {
      const r = await makeDirMarker(driver, tenant, workspace, normalizeFilePath(dir));
      return r.ok ? { ok: true, etag: r.etag } : { ok: false, conflict: true };
    },
    rmdir: async (dir, opts) => ((await removeDirMarker(driver, tenant, workspace, normalizeFilePath(dir), opts.ifMatch)) ? { ok: true } : { ok: false, conflict: true }),
    updateModes: (delta) => updateModes(driver, tenant, workspace, delta),
  };
}

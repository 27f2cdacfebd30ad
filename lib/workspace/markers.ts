/**
 * Making and removing explicit directories (zero-byte markers at "<dir>/", lib/layout/paths.ts), over a
 * driver: shared by the Workspace (tools, raw files route, sync server) and the in-process sync
 * client, so the rules live once. A marker is never made where a file is or below one.
 */
import { ancestorsOf, dirMarkerKey, fileKey } from "../layout/paths.js";
import { isConditionFailed, type StorageDriver } from "../storage/types.js";

export type MakeDirResult =
  | { ok: true; created: boolean; etag: string }
  /** A file has the path ("path") or a parent path ("parent"). */
  | { ok: false; file: string; at: "path" | "parent" }
  /** The marker was there at the create, and gone at the look that followed (a concurrent rmdir). */
  | { ok: false; gone: true };

/** Where a marker of `dir` may not be made: the file at its path or a parent path (one HEAD each, at once), or null. */
export async function markerPlace(driver: StorageDriver, tenant: string, workspace: string, dir: string): Promise<{ ok: false; file: string; at: "path" | "parent" } | null> {
  const places = [dir, ...ancestorsOf(dir)];
  const heads = await Promise.all(places.map((p) => driver.head(fileKey(tenant, workspace, p))));
  const i = heads.findIndex((h) => h !== null);
  return i >= 0 ? { ok: false, file: places[i]!, at: i === 0 ? "path" : "parent" } : null;
}

/** mkdir -p of one canonical directory (not the root): its ancestors are implied by the marker. */
export async function makeDirMarker(driver: StorageDriver, tenant: string, workspace: string, dir: string, opts: { placeChecked?: boolean } = {}): Promise<MakeDirResult> {
  if (!opts.placeChecked) {
    const taken = await markerPlace(driver, tenant, workspace, dir);
    if (taken) return taken;
  }
  const key = dirMarkerKey(tenant, workspace, dir);
  try {
    return { ok: true, created: true, etag: (await driver.put(key, new Uint8Array(0), { ifNoneMatch: "*", length: 0 })).etag };
  } catch (e) {
    if (!isConditionFailed(e)) throw e;
    const o = await driver.head(key);
    return o ? { ok: true, created: false, etag: o.etag } : { ok: false, gone: true };
  }
}

/** A marker to remove, and the version it must still be (null: whatever is there). */
export interface MarkerTarget {
  dir: string;
  etag: string | null;
}

/**
 * Removes directories' markers, each only if it is still the version given (null: whatever is
 * there), in one conditional delete of the driver. A marker already gone counts as removed (the
 * directory is not explicit any more, which is what the caller wanted); one that is there in
 * another version is refused and left as it is. Returns the refused directories, and those a
 * version was given for that were gone already (removed by another writer: this call freed nothing).
 */
export async function removeDirMarkers(driver: StorageDriver, tenant: string, workspace: string, targets: readonly MarkerTarget[]): Promise<{ refused: string[]; gone: string[] }> {
  if (targets.length === 0) return { refused: [], gone: [] };
  const keyOf = (dir: string) => dirMarkerKey(tenant, workspace, dir);
  try {
    await driver.delete(targets.map((t) => (t.etag === null ? keyOf(t.dir) : { key: keyOf(t.dir), ifMatch: t.etag })));
    return { refused: [], gone: [] };
  } catch (e) {
    if (!isConditionFailed(e)) throw e;
    const failed = new Set(e.keys);
    const candidates = targets.filter((t) => failed.has(keyOf(t.dir)));
    const still = await Promise.all(candidates.map((t) => driver.head(keyOf(t.dir))));
    return { refused: candidates.filter((_, i) => still[i] !== null).map((t) => t.dir), gone: candidates.filter((_, i) => still[i] === null).map((t) => t.dir) };
  }
}

/** Removes one directory's marker (rmdir): false when it is there in another version than `ifMatch`. */
export async function removeDirMarker(driver: StorageDriver, tenant: string, workspace: string, dir: string, ifMatch?: string): Promise<boolean> {
  return (await removeDirMarkers(driver, tenant, workspace, [{ dir, etag: ifMatch ?? null }])).refused.length === 0;
}

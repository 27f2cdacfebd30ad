/**
 * Making and removing explicit directories (zero-byte markers at "<dir>/", lib/paths.ts), over a
 * driver: shared by the Workspace (tools, raw files route, sync server) and the in-process sync
 * client, so the rules live once. A marker is never made where a file is or below one.
 */
import { ancestorsOf, dirMarkerKey, fileKey } from "../paths.js";
import { isConditionFailed, type StorageDriver } from "../storage/types.js";

export type MakeDirResult =
  | { ok: true; created: boolean; etag: string }
  /** A file has the path ("path") or a parent path ("parent"). */
  | { ok: false; file: string; at: "path" | "parent" }
  /** The marker was there at the create, and gone at the look that followed (a concurrent rmdir). */
  | { ok: false; gone: true };

/** mkdir -p of one canonical directory (not the root): its ancestors are implied by the marker. */
export async function makeDirMarker(driver: StorageDriver, tenant: string, workspace: string, dir: string, opts: { placeChecked?: boolean } = {}): Promise<MakeDirResult> {
  if (!opts.placeChecked) {
    const places = [dir, ...ancestorsOf(dir)];
    const heads = await Promise.all(places.map((p) => driver.head(fileKey(tenant, workspace, p))));
    const i = heads.findIndex((h) => h !== null);
    if (i >= 0) return { ok: false, file: places[i]!, at: i === 0 ? "path" : "parent" };
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

/**
 * Removes a directory's marker. `ifMatch`: only the version the caller saw (false when it
 * changed; true when it is already gone). StorageDriver.delete has no condition: check, then
 * delete (a window of milliseconds, as for files).
 */
export async function removeDirMarker(driver: StorageDriver, tenant: string, workspace: string, dir: string, ifMatch?: string): Promise<boolean> {
  const key = dirMarkerKey(tenant, workspace, dir);
  if (ifMatch !== undefined) {
    const o = await driver.head(key);
    if (!o) return true;
    if (o.etag !== ifMatch) return false;
  }
  await driver.delete(key);
  return true;
}

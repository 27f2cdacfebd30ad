/**
 * Zip needs random access (its central directory is at the end), so a zip body is first
 * copied, streamed, to one temporary object of the workspace's internal area and read back with
 * ranged GETs. Bound: the body's Content-Length, at most ArchiveLimits.maxArchiveBytes. The
 * object is deleted when the import ends, failed or not (an isolate killed mid-import leaves
 * it behind under x/import/, which deleting the workspace removes).
 */
import { randomId } from "../shared/hash.js";
import type { StorageDriver } from "../storage/types.js";
import type { RangeSource } from "./zip-reader.js";

export interface SpooledArchive extends RangeSource {
  dispose(): Promise<void>;
}

export type Spool = (body: ReadableStream<Uint8Array>, length: number) => Promise<SpooledArchive>;

/** Spools into `${internalPrefix}import/<random>.zip` of one workspace. */
export function storageSpool(driver: StorageDriver, internalPrefix: string): Spool {
  return async (body, length) => {
    const key = `${internalPrefix}import/${Date.now().toString(36)}-${randomId(12)}.zip`;
    const info = await driver.put(key, body, { length, ifNoneMatch: "*" });
    const get = async (offset: number, len: number) => {
      if (len === 0) return new ReadableStream<Uint8Array>({ start: (c) => c.close() });
      const r = await driver.get(key, { range: { offset, length: len } });
      if (!r) throw new Error("the spooled archive disappeared");
      return r.body;
    };
    return {
      size: info.size,
      stream: get,
      read: async (offset, len) => new Uint8Array(await new Response(await get(offset, len)).arrayBuffer()),
      dispose: () => driver.delete(key),
    };
  };
}

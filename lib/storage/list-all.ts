/** A whole listing of storage: every page, one LIST per 1,000 keys. */
import type { ObjectInfo, StorageDriver } from "./types.js";

/** Every object below `prefix` and, with a `delimiter`, every common prefix, over all pages of the listing. */
export async function listAll(storage: StorageDriver, prefix: string, delimiter?: string): Promise<{ objects: ObjectInfo[]; prefixes: string[] }> {
  const objects: ObjectInfo[] = [];
  const prefixes: string[] = [];
  let cursor: string | undefined;
  do {
    const r = await storage.list({ prefix, ...(delimiter ? { delimiter } : {}), ...(cursor ? { cursor } : {}) });
    objects.push(...r.objects);
    prefixes.push(...r.prefixes);
    cursor = r.cursor;
  } while (cursor);
  return { objects, prefixes };
}

/**
 * Which of some keys have an upper object (a file or a whiteout) right now, in one LIST (more
 * pages only when the upper layer has many keys between the smallest and largest asked for).
 * After an import or a checkpoint the upper layer is small, so this is one request that
 * answers "none of these changed since the lower layer".
 */
import type { ObjectInfo, StorageDriver } from "../storage/types.js";
import { compareKeys } from "../layout/key-order.js";
import type { Whiteouts } from "./whiteout.js";

function commonPrefix(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  // Never split a surrogate pair.
  if (i > 0 && i < a.length && a.charCodeAt(i - 1) >= 0xd800 && a.charCodeAt(i - 1) <= 0xdbff) i--;
  return a.slice(0, i);
}

/** The subset of `keys` that `inner` holds (any object at all: whiteouts count). */
export async function upperKeysAmong(inner: StorageDriver, keys: readonly string[]): Promise<Set<string>> {
  return new Set((await upperAmong(inner, keys)).keys());
}

/**
 * The objects `inner` holds at any of `keys` (whiteouts included), as listed; with `whiteouts`,
 * resolved so that `whiteouts.is` tells each (Whiteouts.resolve: a HEAD for a listing that cannot).
 */
export async function upperAmong(inner: StorageDriver, keys: readonly string[], whiteouts?: Whiteouts): Promise<Map<string, ObjectInfo>> {
  const found = await listedAmong(inner, keys);
  if (!whiteouts || !found.size) return found;
  return new Map((await whiteouts.resolve(inner, [...found.values()])).map((o) => [o.key, o]));
}

async function listedAmong(inner: StorageDriver, keys: readonly string[]): Promise<Map<string, ObjectInfo>> {
  const found = new Map<string, ObjectInfo>();
  if (!keys.length) return found;
  const asked = new Set(keys);
  const sorted = [...asked].sort(compareKeys);
  const min = sorted[0]!;
  const max = sorted[sorted.length - 1]!;
  const prefix = commonPrefix(min, max);
  // startAfter is exclusive: start just before `min` (its parent string), or at the prefix itself.
  const cut = min.length >= 2 && min.charCodeAt(min.length - 1) >= 0xdc00 && min.charCodeAt(min.length - 1) <= 0xdfff ? 2 : 1;
  const before = min.length - cut > prefix.length ? min.slice(0, -cut) : null;
  let cursor: string | undefined;
  do {
    const page = await inner.list({ prefix, ...(cursor ? { cursor } : before !== null ? { startAfter: before } : {}) });
    for (const o of page.objects) {
      if (compareKeys(o.key, max) > 0) return found;
      if (asked.has(o.key)) found.set(o.key, o);
    }
    cursor = page.cursor;
  } while (cursor);
  return found;
}

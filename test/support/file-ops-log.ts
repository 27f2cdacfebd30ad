/**
 * A storage driver over another that logs each put and delete of a workspace's files and directory
 * markers (keys under `…/w/<ws>/f/`) as `put <path>` / `delete <path>`: what the write-back tests
 * assert landed, and in which order.
 */
import type { StorageDriver } from "../../lib/storage/types.js";

const fileKey = (k: string) => /\/w\/[^/]+\/f\//.test(k);
const pathOf = (k: string) => k.replace(/^.*\/f\//, "");

export function loggingFileOps(inner: StorageDriver, into: string[]): StorageDriver {
  return {
    ...inner,
    name: "counting",
    put(k, b, o) {
      if (fileKey(k)) into.push(`put ${pathOf(k)}`);
      return inner.put(k, b, o);
    },
    delete(keys) {
      for (const t of Array.isArray(keys) ? keys : [keys]) {
        const k = typeof t === "string" ? t : t.key; // a conditional delete names its version
        if (fileKey(k)) into.push(`delete ${pathOf(k)}`);
      }
      return inner.delete(keys);
    },
  };
}

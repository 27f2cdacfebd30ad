/**
 * The files of a plain workspace (no lower layer): the storage as it is, with one check. A packed
 * write-back (commit-staged.ts) can give a plain workspace its first lower layer; a create-only
 * write whose request opened the workspace as plain just before that switch must not stand over
 * a file the switch made visible (both would be acknowledged, one hidden). So after a create-only
 * write of a file, the workspace record is read again (1 GET, as the layered driver does after a
 * create): if it now has a base holding the path, the write is undone (If-Match what it wrote)
 * and refused (ALREADY_EXISTS), exactly as the layered driver's own re-check does.
 */
import { ConditionFailedError, isConditionFailed, type ObjectInfo, type StorageDriver } from "../storage/types.js";
import type { Manifest } from "./manifest.js";

export interface PlainView {
  filesPrefix: string;
  /** The workspace's lower layer as the record says now (null: still plain). */
  currentBase(): Promise<Manifest | null>;
}

export function plainDriver(inner: StorageDriver, view: PlainView): StorageDriver {
  const fp = view.filesPrefix;
  return {
    name: inner.name,
    ...(inner.contentEtags ? { contentEtags: true } : {}),
    head: (key) => inner.head(key),
    get: (key, opts) => inner.get(key, opts),
    list: (opts) => inner.list(opts),
    delete: (keys) => inner.delete(keys),
    async put(key, body, opts = {}): Promise<ObjectInfo> {
      const written = await inner.put(key, body, opts);
      if (opts.ifNoneMatch !== "*" || !key.startsWith(fp) || key.endsWith("/")) return written;
      const base = await view.currentBase();
      if (!base?.find(key.slice(fp.length))) return written;
      await inner.delete([{ key, ifMatch: written.etag }]).catch((e: unknown) => {
        if (!isConditionFailed(e)) throw e;
      });
      throw new ConditionFailedError(key, "ifNoneMatch");
    },
  };
}

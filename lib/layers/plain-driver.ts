/**
 * The files of a plain workspace (no lower layer): the storage as it is, with one check. A packed
 * write-back (commit-staged.ts) can give a plain workspace its first lower layer; a create-only
 * write whose request opened the workspace as plain just before that switch must not stand over
 * a file the switch made visible (both would be acknowledged, one hidden). So after a create-only
 * write of a file, the workspace record is read again (1 GET, as the layered driver does after a
 * create): if it now has a base holding the path, the write is undone (If-Match what it wrote)
 * and refused (ALREADY_EXISTS), exactly as the layered driver's own re-check does.
 * A delete of files is re-checked the same way (1 GET): a seal (a checkpoint, or the automatic
 * seal before a bash run: auto-seal.ts) may have put the file into a new lower layer and removed
 * its upper object meanwhile, so the delete removed nothing visible. Each such delete is then
 * redone over the new layer (the layered driver: a whiteout, create-only), conditional on the
 * version the caller named (a refused one) or the one it removed (the lower version now showing);
 * a file a writer changed meanwhile stays and is refused. From then on this request's driver is
 * that layered view, so a HEAD after a refusal sees what is there. (A delete that landed before
 * the switch is kept deleted by the sealer: seal.ts settleSealed.)
 * A whiteout found by a HEAD or GET (a switch and a delete landed after this request read the
 * record) is a deleted file, never bytes: its body is the workspace's mark (whiteout.ts).
 */
import { ConditionFailedError, deleteTargets, isConditionFailed, type DeleteTarget, type ObjectInfo, type StorageDriver } from "../storage/types.js";
import type { LowerLookup } from "./layered-driver.js";
import type { Manifest } from "./manifest.js";
import { isWhiteoutHead } from "./whiteout.js";

export interface PlainView {
  filesPrefix: string;
  /** The workspace's lower layer as the record says now, and its merged view (null: still plain). */
  currentLayer(): Promise<{ manifest: Manifest; driver: StorageDriver & LowerLookup } | null>;
}

export function plainDriver(inner: StorageDriver, view: PlainView): StorageDriver {
  const fp = view.filesPrefix;
  /** The merged view, once a re-check found the workspace layered: every later call goes through it. */
  let moved: StorageDriver | null = null;
  return {
    name: inner.name,
    ...(inner.contentEtags ? { contentEtags: true } : {}),
    async head(key) {
      const o = await (moved ?? inner).head(key);
      return o && !isWhiteoutHead(o) ? o : null;
    },
    async get(key, opts) {
      const o = await (moved ?? inner).get(key, opts);
      if (!o || !isWhiteoutHead(o)) return o;
      await o.body.cancel().catch(() => {});
      return null;
    },
    list: (opts) => (moved ?? inner).list(opts),
    async delete(keys) {
      if (moved) return moved.delete(keys);
      const targets = deleteTargets(keys);
      const refused = new Set<string>();
      try {
        await inner.delete(keys);
      } catch (e) {
        if (!isConditionFailed(e)) throw e;
        for (const k of e.keys) refused.add(k);
      }
      const files = targets.filter((t) => t.key.startsWith(fp) && t.key.length > fp.length);
      const layer = files.length ? await view.currentLayer() : null;
      if (layer) {
        moved = layer.driver;
        const redo: DeleteTarget[] = [];
        for (const t of files) {
          const lower = layer.manifest.find(t.key.slice(fp.length));
          if (!lower) continue;
          // Refused: the version the caller named must be the one showing now; deleted: the one showing is what it removed.
          const ifMatch = refused.has(t.key) ? t.ifMatch : lower.etag;
          refused.delete(t.key);
          redo.push(ifMatch === undefined ? { key: t.key } : { key: t.key, ifMatch });
        }
        if (redo.length) {
          try {
            await layer.driver.delete(redo);
          } catch (e) {
            if (!isConditionFailed(e)) throw e;
            for (const k of e.keys) refused.add(k);
          }
        }
      }
      if (refused.size) throw new ConditionFailedError([...refused][0]!, "ifMatch", [...refused]);
    },
    async put(key, body, opts = {}): Promise<ObjectInfo> {
      if (moved) return moved.put(key, body, opts);
      const written = await inner.put(key, body, opts);
      if (opts.ifNoneMatch !== "*" || !key.startsWith(fp) || key.endsWith("/")) return written;
      const layer = await view.currentLayer();
      if (!layer?.manifest.find(key.slice(fp.length))) return written;
      moved = layer.driver;
      await inner.delete([{ key, ifMatch: written.etag }]).catch((e: unknown) => {
        if (!isConditionFailed(e)) throw e;
      });
      throw new ConditionFailedError(key, "ifNoneMatch");
    },
  };
}

/**
 * A plain workspace's record (meta.json) known to this isolate for a few seconds, used by a call that
 * proves a stale one harmless (issue #11 §4): `read` skips the guard's GET of meta.json.
 *
 * What meta.json holds and what may change it: the layer pointer (`base`, `seq`: checkpoint,
 * restore, import, a packed bash write-back, fork), the workspace's tools, and its existence
 * (delete). A stale pointer could make a read wrong (a file that moved into a new lower layer reads
 * as missing). So a known record is trusted only when
 * - it is PLAIN (no lower layer; a layered one is read as before), and
 * - the call's storage answers a GET of a file key with an object that is not a whiteout: the upper
 *   object wins over any lower layer, so the bytes are the file's whatever the pointer now says (a
 *   fresh meta.json is read beside the file today, unordered with it, and gives no more).
 * Anything else the call asks of its storage (a miss, a whiteout, a listing, a HEAD, any write)
 * throws StaleRecord before it is done; the route then reads meta.json and runs the call again.
 *
 * Invalidation: every put or delete of a meta.json through this isolate's storage forgets the record
 * (forgetOnWrite): a restore, checkpoint, tools change or delete made here is seen at once. One made
 * through another isolate is seen once the entry expires (ttl, 5 s), like a revoked API key: within
 * that time a call may still pass a tool list just narrowed, or read an upper file of a workspace
 * just deleted whose files are not swept yet. Keyed by the authenticated tenant and the path's id.
 */
import type { IsolateCache } from "../isolate-cache.js";
import { workspaceOfMetaKey } from "../paths.js";
import type { MetaRecord } from "../layers/open.js";
import { isWhiteout } from "../layers/whiteout.js";
import type { GetResult, StorageDriver } from "../storage/types.js";

export type KnownWorkspaces = IsolateCache<MetaRecord>;

export const knownWorkspaceKey = (tenant: string, ws: string) => `${tenant}/${ws}`;

/** The known record of a tenant's workspace, if this isolate read it within the TTL and it is plain. */
export function knownPlainRecord(known: KnownWorkspaces | undefined, tenant: string, ws: string): MetaRecord | undefined {
  const rec = known?.peek(knownWorkspaceKey(tenant, ws));
  return rec && !rec.meta.base ? rec : undefined;
}

/** Thrown by upperOnly: the call needs the current record. */
export class StaleRecord extends Error {
  constructor(what: string) {
    super(`known workspace record not enough for ${what}`);
  }
}

/** `storage`, except that a put or delete of a workspace record forgets that record from `known`. */
export function forgetOnWrite(storage: StorageDriver, known: KnownWorkspaces): StorageDriver {
  const forget = (key: string) => {
    const of = workspaceOfMetaKey(key);
    if (of) known.forget(knownWorkspaceKey(of.tenant, of.workspace));
  };
  return new Proxy(storage, {
    get(target, prop, receiver) {
      if (prop === "put") return (key: string, ...rest: unknown[]) => (forget(key), (target.put as (...a: unknown[]) => unknown).call(target, key, ...rest));
      if (prop === "delete")
        return (keys: Parameters<StorageDriver["delete"]>[0]) => {
          for (const k of typeof keys === "string" ? [keys] : keys) forget(typeof k === "string" ? k : k.key);
          return target.delete(keys);
        };
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/**
 * The storage of a call opened on a known plain record: a GET under `filesPrefix` that finds an
 * object other than a whiteout passes; every other operation throws StaleRecord without running.
 */
export function upperOnly(storage: StorageDriver, filesPrefix: string): StorageDriver {
  const refuse = (what: string) => () => Promise.reject(new StaleRecord(what));
  return {
    name: storage.name,
    head: refuse("head"),
    list: refuse("list"),
    put: refuse("put"),
    delete: refuse("delete"),
    async get(key, opts): Promise<GetResult | null> {
      if (!key.startsWith(filesPrefix)) throw new StaleRecord("get outside the files");
      const r = await storage.get(key, opts);
      if (r && !isWhiteout(r)) return r;
      await r?.body.cancel().catch(() => {});
      throw new StaleRecord(r ? "a whiteout" : "a miss");
    },
  };
}

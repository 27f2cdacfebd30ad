/**
 * A plain workspace's record (meta.json) known to this isolate for a few seconds, used by a call that
 * proves a stale one harmless (issue #11 §4): `read` skips the guard's GET of meta.json, and so do
 * write, edit, multi_edit and insert over a version the isolate holds (knownFiles below).
 *
 * What meta.json holds and what may change it: the layer pointer (`base`, `seq`: checkpoint,
 * restore, import, a packed bash write-back, fork), the workspace's tools, and its existence
 * (delete). A stale pointer could make a read wrong (a file that moved into a new lower layer reads
 * as missing). So a known record is trusted only when
 * - it is PLAIN (no lower layer; a layered one is read as before), and
 * - the call's storage answers a GET of a file key with an object that is not a whiteout: the upper
 *   object wins over any lower layer, so the bytes are the file's whatever the pointer now says (a
 *   fresh meta.json is read beside the file today, unordered with it, and gives no more).
 * Anything else the call asks of its storage (a miss, a whiteout, a listing, a HEAD, any write but
 * a change tool's If-Match one) throws StaleRecord before it is done; the route then reads
 * meta.json and runs the call again. The try is not the call: it leaves no audit entry (the run
 * again leaves the call's one, with the answer the caller gets: run-tool.ts CallAudit.runsAgain) and
 * no usage record (the route meters the call once, after its answer). A change tool's write If-Match the version it read is the
 * plain driver's own write: the upper object, which wins over any lower layer a record switched to
 * meanwhile would bring (a seal or restore that removes it does so only in the version it saw, and
 * reports one changed meanwhile: lib/layers/seal.ts, checkpoints.ts). Index upkeep after such a
 * call opens the workspace from its record then (Workspace.upkeepDriver).
 *
 * bash (Tool.onKnownRecord "command") runs on a known record as it is, plain or layered: the API
 * reads no file for it, and the runner reads the record (the layer pointer) itself before the command. The create
 * route puts the record it wrote here, so a workspace's first command needs no GET of it.
 *
 * Invalidation: every put or delete of a meta.json through this isolate's storage forgets the record
 * (forgetOnWrite): a restore, checkpoint, tools change or delete made here is seen at once. One made
 * through another isolate is seen once the entry expires (ttl, 5 s), like a revoked API key: within
 * that time a call may still pass a tool list just narrowed, or read an upper file of a workspace
 * just deleted whose files are not swept yet. Keyed by the authenticated tenant and the path's id.
 */
import type { IsolateCache } from "../../shared/isolate-cache.js";
import { workspaceOfMetaKey } from "../../layout/paths.js";
import type { MetaRecord } from "../../layers/open.js";
import { isWhiteoutHead } from "../../layers/whiteout.js";
import { ToolError } from "../../shared/errors.js";
import { isConditionFailed, type GetResult, type ObjectInfo, type StorageDriver } from "../../storage/types.js";
import type { VersionCache } from "../../workspace/version-cache.js";

export type KnownWorkspaces = IsolateCache<MetaRecord>;

export const knownWorkspaceKey = (tenant: string, ws: string) => `${tenant}/${ws}`;

/** The known record of a tenant's workspace, if this isolate read it within the TTL and it is plain. */
export function knownPlainRecord(known: KnownWorkspaces | undefined, tenant: string, ws: string): MetaRecord | undefined {
  const rec = known?.peek(knownWorkspaceKey(tenant, ws));
  return rec && !rec.meta.base ? rec : undefined;
}

/**
 * The known record of a tenant's workspace, plain or layered: for a route whose handler reads no file
 * through the record's layer pointer (a command: its runner reads the record itself before it runs;
 * BodyRule.knownLayered). What it takes of it, the workspace's existence and tool list, is what a
 * plain one gives, with the same TTL.
 */
export function knownAnyRecord(known: KnownWorkspaces | undefined, tenant: string, ws: string): MetaRecord | undefined {
  return known?.peek(knownWorkspaceKey(tenant, ws));
}

/** Thrown by knownFiles: the call needs the current record. */
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

/** What a call on a known record did through its files' storage (knownFiles). */
export interface KnownFilesState {
  /** A GET was answered from the isolate's versions (a change tool): what the call concluded before its write may be stale. */
  servedCached: boolean;
  /** A write settled the call: it landed, or another writer's version written during the call refused it. Never run again. */
  decided: boolean;
}

/**
 * How far before a call's start a version that refused its write still counts as written during
 * the call: S3's Last-Modified has whole seconds, and the storage's clock is not the isolate's. In
 * doubt the refusal stands (FILE_MODIFIED: the agent reads again) rather than the call running again
 * over a version a concurrent call just wrote.
 */
export const CLOCK_MARGIN_MS = 1000;

/**
 * The storage of a call opened on a known plain record: a GET under `filesPrefix` that finds an
 * object other than a whiteout passes; every other operation throws StaleRecord without running.
 *
 * With `versions` (a change tool: write, edit, multi_edit, insert; Tool.onKnownRecord "change") a
 * whole GET of a file the isolate holds (lib/workspace/version-cache.ts) is answered from there, and
 * a write If-Match goes through: it lands only over exactly the version the call read, which in a
 * plain workspace is the upper object, the file whatever the record now says (the plain driver does
 * the same write: lib/layers/plain-driver.ts). When it is refused, the version there now tells why
 * (one HEAD): written since the call began (`startedAt`, epoch ms; or up to CLOCK_MARGIN_MS before
 * it), it is a concurrent writer, and the refusal stands as for a call that had read the file
 * (FILE_MODIFIED: of N concurrent edits of one version one wins, the rest are refused, DESIGN
 * invariant 2); written earlier, the isolate's version was stale and StaleRecord has the call run
 * again on storage. Creates, unconditional writes, deletes, listings and other HEADs still throw
 * StaleRecord.
 *
 * The route (tools.ts runOnWorkspace) runs a call again after StaleRecord, and after any ToolError
 * once a GET was served from the versions, unless a write settled it (mayRunAgain).
 */
export function knownFiles(storage: StorageDriver, filesPrefix: string, versions?: VersionCache, startedAt = Date.now()): { storage: StorageDriver; state: KnownFilesState } {
  const state: KnownFilesState = { servedCached: false, decided: false };
  const refuse = (what: string) => () => Promise.reject(new StaleRecord(what));
  /** The version found after a refused write (the Workspace's FILE_MODIFIED names its etag). */
  let refusedOver: { key: string; now: ObjectInfo } | null = null;
  const files: StorageDriver = {
    name: storage.name,
    ...(storage.contentEtags ? { contentEtags: true } : {}),
    head: async (key) => {
      if (refusedOver?.key === key) return refusedOver.now;
      throw new StaleRecord("head");
    },
    list: refuse("list"),
    delete: refuse("delete"),
    async get(key, opts): Promise<GetResult | null> {
      if (!key.startsWith(filesPrefix)) throw new StaleRecord("get outside the files");
      const held = opts?.range ? undefined : versions?.peek(key);
      if (held) {
        state.servedCached = true;
        const copy = held.bytes.slice();
        const body = new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(copy), c.close()) });
        return { key, ...held.info, body, range: { offset: 0, length: copy.length } };
      }
      const r = await storage.get(key, opts);
      if (r && !isWhiteoutHead(r)) return r;
      await r?.body.cancel().catch(() => {});
      throw new StaleRecord(r ? "a whiteout" : "a miss");
    },
    async put(key, body, opts = {}) {
      if (!versions || opts.ifMatch === undefined || opts.ifNoneMatch || !key.startsWith(filesPrefix)) throw new StaleRecord("a write that is not If-Match a file read");
      try {
        const o = await storage.put(key, body, opts);
        state.decided = true;
        return o;
      } catch (e) {
        if (!isConditionFailed(e)) throw e;
        versions.forget(key);
        const now = await storage.head(key);
        if (!now || isWhiteoutHead(now) || now.modified.getTime() < startedAt - CLOCK_MARGIN_MS) throw new StaleRecord("a write over a stale version");
        state.decided = true;
        refusedOver = { key, now };
        throw e;
      }
    },
  };
  return { storage: files, state };
}

/** Whether a call on a known record that failed with `e` runs again on a fresh record (never once a write settled it). */
export function mayRunAgain(state: KnownFilesState, e: unknown): boolean {
  if (state.decided) return false;
  return e instanceof StaleRecord || (state.servedCached && e instanceof ToolError);
}

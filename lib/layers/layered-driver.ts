/**
 * The merged view of a layered workspace, as a StorageDriver: keys below the workspace's files
 * prefix see the upper layer (today's per-file objects) over the lower one (a manifest and its
 * packs); every other key passes straight through. Because the Workspace, the search index, the
 * sync API, export and transfer all read files through the driver their Workspace was opened
 * with (lib/layers/open.ts is the one place that opens it), none of them can miss the lower layer.
 *
 * Writes keep per-file conditional semantics:
 * - over an upper object: the native condition (If-Match its etag), as before;
 * - over a lower-only file: If-Match is checked against the manifest's etag (the base of a given
 *   seq never changes), then the upper object is created create-only, so of N concurrent writers
 *   exactly one wins; a create-only write where a whiteout stands replaces that whiteout If-Match;
 * - deleting a lower file puts a whiteout at its key the same way (create-only, or If-Match the
 *   upper version it replaces), with the workspace's mark (whiteout.ts): any bytes a tenant writes
 *   are a file, whatever they are.
 * A write that relied on the lower layer then re-reads the layer pointer (view.stillCurrent): if a
 * restore or checkpoint switched the base meanwhile, the write is undone (conditionally on what it
 * wrote) and refused (ConditionFailedError → FILE_MODIFIED / ALREADY_EXISTS), so nothing it did is
 * acknowledged against a base it did not check.
 */
import { packKey } from "../layout/paths.js";
import { ConditionFailedError, deleteTargets, isConditionFailed, type DeleteTarget, type GetResult, type ObjectInfo, type PutBody, type PutOptions, type StorageDriver, type WalkingDriver } from "../storage/types.js";
import type { Manifest } from "./manifest.js";
import { lowerInfo, mergedList, mergedWalk } from "./merge-list.js";
import { lowerReads, readMany, readPackRange, type BatchReader, type PackSource } from "./pack-reads.js";
import { upperAmong } from "./upper-range.js";
import type { Whiteouts } from "./whiteout.js";

export const hasReadMany = (d: StorageDriver): d is StorageDriver & BatchReader => typeof (d as Partial<BatchReader>).readMany === "function";

/** Where a key's lower-layer bytes live (undo references them instead of copying: lib/run/undo/). */
export interface LowerRef {
  etag: string;
  /** Pack id; null for an empty file. */
  pack: string | null;
  offset: number;
  size: number;
}
export interface LowerLookup {
  lowerRef(key: string): LowerRef | null;
}
export const hasLowerRef = (d: StorageDriver): d is StorageDriver & LowerLookup => typeof (d as Partial<LowerLookup>).lowerRef === "function";


export interface LayerView {
  tenant: string;
  filesPrefix: string;
  manifest: Manifest;
  /** How this workspace's whiteouts are told apart (whiteout.ts), from the record the view was opened with. */
  whiteouts: Whiteouts;
  /** The same, able to write one: the record gets its mark first if it has none (open.ts ensureWhiteoutMark). */
  markedWhiteouts(): Promise<Whiteouts>;
  /** Whether the workspace's layer pointer is still the one this view was opened with. */
  stillCurrent(): Promise<boolean>;
}

const emptyBody = () => new Response(new Uint8Array(0)).body!;

export function layeredDriver(inner: StorageDriver, view: LayerView): StorageDriver & BatchReader & LowerLookup & WalkingDriver {
  const fp = view.filesPrefix;
  const m = view.manifest;
  const wo = view.whiteouts;
  const isWhiteout = (o: ObjectInfo) => wo.is(o);
  const putWhiteout = async (key: string, cond: PutOptions) => (await view.markedWhiteouts()).put(inner, key, cond);
  const mine = (key: string) => key.startsWith(fp) && key.length > fp.length;
  const lowerOf = (key: string) => m.find(key.slice(fp.length));
  /** What the pack reads need (pack-reads.ts): the lower entry of one of this workspace's keys, a pack's range, a merged get. */
  const packs: PackSource = {
    lowerEntry: (key) => (mine(key) ? lowerOf(key) : undefined),
    packRange: (pack, offset, length) => readPackRange(inner, view.tenant, m, pack, offset, length),
    get: (key) => get(key),
  };

  /** After a write that relied on the lower layer: undo it and refuse when the base moved. */
  const confirm = async (key: string, written: ObjectInfo, previous: "none" | "whiteout", cond: "ifMatch" | "ifNoneMatch"): Promise<ObjectInfo> => {
    if (await view.stillCurrent()) return written;
    try {
      if (previous === "whiteout") await putWhiteout(key, { ifMatch: written.etag });
      else await inner.delete([{ key, ifMatch: written.etag }]);
    } catch (e) {
      if (!isConditionFailed(e)) throw e;
    }
    throw new ConditionFailedError(key, cond);
  };

  async function put(key: string, body: PutBody, opts: PutOptions = {}): Promise<ObjectInfo> {
    if (!mine(key)) return inner.put(key, body, opts);
    if (opts.ifMatch === undefined && opts.ifNoneMatch !== "*") return inner.put(key, body, opts);
    const lower = lowerOf(key);
    const bytesInHand = !(body instanceof ReadableStream);
    if (opts.ifMatch !== undefined) {
      // No lower entry: only an upper object can match, the native condition decides alone.
      if (!lower) return inner.put(key, body, opts);
      // An upper object with that etag: the native condition decides (bytes, and the lower etag differs: try it first).
      if (bytesInHand && lower.etag !== opts.ifMatch) {
        try {
          return await inner.put(key, body, opts);
        } catch (e) {
          if (!isConditionFailed(e)) throw e;
        }
      }
      const u = await inner.head(key);
      if (u && !isWhiteout(u)) {
        // An upper object decides alone. Its etag may be the lower one's (the same bytes written
        // back): then the native condition was not tried yet, and must be.
        if (bytesInHand && lower.etag !== opts.ifMatch) throw new ConditionFailedError(key, "ifMatch");
        return inner.put(key, body, opts);
      }
      if (u || !lower || lower.etag !== opts.ifMatch) throw new ConditionFailedError(key, "ifMatch");
      const { ifMatch: _, ...rest } = opts;
      let written: ObjectInfo;
      try {
        written = await inner.put(key, body, { ...rest, ifNoneMatch: "*" });
      } catch (e) {
        if (isConditionFailed(e)) throw new ConditionFailedError(key, "ifMatch");
        throw e;
      }
      return confirm(key, written, "none", "ifMatch");
    }
    // Create-only: refused where the merged view has the path.
    const u = bytesInHand && !lower ? null : await inner.head(key);
    if (u && !isWhiteout(u)) throw new ConditionFailedError(key, "ifNoneMatch");
    if (!u && lower) throw new ConditionFailedError(key, "ifNoneMatch");
    let written: ObjectInfo;
    let previous: "none" | "whiteout" = u ? "whiteout" : "none";
    try {
      written = await inner.put(key, body, u ? { ...opts, ifNoneMatch: undefined, ifMatch: u.etag } : opts);
    } catch (e) {
      if (!isConditionFailed(e) || !bytesInHand || u) throw new ConditionFailedError(key, "ifNoneMatch");
      // Bytes tried blind: a stale whiteout (no lower entry) may stand there; replace only that.
      const w = await inner.head(key);
      if (!w || !isWhiteout(w)) throw new ConditionFailedError(key, "ifNoneMatch");
      written = await inner.put(key, body, { ...opts, ifNoneMatch: undefined, ifMatch: w.etag });
      previous = "whiteout";
    }
    return confirm(key, written, previous, "ifNoneMatch");
  }

  /** Deletes one key of the files prefix whose path the lower layer has: a whiteout. false = refused. */
  async function whiteOut(t: DeleteTarget, lowerEtag: string): Promise<boolean> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const u = await inner.head(t.key);
      if (u && isWhiteout(u)) return t.ifMatch === undefined;
      if (t.ifMatch !== undefined && (u ? u.etag !== t.ifMatch : lowerEtag !== t.ifMatch)) return false;
      try {
        const w = await putWhiteout(t.key, u ? { ifMatch: u.etag } : { ifNoneMatch: "*" });
        if (u) return true; // the upper version asked for is gone, whatever the base
        if (await view.stillCurrent()) return true;
        await inner.delete([{ key: t.key, ifMatch: w.etag }]).catch((e: unknown) => {
          if (!isConditionFailed(e)) throw e;
        });
        return false;
      } catch (e) {
        if (!isConditionFailed(e)) throw e;
        if (t.ifMatch !== undefined) return false;
      }
    }
    return false;
  }

  async function stillLower(items: readonly { key: string; etag: string }[]): Promise<(number | null)[]> {
    const lower = items.map((it) => (mine(it.key) ? lowerOf(it.key) : undefined));
    const candidates = items.filter((it, i) => lower[i]?.etag === it.etag).map((it) => it.key);
    const upper = await upperAmong(inner, candidates, wo);
    // An upper object with the lower entry's etag holds the same bytes (a sealed object not yet removed: auto-seal.ts).
    return items.map((it, i) => {
      const u = upper.get(it.key);
      return lower[i]?.etag === it.etag && (!u || (u.etag === it.etag && !isWhiteout(u))) ? lower[i]!.size : null;
    });
  }

  async function get(key: string, opts?: { range?: { offset: number; length?: number } }): Promise<GetResult | null> {
    if (!mine(key)) return inner.get(key, opts);
    const u = await inner.get(key, opts);
    if (u) {
      if (!isWhiteout(u)) return u;
      await u.body.cancel();
      return null;
    }
    const e = lowerOf(key);
    if (!e) return null;
    const offset = Math.min(opts?.range?.offset ?? 0, e.size);
    const end = opts?.range?.length === undefined ? e.size : Math.min(e.size, offset + opts.range.length);
    const info = lowerInfo(fp, e);
    if (end <= offset || e.pack < 0) return { ...info, body: emptyBody(), range: { offset, length: 0 } };
    const r = await inner.get(packKey(view.tenant, m.packs[e.pack]!), { range: { offset: e.offset + offset, length: end - offset } });
    if (!r) throw new Error(`Pack ${m.packs[e.pack]} of manifest ${m.id} is missing`); // streamed: not readPackRange
    return { ...info, body: r.body, range: { offset, length: end - offset } };
  }

  return {
    name: `${inner.name}+layers`,
    ...(inner.contentEtags ? { contentEtags: true } : {}),
    async head(key) {
      if (!mine(key)) return inner.head(key);
      const u = await inner.head(key);
      if (u) return isWhiteout(u) ? null : u;
      const e = lowerOf(key);
      return e ? lowerInfo(fp, e) : null;
    },
    get,
    readMany: (items) => readMany(packs, items),
    lowerReads: (items, maxSpan) => lowerReads(packs, items, maxSpan),
    lowerRef(key) {
      const e = mine(key) ? lowerOf(key) : undefined;
      if (!e || e.path.endsWith("/")) return null;
      return { etag: e.etag, pack: e.pack < 0 || e.size === 0 ? null : m.packs[e.pack]!, offset: e.offset, size: e.size };
    },
    stillLower,
    put,
    async delete(keys) {
      const plain: DeleteTarget[] = [];
      const layered: { t: DeleteTarget; etag: string }[] = [];
      for (const t of deleteTargets(keys)) {
        const e = mine(t.key) ? lowerOf(t.key) : undefined;
        if (e) layered.push({ t, etag: e.etag });
        else plain.push(t);
      }
      const refused: string[] = [];
      try {
        if (plain.length) await inner.delete(plain);
      } catch (e) {
        if (!isConditionFailed(e)) throw e;
        refused.push(...e.keys);
      }
      // A base switched meanwhile may hold these paths: the delete did not make them go.
      const plainFiles = plain.filter((t) => mine(t.key) && !refused.includes(t.key));
      if (plainFiles.length && !(await view.stillCurrent())) refused.push(...plainFiles.map((t) => t.key));
      for (let i = 0; i < layered.length; i += 16) {
        const done = await Promise.all(layered.slice(i, i + 16).map((x) => whiteOut(x.t, x.etag)));
        done.forEach((ok, j) => ok || refused.push(layered[i + j]!.t.key));
      }
      if (refused.length) throw new ConditionFailedError(refused[0]!, "ifMatch", refused);
    },
    list(opts) {
      return opts.prefix.startsWith(fp) ? mergedList(inner, m, fp, opts, wo) : inner.list(opts);
    },
    walk(prefix) {
      if (prefix.startsWith(fp)) return mergedWalk(inner, m, fp, prefix, wo);
      throw new Error(`walk: ${prefix} is not below this workspace's files`);
    },
  };
}

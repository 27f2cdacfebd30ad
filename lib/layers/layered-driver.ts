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
 *   upper version it replaces).
 * A write that relied on the lower layer then re-reads the layer pointer (view.stillCurrent): if a
 * restore or checkpoint switched the base meanwhile, the write is undone (conditionally on what it
 * wrote) and refused (ConditionFailedError → FILE_MODIFIED / ALREADY_EXISTS), so nothing it did is
 * acknowledged against a base it did not check.
 */
import { ToolError } from "../errors.js";
import { packKey } from "../paths.js";
import { ConditionFailedError, deleteTargets, isConditionFailed, type DeleteTarget, type GetResult, type ObjectInfo, type PutBody, type PutOptions, type StorageDriver } from "../storage/types.js";
import type { Manifest, ManifestEntry } from "./manifest.js";
import { lowerInfo, mergedList } from "./merge-list.js";
import { upperKeysAmong } from "./upper-range.js";
import { isWhiteout, WHITEOUT_BODY, WHITEOUT_CONTENT_TYPE, WHITEOUT_SIZE } from "./whiteout.js";

/**
 * Reads many small files at once: those whose listed etag is the lower layer's come from their
 * packs in a few coalesced range reads; the rest are read one by one. (Export, the runner's cold start.)
 */
export interface BatchReader {
  readMany(items: readonly { key: string; etag: string }[]): Promise<(Uint8Array | null)[]>;
  /**
   * For each item, the size of its lower entry when the file is still at that version: no upper
   * object (file or whiteout) at its key and the manifest's etag is the one given; else null.
   * One LIST of the upper layer over the items' key range (upper-range.ts), no read per file.
   */
  stillLower(items: readonly { key: string; etag: string }[]): Promise<(number | null)[]>;
  /**
   * The range reads that bring the items still at their lower version (the etag given is the
   * manifest's), coalescing runs of consecutive items of one pack whose bytes lie close together
   * into one read spanning at most `maxSpan` bytes. A null item, or one not at its lower version,
   * ends a run and is in no read (read it with get). Reads are in the order of their items.
   */
  lowerReads(items: readonly ({ key: string; etag: string } | null)[], maxSpan: number): LowerRead[];
}

/** One range read of lowerReads: the items it brings (indices, consecutive) and how many bytes it reads. */
export interface LowerRead {
  items: number[];
  bytes: number;
  /** The items' bytes, in the order of `items`. */
  read(): Promise<Uint8Array[]>;
}
export const hasReadMany = (d: StorageDriver): d is StorageDriver & BatchReader => typeof (d as Partial<BatchReader>).readMany === "function";

/** Where a key's lower-layer bytes live (undo references them instead of copying: lib/undo/). */
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

/** Ranges of one pack closer than this are read as one; one read spans at most RANGE_MAX bytes. */
const RANGE_GAP = 64 * 1024;
const RANGE_MAX = 8 * 1024 * 1024;

export interface LayerView {
  tenant: string;
  filesPrefix: string;
  manifest: Manifest;
  /** Whether the workspace's layer pointer is still the one this view was opened with. */
  stillCurrent(): Promise<boolean>;
}

const emptyBody = () => new Response(new Uint8Array(0)).body!;
const putWhiteout = (inner: StorageDriver, key: string, cond: PutOptions) => inner.put(key, WHITEOUT_BODY, { ...cond, contentType: WHITEOUT_CONTENT_TYPE, length: WHITEOUT_SIZE });

function refuseWhiteoutBytes(body: PutBody): void {
  const s = typeof body === "string" ? body : body instanceof Uint8Array && body.length === WHITEOUT_SIZE ? new TextDecoder().decode(body) : null;
  if (s === WHITEOUT_BODY) throw new ToolError("INVALID_ARGUMENT", "These 22 bytes are reserved (they mark deleted files in a layered workspace); write other content.");
}

export function layeredDriver(inner: StorageDriver, view: LayerView): StorageDriver & BatchReader & LowerLookup {
  const fp = view.filesPrefix;
  const m = view.manifest;
  const mine = (key: string) => key.startsWith(fp) && key.length > fp.length;
  const lowerOf = (key: string) => m.find(key.slice(fp.length));

  /** After a write that relied on the lower layer: undo it and refuse when the base moved. */
  const confirm = async (key: string, written: ObjectInfo, previous: "none" | "whiteout", cond: "ifMatch" | "ifNoneMatch"): Promise<ObjectInfo> => {
    if (await view.stillCurrent()) return written;
    try {
      if (previous === "whiteout") await putWhiteout(inner, key, { ifMatch: written.etag });
      else await inner.delete([{ key, ifMatch: written.etag }]);
    } catch (e) {
      if (!isConditionFailed(e)) throw e;
    }
    throw new ConditionFailedError(key, cond);
  };

  async function put(key: string, body: PutBody, opts: PutOptions = {}): Promise<ObjectInfo> {
    if (!mine(key)) return inner.put(key, body, opts);
    refuseWhiteoutBytes(body);
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
        const w = await putWhiteout(inner, t.key, u ? { ifMatch: u.etag } : { ifNoneMatch: "*" });
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

  async function readMany(items: readonly { key: string; etag: string }[]): Promise<(Uint8Array | null)[]> {
    const out: (Uint8Array | null)[] = new Array(items.length).fill(null);
    const byPack = new Map<number, { i: number; offset: number; size: number }[]>();
    const single: number[] = [];
    items.forEach((it, i) => {
      const e = mine(it.key) ? lowerOf(it.key) : undefined;
      if (!e || e.etag !== it.etag) return void single.push(i);
      if (e.pack < 0 || e.size === 0) return void (out[i] = new Uint8Array(0));
      const list = byPack.get(e.pack) ?? [];
      list.push({ i, offset: e.offset, size: e.size });
      byPack.set(e.pack, list);
    });
    const reads: Promise<void>[] = [];
    for (const [pack, list] of byPack) {
      list.sort((a, b) => a.offset - b.offset);
      for (let s = 0; s < list.length; ) {
        let e = s + 1;
        while (e < list.length && list[e]!.offset - (list[e - 1]!.offset + list[e - 1]!.size) <= RANGE_GAP && list[e]!.offset + list[e]!.size - list[s]!.offset <= RANGE_MAX) e++;
        const group = list.slice(s, e);
        const start = group[0]!.offset;
        const end = Math.max(...group.map((g) => g.offset + g.size));
        reads.push((async () => {
          const r = await inner.get(packKey(view.tenant, m.packs[pack]!), { range: { offset: start, length: end - start } });
          if (!r) throw new Error(`Pack ${m.packs[pack]} of manifest ${m.id} is missing`);
          const bytes = new Uint8Array(await new Response(r.body).arrayBuffer());
          for (const g of group) out[g.i] = bytes.slice(g.offset - start, g.offset - start + g.size);
        })());
        s = e;
      }
    }
    reads.push(...single.map(async (i) => {
      const r = await get(items[i]!.key);
      out[i] = r ? new Uint8Array(await new Response(r.body).arrayBuffer()) : null;
    }));
    await Promise.all(reads);
    return out;
  }

  function lowerReads(items: readonly ({ key: string; etag: string } | null)[], maxSpan: number): LowerRead[] {
    type Run = { items: number[]; entries: ManifestEntry[]; pack: number; start: number; end: number };
    const out: LowerRead[] = [];
    let run: Run | null = null;
    const flush = () => {
      if (!run) return;
      const r: Run = run;
      run = null;
      out.push({
        items: r.items,
        bytes: r.end - r.start,
        async read() {
          if (r.pack < 0) return r.entries.map(() => new Uint8Array(0));
          const got = await inner.get(packKey(view.tenant, m.packs[r.pack]!), { range: { offset: r.start, length: r.end - r.start } });
          if (!got) throw new Error(`Pack ${m.packs[r.pack]} of manifest ${m.id} is missing`);
          const bytes = new Uint8Array(await new Response(got.body).arrayBuffer());
          return r.entries.map((e) => (e.pack < 0 || e.size === 0 ? new Uint8Array(0) : bytes.subarray(e.offset - r.start, e.offset - r.start + e.size)));
        },
      });
    };
    items.forEach((it, i) => {
      const e = it && mine(it.key) ? lowerOf(it.key) : undefined;
      if (!e || e.etag !== it!.etag || e.path.endsWith("/")) return flush();
      const bytes = e.pack >= 0 && e.size > 0;
      if (bytes && run && run.pack >= 0) {
        const start = Math.min(run.start, e.offset);
        const end = Math.max(run.end, e.offset + e.size);
        if (run.pack !== e.pack || e.offset > run.end + RANGE_GAP || e.offset + e.size < run.start - RANGE_GAP || end - start > maxSpan) flush();
      }
      run ??= { items: [], entries: [], pack: -1, start: 0, end: 0 };
      if (bytes && run.pack < 0) Object.assign(run, { pack: e.pack, start: e.offset, end: e.offset + e.size });
      else if (bytes) Object.assign(run, { start: Math.min(run.start, e.offset), end: Math.max(run.end, e.offset + e.size) });
      run.items.push(i);
      run.entries.push(e);
    });
    flush();
    return out;
  }

  async function stillLower(items: readonly { key: string; etag: string }[]): Promise<(number | null)[]> {
    const lower = items.map((it) => (mine(it.key) ? lowerOf(it.key) : undefined));
    const candidates = items.filter((it, i) => lower[i]?.etag === it.etag).map((it) => it.key);
    const upper = await upperKeysAmong(inner, candidates);
    return items.map((it, i) => (lower[i]?.etag === it.etag && !upper.has(it.key) ? lower[i]!.size : null));
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
    if (!r) throw new Error(`Pack ${m.packs[e.pack]} of manifest ${m.id} is missing`);
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
    readMany,
    lowerReads,
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
      return opts.prefix.startsWith(fp) ? mergedList(inner, m, fp, opts) : inner.list(opts);
    },
  };
}

/**
 * Reading many small files of a layered workspace at once (layered-driver.ts is the merged view
 * these belong to): files still at their lower version come from their packs in a few coalesced
 * range reads, the rest one by one through the merged view. Export and the runner's cold start
 * use them.
 */
import { packKey } from "../layout/paths.js";
import type { GetResult, StorageDriver } from "../storage/types.js";
import type { Manifest, ManifestEntry } from "./manifest.js";

/**
 * Reads many small files at once: those whose listed etag is the lower layer's come from their
 * packs in a few coalesced range reads; the rest are read one by one. (Export, the runner's cold start.)
 */
export interface BatchReader {
  readMany(items: readonly { key: string; etag: string }[]): Promise<(Uint8Array | null)[]>;
  /**
   * For each item, the size of its lower entry when the file is still at that version: the
   * manifest's etag is the one given, and no upper object at its key (a whiteout, another
   * version) or only one with that same etag (the same bytes); else null.
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

/** What the reads need of the merged view. */
export interface PackSource {
  /** The lower entry of a key of the workspace's files, or undefined. */
  lowerEntry(key: string): ManifestEntry | undefined;
  /** Bytes [offset, offset + length) of the manifest's pack number `pack`. */
  packRange(pack: number, offset: number, length: number): Promise<Uint8Array>;
  /** The merged view's get (upper over lower). */
  get(key: string): Promise<GetResult | null>;
}

/** Ranges of one pack closer than this are read as one; one read of readMany spans at most RANGE_MAX bytes. */
export const RANGE_GAP = 64 * 1024;
const RANGE_MAX = 8 * 1024 * 1024;

/** A range of a manifest's pack; a missing pack is an error (manifests are written after their packs). */
export async function readPackRange(inner: StorageDriver, tenant: string, m: Manifest, pack: number, offset: number, length: number): Promise<Uint8Array> {
  const r = await inner.get(packKey(tenant, m.packs[pack]!), { range: { offset, length } });
  if (!r) throw new Error(`Pack ${m.packs[pack]} of manifest ${m.id} is missing`);
  return new Uint8Array(await new Response(r.body).arrayBuffer());
}

export async function readMany(src: PackSource, items: readonly { key: string; etag: string }[]): Promise<(Uint8Array | null)[]> {
  const out: (Uint8Array | null)[] = new Array(items.length).fill(null);
  const byPack = new Map<number, { i: number; offset: number; size: number }[]>();
  const single: number[] = [];
  items.forEach((it, i) => {
    const e = src.lowerEntry(it.key);
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
        const bytes = await src.packRange(pack, start, end - start);
        for (const g of group) out[g.i] = bytes.slice(g.offset - start, g.offset - start + g.size);
      })());
      s = e;
    }
  }
  reads.push(...single.map(async (i) => {
    const r = await src.get(items[i]!.key);
    out[i] = r ? new Uint8Array(await new Response(r.body).arrayBuffer()) : null;
  }));
  await Promise.all(reads);
  return out;
}

export function lowerReads(src: PackSource, items: readonly ({ key: string; etag: string } | null)[], maxSpan: number): LowerRead[] {
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
        const bytes = await src.packRange(r.pack, r.start, r.end - r.start);
        return r.entries.map((e) => (e.pack < 0 || e.size === 0 ? new Uint8Array(0) : bytes.subarray(e.offset - r.start, e.offset - r.start + e.size)));
      },
    });
  };
  items.forEach((it, i) => {
    const e = it ? src.lowerEntry(it.key) : undefined;
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

/**
 * The reading side of grep (grep.ts): candidates' contents in batches (packed files by coalesced
 * range reads of their segments, the rest directly), what a batch will cost in storage requests
 * before it is started, and the read-side compaction of small segments a search already holds.
 */
import type { SearchedWorkspace } from "./workspace-view.js";
import { coalesce, mapLimit, type Candidate, type Seg } from "./candidates.js";
import { MAX_SEGMENT, mergeSegments, tierOf } from "./indexer.js";
import type { IndexStore } from "./store.js";
import type { TrigramCollector } from "./trigrams.js";

/** Files read whole when at most this big; bigger ones are streamed. */
const WHOLE_MAX = 4 * 1024 * 1024;
/** Reads in flight. */
const CONCURRENCY = 6;
/** Ranges of one segment closer than this are read as one. */
const CONTENT_GAP = 64 * 1024;

/** With this many small segments read whole, a search merges them (it holds their bytes already). */
const COMPACT_SMALL = 16;

/**
 * Read-side compaction: writers merge small segments as they go, but a burst of writes can
 * leave many behind. A search has just read the small ones whole, so merging them costs two
 * writes and no reads.
 */
export async function compactSmall(store: IndexStore, collector: TrigramCollector, segs: Seg[]): Promise<void> {
  const small = segs.filter((s) => s.head.whole && tierOf(s.ref) >= 0).sort((a, b) => (a.ref.id < b.ref.id ? -1 : 1));
  if (small.length < COMPACT_SMALL || store.budget.left < 8) return;
  const inputs: Seg[] = [];
  let bytes = 0;
  for (const s of small) {
    if (inputs.length >= 2 && bytes + s.ref.contentBytes > MAX_SEGMENT) break;
    inputs.push(s);
    bytes += s.ref.contentBytes;
  }
  if (!(await store.tryLock("merge-read", 60_000))) return;
  try {
    await mergeSegments(store, collector, inputs.map((s) => s.ref), inputs.map((s) => s.head));
  } finally {
    await store.unlock("merge-read");
  }
}

/** Storage requests readBatch makes for these candidates. */
export function batchCost(batch: Candidate[]): number {
  const bySeg = new Map<Seg, { off: number; end: number }[]>();
  let n = 0;
  for (const c of batch) {
    if (!c.seg) {
      n++;
      continue;
    }
    if (c.seg.head.whole) continue;
    let l = bySeg.get(c.seg);
    if (!l) bySeg.set(c.seg, (l = []));
    l.push({ off: c.entry.off, end: c.entry.off + c.entry.len });
  }
  for (const l of bySeg.values()) n += coalesce(l, CONTENT_GAP).length;
  return n;
}

export type Got = { bytes: Uint8Array; etag: string } | null | "stream";

/** Contents of a batch: packed files by coalesced range reads, others directly. */
export async function readBatch(ws: SearchedWorkspace, store: IndexStore, batch: Candidate[]): Promise<Got[]> {
  const out = new Array<Got>(batch.length).fill(null);
  const bySeg = new Map<Seg, { i: number; off: number; end: number }[]>();
  const direct: number[] = [];
  batch.forEach((c, i) => {
    if (c.seg) {
      let l = bySeg.get(c.seg);
      if (!l) bySeg.set(c.seg, (l = []));
      l.push({ i, off: c.entry.off, end: c.entry.off + c.entry.len });
    } else if (c.file.size > WHOLE_MAX) out[i] = "stream";
    else direct.push(i);
  });
  const jobs: (() => Promise<void>)[] = [];
  for (const [seg, items] of bySeg) {
    for (const g of coalesce(items, CONTENT_GAP)) {
      jobs.push(async () => {
        const local = seg.head.whole ? seg.head.whole.subarray(seg.head.contentsStart + g.off, seg.head.contentsStart + g.end) : await store.read(seg.ref, { offset: seg.head.contentsStart + g.off, length: g.end - g.off });
        if (local && !seg.head.whole) ws.bytesRead += local.length;
        for (const it of g.items) {
          if (local) out[it.i] = { bytes: local.subarray(it.off - g.off, it.end - g.off), etag: batch[it.i]!.file.etag };
          else direct.push(it.i); // merged away meanwhile: read the file itself
        }
      });
    }
  }
  await mapLimit(jobs, CONCURRENCY, (j) => j());
  await mapLimit(direct, CONCURRENCY, async (i) => {
    const c = batch[i]!;
    store.budget.take("get");
    const r = await ws.get(c.file.path);
    out[i] = r ? { bytes: new Uint8Array(await new Response(r.body).arrayBuffer()), etag: r.etag } : null;
  });
  return out;
}

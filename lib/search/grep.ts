/**
 * grep over a workspace: the listing says which files exist (the truth), the index says
 * which of them can contain a match, the regex decides.
 *
 *   1. List the tree (skip rules applied) and the index segments, in parallel.
 *   2. Read each segment's file table and dictionary. A segment entry covers a file only
 *      when the listing shows the same path with the same etag: stale entries (files
 *      changed or deleted since) are ignored, never trusted.
 *   3. Per segment, evaluate the pattern's trigram query on the posting lists (only the
 *      rarest few trigrams of each AND are fetched): the candidates.
 *   4. Files no segment covers ("unindexed": written by something that bypassed the
 *      index upkeep, or whose upkeep failed) are candidates too, read directly.
 *   5. Candidates are searched newest first, in growing batches; packed contents are read
 *      with coalesced range requests. The search stops once the page is full.
 *   6. Unindexed files it read are written as a new segment, so the next search is cheap.
 *
 * Every storage request is counted against a budget (Workers: ~1,000 subrequests per
 * request). When the budget runs out before all candidates are searched, the result says
 * so and the agent calls again: each call indexes what it read, so calls converge.
 */
import type { Workspace } from "../workspace/workspace.js";
import { SkipReport } from "./ignore.js";
import { inputFromBytes, MAX_SEGMENT, mergeSegments, tierOf } from "./indexer.js";
import { scanTree, type Listed } from "./listing.js";
import { TextSearch, type Compiled, type LineMatch } from "./matcher.js";
import type { Query } from "./query.js";
import { buildSegment, decodePostings, FLAG_BINARY, FLAG_LARGE, type SegmentFile, type SegmentHead, type SegmentInput } from "./segment.js";
import { Budget, IndexStore, type SegmentRef } from "./store.js";
import { TrigramCollector } from "./trigrams.js";
import { looksBinary } from "../text.js";

export type GrepMode = "content" | "files_with_matches" | "count";

export interface GrepRequest {
  /** Directory searched ("" = workspace root). */
  root: string;
  /** When the search path is a file: that file alone. */
  rootFile: Listed | null;
  compiled: Compiled;
  /** glob / type filters on the file path. */
  filter: ((path: string) => boolean) | null;
  includeHidden: boolean;
  includeIgnored: boolean;
  mode: GrepMode;
  before: number;
  after: number;
  offset: number;
  limit: number;
}

export interface FileHits {
  file: string;
  modified: number;
  count: number;
  matches: LineMatch[];
}

export interface GrepStats {
  files_considered: number;
  files_indexed: number;
  files_unindexed: number;
  candidates: number;
  files_searched: number;
  segments: number;
  storage_reads: number;
  storage_lists: number;
  storage_writes: number;
  files_indexed_now: number;
}

export interface GrepOutcome {
  hits: FileHits[];
  /** Entries found: files, or matching lines in content mode. */
  entries: number;
  /** Every candidate was searched (so `entries` is the total). */
  complete: boolean;
  /** The search stopped because the request budget ran out (not because the page was full). */
  exhausted: boolean;
  /** Candidates left unsearched when exhausted. */
  unsearched: number;
  skipped: SkipReport;
  scanTruncated: boolean;
  stats: GrepStats;
}

/** Storage requests one grep may make (Workers allow ~1,000 subrequests per request on paid plans). */
export const DEFAULT_BUDGET = 800;
/** Kept free for writing what was indexed. */
const RESERVE = 12;
/** Files read whole when at most this big; bigger ones are streamed. */
const WHOLE_MAX = 4 * 1024 * 1024;
/** Files bigger than this are not searched (reported as too_large). */
export const MAX_SCAN_BYTES = 64 * 1024 * 1024;
/** Multiline patterns need the whole text in memory. */
const MULTILINE_MAX = 4 * 1024 * 1024;
/** With this few files to search, read them directly (the index would cost more). */
const DIRECT_BELOW = 12;
const CONCURRENCY = 6;
/** Out-of-line posting lists fetched per AND: the rarest few are enough to narrow. */
const RAREST = 3;
const POSTING_GAP = 16 * 1024;
const CONTENT_GAP = 64 * 1024;
const MAX_RANGE = 8 * 1024 * 1024;
const PERSIST_MIN_FILES = 4;

async function mapLimit<T, R>(items: T[], limit: number, fn: (t: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}

interface Seg {
  ref: SegmentRef;
  head: SegmentHead;
}

/**
 * A file to search: packed in a segment, or read directly (`entry` = its index entry when
 * the index knows it as too large to pack; `unindexed`: no segment covers it, so once read
 * it is worth indexing).
 */
type Candidate = { file: Listed; seg: Seg; entry: SegmentFile; unindexed: false } | { file: Listed; seg: null; entry: SegmentFile | null; unindexed: boolean };

// ---- the trigram query on one segment ----

type Node =
  | { op: "all" }
  | { op: "none" }
  | { op: "ids"; ids: number[] }
  | { op: "fetch"; off: number; end: number; ids?: number[] }
  | { op: "and" | "or"; of: Node[] };

function plan(q: Query, head: SegmentHead): Node {
  switch (q.op) {
    case "all":
    case "none":
      return q;
    case "tri": {
      const r = head.lookup(q.t);
      if (!r) return { op: "none" };
      if ("inline" in r) return { op: "ids", ids: decodePostings(r.inline) };
      return { op: "fetch", off: r.off, end: r.end };
    }
    case "and": {
      const of: Node[] = [];
      for (const x of q.of) {
        const n = plan(x, head);
        if (n.op === "none") return n;
        if (n.op !== "all") of.push(n);
      }
      // Fetch only the rarest out-of-line lists; the rest cannot narrow much further.
      const fetches = of.filter((n): n is Extract<Node, { op: "fetch" }> => n.op === "fetch").sort((a, b) => a.end - a.off - (b.end - b.off));
      const drop = new Set(fetches.slice(RAREST));
      const kept = of.filter((n) => !drop.has(n as never));
      return kept.length === 0 ? { op: "all" } : { op: "and", of: kept };
    }
    case "or": {
      const of: Node[] = [];
      for (const x of q.of) {
        const n = plan(x, head);
        if (n.op === "all") return n;
        if (n.op !== "none") of.push(n);
      }
      return of.length === 0 ? { op: "none" } : { op: "or", of };
    }
  }
}

function fetchLeaves(n: Node, out: Extract<Node, { op: "fetch" }>[] = []): Extract<Node, { op: "fetch" }>[] {
  if (n.op === "fetch") out.push(n);
  else if (n.op === "and" || n.op === "or") for (const x of n.of) fetchLeaves(x, out);
  return out;
}

function evaluate(n: Node, size: number): Uint8Array {
  const bits = new Uint8Array(size);
  switch (n.op) {
    case "all":
      bits.fill(1);
      return bits;
    case "none":
      return bits;
    case "ids":
    case "fetch":
      for (const id of n.ids ?? []) if (id < size) bits[id] = 1;
      return bits;
    case "and": {
      bits.fill(1);
      for (const x of n.of) {
        const b = evaluate(x, size);
        for (let i = 0; i < size; i++) bits[i]! &= b[i]!;
      }
      return bits;
    }
    case "or": {
      for (const x of n.of) {
        const b = evaluate(x, size);
        for (let i = 0; i < size; i++) bits[i]! |= b[i]!;
      }
      return bits;
    }
  }
}

/** Coalesces [off, end) ranges that lie close together. */
function coalesce<T extends { off: number; end: number }>(items: T[], gap: number): { off: number; end: number; items: T[] }[] {
  const sorted = [...items].sort((a, b) => a.off - b.off);
  const out: { off: number; end: number; items: T[] }[] = [];
  for (const it of sorted) {
    const last = out[out.length - 1];
    if (last && it.off - last.end <= gap && Math.max(last.end, it.end) - last.off <= MAX_RANGE) {
      last.end = Math.max(last.end, it.end);
      last.items.push(it);
    } else out.push({ off: it.off, end: it.end, items: [it] });
  }
  return out;
}

/** Candidate files of one segment among the entries it covers. */
async function segmentCandidates(store: IndexStore, seg: Seg, q: Query, covered: number[]): Promise<Set<number>> {
  const root = plan(q, seg.head);
  const leaves = fetchLeaves(root);
  if (leaves.length) {
    const groups = coalesce(leaves, POSTING_GAP);
    await Promise.all(
      groups.map(async (g) => {
        const bytes = seg.head.whole
          ? seg.head.postingBytes(g.off, g.end)
          : await store.read(seg.ref, { offset: seg.head.postingsStart + g.off, length: g.end - g.off });
        // A segment deleted meanwhile (merged away): every covered file stays a candidate.
        for (const leaf of g.items) leaf.ids = bytes ? decodePostings(bytes.subarray(leaf.off - g.off, leaf.end - g.off)) : covered;
      }),
    );
  }
  const bits = evaluate(root, seg.head.files.length);
  return new Set(covered.filter((i) => bits[i] === 1));
}

// ---- the search ----

export async function grep(ws: Workspace, req: GrepRequest, budget: Budget = new Budget(DEFAULT_BUDGET)): Promise<GrepOutcome> {
  const store = new IndexStore(ws.driver, ws.tenant, ws.id, budget);
  const stats: GrepStats = { files_considered: 0, files_indexed: 0, files_unindexed: 0, candidates: 0, files_searched: 0, segments: 0, storage_reads: 0, storage_lists: 0, storage_writes: 0, files_indexed_now: 0 };
  let skipped = new SkipReport();
  let scanTruncated = false;
  let candidates: Candidate[];
  let segs: Seg[] = [];

  if (req.rootFile) {
    stats.files_considered = 1;
    candidates = [{ file: req.rootFile, seg: null, entry: null, unindexed: false }];
  } else {
    const [scan, refs] = await Promise.all([
      scanTree(ws, store, budget, { root: req.root, includeHidden: req.includeHidden, includeIgnored: req.includeIgnored }),
      store.listSegments(),
    ]);
    skipped = scan.skipped;
    scanTruncated = scan.truncated;
    const files = req.filter ? scan.files.filter((f) => req.filter!(f.path)) : scan.files;
    stats.files_considered = files.length;
    if (files.length < DIRECT_BELOW) candidates = files.map((file) => ({ file, seg: null, entry: null, unindexed: false }));
    else ({ candidates, segs } = await indexCandidates(store, refs, files, req.compiled.query, skipped, stats));
  }
  stats.candidates = candidates.length;
  candidates.sort((a, b) => b.file.modified - a.file.modified || (a.file.path < b.file.path ? -1 : a.file.path > b.file.path ? 1 : 0));

  const need = req.offset + req.limit + 1;
  const hits: FileHits[] = [];
  let entries = 0;
  let next = 0;
  let exhausted = false;
  const persist: SegmentInput[] = [];
  let persistBytes = 0;
  const collector = new TrigramCollector();
  const flush = async () => {
    if (persist.length === 0) return;
    const batch = persist.splice(0);
    persistBytes = 0;
    await store.putSegment(buildSegment(batch, collector));
    stats.files_indexed_now += batch.length;
  };
  const remember = (input: SegmentInput) => {
    persist.push(input);
    persistBytes += input.content?.length ?? 0;
  };

  const searchText = (file: Listed, text: string): void => {
    const s = newSearch(req, need - entries);
    s.block(text);
    record(file, s);
  };
  const newSearch = (r: GrepRequest, left: number) =>
    new TextSearch(r.compiled, {
      before: r.mode === "content" ? r.before : 0,
      after: r.mode === "content" ? r.after : 0,
      maxMatches: r.mode === "content" ? left : r.mode === "files_with_matches" ? 1 : 1_000_000,
      collect: r.mode === "content",
    });
  const record = (file: Listed, s: TextSearch) => {
    stats.files_searched++;
    if (s.result.count === 0) return;
    hits.push({ file: file.path, modified: file.modified, count: s.result.count, matches: s.result.matches });
    entries += req.mode === "content" ? s.result.matches.length : 1;
  };
  const decoder = new TextDecoder();

  let batchBytes = 256 * 1024;
  while (next < candidates.length && entries < need) {
    // The next batch: growing, so an early page is cheap and a full scan takes few requests.
    let end = next;
    let bytes = 0;
    while (end < candidates.length && bytes < batchBytes && end - next < 4000) bytes += candidates[end++]!.file.size;
    // The longest prefix whose storage requests fit in what is left of the budget.
    let lo = 0;
    let hi = end - next;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (batchCost(candidates.slice(next, next + mid)) <= budget.left - RESERVE) lo = mid;
      else hi = mid - 1;
    }
    const batch = candidates.slice(next, next + lo);
    if (batch.length === 0) {
      exhausted = true;
      break;
    }
    batchBytes = Math.min(batchBytes * 4, 16 * 1024 * 1024);

    const contents = await readBatch(ws, store, batch);
    for (let i = 0; i < batch.length && entries < need; i++) {
      const c = batch[i]!;
      next++;
      const got = contents[i];
      if (got === "stream") {
        await streamSearch(ws, req, c.file, need - entries, skipped, budget, (s) => record(c.file, s), c.unindexed ? remember : null);
        continue;
      }
      if (!got) continue; // deleted meanwhile
      if (c.seg === null) {
        // Read directly: sniff, search, and remember it for the index.
        const input = inputFromBytes(c.file.path, got.etag, c.file.modified, got.bytes);
        if (c.unindexed) remember(input);
        if (input.flags & FLAG_BINARY) {
          skipped.add("binary", c.file.path);
          continue;
        }
        if (req.compiled.spec.multiline && got.bytes.length > MULTILINE_MAX) {
          skipped.add("too_large", c.file.path);
          continue;
        }
      }
      searchText(c.file, decoder.decode(got.bytes));
    }
    if (persistBytes >= MAX_SEGMENT) await flush();
  }
  next = Math.min(next, candidates.length);
  const complete = next >= candidates.length && !exhausted;
  if (persist.length >= PERSIST_MIN_FILES || persistBytes >= 256 * 1024 || (persist.length > 0 && stats.files_unindexed >= PERSIST_MIN_FILES)) {
    await flush().catch(() => undefined);
  }
  await compactSmall(store, collector, segs).catch(() => undefined);
  stats.storage_reads = budget.gets;
  stats.storage_lists = budget.lists;
  stats.storage_writes = budget.puts;
  return { hits, entries, complete, exhausted, unsearched: candidates.length - next, skipped, scanTruncated, stats };
}

/** Candidates through the index: covered files the query admits, and every uncovered file. */
async function indexCandidates(store: IndexStore, refs: SegmentRef[], files: Listed[], q: Query, skipped: SkipReport, stats: GrepStats): Promise<{ candidates: Candidate[]; segs: Seg[] }> {
  const live = new Map(files.map((f) => [f.path, f]));
  const heads = await mapLimit([...refs].reverse(), CONCURRENCY, async (ref) => {
    const head = await store.readHead(ref).catch(() => null);
    return head ? { ref, head } : null;
  });
  const covered = new Map<Seg, number[]>();
  const claimed = new Set<string>();
  for (const seg of heads) {
    if (!seg) continue;
    seg.head.files.forEach((f, i) => {
      const l = live.get(f.path);
      if (!l || l.etag !== f.etag || claimed.has(f.path)) return;
      claimed.add(f.path);
      let list = covered.get(seg);
      if (!list) covered.set(seg, (list = []));
      list.push(i);
    });
  }
  stats.segments = heads.filter(Boolean).length;
  stats.files_indexed = claimed.size;
  const out: Candidate[] = [];
  await mapLimit([...covered.entries()], CONCURRENCY, async ([seg, ids]) => {
    const text = ids.filter((i) => (seg.head.files[i]!.flags & (FLAG_BINARY | FLAG_LARGE)) === 0);
    for (const i of ids) {
      const f = seg.head.files[i]!;
      if (f.flags & FLAG_BINARY) skipped.add("binary", f.path);
      else if (f.flags & FLAG_LARGE) out.push({ file: live.get(f.path)!, seg: null, entry: f, unindexed: false });
    }
    if (text.length === 0) return;
    const admitted = q.op === "all" ? new Set(text) : await segmentCandidates(store, seg, q, text);
    for (const i of text) if (admitted.has(i)) out.push({ file: live.get(seg.head.files[i]!.path)!, seg, entry: seg.head.files[i]!, unindexed: false });
  });
  for (const f of files) {
    if (claimed.has(f.path)) continue;
    stats.files_unindexed++;
    out.push({ file: f, seg: null, entry: null, unindexed: true });
  }
  return { candidates: out, segs: heads.filter((h): h is Seg => h !== null) };
}

/** With this many small segments read whole, a search merges them (it holds their bytes already). */
const COMPACT_SMALL = 16;

/**
 * Read-side compaction: writers merge small segments as they go, but a burst of writes can
 * leave many behind. A search has just read the small ones whole, so merging them costs two
 * writes and no reads.
 */
async function compactSmall(store: IndexStore, collector: TrigramCollector, segs: Seg[]): Promise<void> {
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
function batchCost(batch: Candidate[]): number {
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

type Got = { bytes: Uint8Array; etag: string } | null | "stream";

/** Contents of a batch: packed files by coalesced range reads, others directly. */
async function readBatch(ws: Workspace, store: IndexStore, batch: Candidate[]): Promise<Got[]> {
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

/** Searches a big file as a stream of line blocks, never holding it whole. */
async function streamSearch(ws: Workspace, req: GrepRequest, file: Listed, left: number, skipped: SkipReport, budget: Budget, done: (s: TextSearch) => void, remember: ((i: SegmentInput) => void) | null): Promise<void> {
  if (file.size > MAX_SCAN_BYTES || req.compiled.spec.multiline) {
    skipped.add("too_large", file.path);
    return;
  }
  budget.take("get");
  const r = await ws.get(file.path);
  if (!r) return;
  const reader = r.body.getReader();
  const decoder = new TextDecoder();
  const s = new TextSearch(req.compiled, {
    before: req.mode === "content" ? req.before : 0,
    after: req.mode === "content" ? req.after : 0,
    maxMatches: req.mode === "content" ? left : req.mode === "files_with_matches" ? 1 : 1_000_000,
    collect: req.mode === "content",
  });
  let pending = "";
  let first = true;
  try {
    for (;;) {
      const { done: end, value } = await reader.read();
      if (end) break;
      if (first) {
        first = false;
        const binary = looksBinary(value.subarray(0, 8192), false);
        remember?.({ path: file.path, etag: r.etag, size: r.size, modified: file.modified, flags: FLAG_LARGE | (binary ? FLAG_BINARY : 0) });
        if (binary) {
          skipped.add("binary", file.path);
          await reader.cancel();
          return;
        }
      }
      pending += decoder.decode(value, { stream: true });
      if (pending.length >= 1 << 20) {
        const cut = pending.lastIndexOf("\n");
        if (cut >= 0) {
          s.block(pending.slice(0, cut + 1));
          pending = pending.slice(cut + 1);
        }
      }
      if (s.done) {
        await reader.cancel();
        break;
      }
    }
    pending += decoder.decode();
    if (!s.done) s.block(pending);
  } finally {
    reader.releaseLock();
  }
  done(s);
}

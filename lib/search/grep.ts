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
 * request), and the verification against a CPU budget (cpu-budget.ts). When either runs out
 * before all candidates are searched, the result says so with a cursor (the first unfinished
 * file, and where inside it): the agent calls again with it, and each call indexes what it
 * read, so calls converge. Every file goes through the one line splitter (line-splitter.ts):
 * time linear in the bytes read, memory bounded by a block or a long line's window.
 */
import type { DescribeProgress, ProgressReporter, SearchedWorkspace } from "./workspace-view.js";
import { indexCandidates, sortNewestFirst, type Candidate, type Seg } from "./candidates.js";
import { batchCost, compactSmall, readBatch } from "./grep-read.js";
import { CpuBudget } from "./cpu-budget.js";
import { readFrom, searchHeld, searchMultiline, searchStream, type FileCursor, type FileRun } from "./file-search.js";
import { SkipReport } from "./ignore.js";
import { inputFromBytes, MAX_SEGMENT } from "./indexer.js";
import { scanTree, type Listed } from "./listing.js";
import type { SearchOptions } from "./matcher.js";
import { buildSegment, FLAG_BINARY, FLAG_LARGE, type SegmentInput } from "./segment.js";
import { Budget, IndexStore } from "./store.js";
import { TrigramCollector } from "./trigrams.js";
import { looksBinary } from "../shared/text.js";
import type { FileHits, GrepCursor, GrepOutcome, GrepRequest, GrepStats } from "./grep-types.js";

/**
 * grep's progress stages. Listing events carry no `done` (the search stage's `done` counts files,
 * and a client's `done` must not go backwards); searching counts candidates in search order, so a
 * resumed search starts past the files earlier calls searched.
 */
export const GREP_LISTING: DescribeProgress = (n) => ({ message: `listing files: ${n} entries so far` });
const GREP_SEARCHING: DescribeProgress = (done, total) => ({ message: `searched ${done} of ${total} files`, done, total: total ?? done });

/** Storage requests one grep may make (Workers allow ~1,000 subrequests per request on paid plans). */
export const DEFAULT_BUDGET = 800;
/** Kept free for writing what was indexed. */
const RESERVE = 12;
/** Files bigger than this are not searched (reported as too_large). */
export const MAX_SCAN_BYTES = 64 * 1024 * 1024;
/** Multiline patterns need the whole text in memory. */
const MULTILINE_MAX = 4 * 1024 * 1024;
/** With this few files to search, read them directly (the index would cost more). */
const DIRECT_BELOW = 12;
const PERSIST_MIN_FILES = 4;

// ---- the search ----

export async function grep(ws: SearchedWorkspace, req: GrepRequest, budget: Budget = new Budget(DEFAULT_BUDGET), cpu: CpuBudget = new CpuBudget()): Promise<GrepOutcome> {
  const store = new IndexStore(ws.driver, ws.tenant, ws.id, budget, req.segmentCache);
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
      scanTree(ws, store, budget, { root: req.root, linkFilter: req.filter, includeHidden: req.includeHidden, includeIgnored: req.includeIgnored, cache: req.listingCache, ...(req.progress ? { onListed: (n: number) => req.progress!.update(n) } : {}) }),
      store.listSegments(),
    ]);
    skipped = scan.skipped;
    scanTruncated = scan.truncated;
    const files = req.filter ? scan.files.filter((f) => req.filter!(f.path)) : scan.files;
    stats.files_considered = files.length;
    if (files.length < DIRECT_BELOW) candidates = files.map((file) => ({ file, seg: null, entry: null, unindexed: false }));
    else ({ candidates, segs } = await indexCandidates(store, refs, files, req.compiled.query, skipped, stats, files === scan.files ? scan.walked : undefined));
  }
  stats.candidates = candidates.length;
  sortNewestFirst(candidates);

  // A resumed search starts at its cursor's file (and inside it, when the file is unchanged).
  const resume = req.resume ?? null;
  let next = resume ? candidates.findIndex((c) => c.file.modified < resume.modified || (c.file.modified === resume.modified && c.file.path >= resume.path)) : 0;
  if (next < 0) next = candidates.length;
  req.progress?.stage(GREP_SEARCHING);
  const startIn = (c: Candidate): FileCursor | null => {
    const f = resume?.file;
    return f && c.file.path === resume.path && c.file.modified === resume.modified && c.file.etag === f.etag ? f : null;
  };

  const base = resume?.entries ?? 0;
  const need = req.offset + req.limit + 1;
  const hits: FileHits[] = [];
  let entries = base;
  let stoppedBy: "storage" | "cpu" | null = null;
  let cursor: GrepCursor | null = null;
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

  const options = (): SearchOptions => ({
    before: req.mode === "content" ? req.before : 0,
    after: req.mode === "content" ? req.after : 0,
    maxMatches: req.mode === "content" ? need - entries : req.mode === "files_with_matches" ? 1 : 1_000_000,
    collect: req.mode === "content",
  });
  /** Records a file's result; a file stopped by the budget leaves the cursor (count mode reports it once done). */
  const record = (c: Candidate, run: FileRun) => {
    stats.files_searched++;
    const r = run.search.result;
    if (run.stopped) {
      cursor = { modified: c.file.modified, path: c.file.path, entries: 0, file: run.stopped };
      stoppedBy = "cpu";
      if (req.mode !== "content") return;
    }
    if (r.count === 0 || (req.mode === "content" && r.matches.length === 0)) return;
    hits.push({ file: c.file.path, modified: c.file.modified, count: r.count, matches: r.matches });
    entries += req.mode === "content" ? r.matches.length : 1;
  };
  const searchBytes = (c: Candidate, bytes: Uint8Array, etag: string, from: FileCursor | null) =>
    req.compiled.spec.multiline ? searchMultiline(bytes, etag, req.compiled, options(), cpu, from) : searchHeld(bytes, etag, req.compiled, options(), cpu, from);

  let batchBytes = 256 * 1024;
  outer: while (next < candidates.length && entries < need) {
    if (cpu.spent) {
      stoppedBy = "cpu";
      break;
    }
    // The next batch: growing, so an early page is cheap and a full scan takes few requests.
    let end = next;
    let bytes = 0;
    while (end < candidates.length && bytes < batchBytes && end - next < 4000) bytes += candidates[end++]!.file.size;
    // The longest prefix whose storage requests fit in what is left of the budget (mostly the whole batch).
    let lo = 0;
    let hi = end - next;
    if (batchCost(candidates.slice(next, end)) <= budget.left - RESERVE) lo = hi;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (batchCost(candidates.slice(next, next + mid)) <= budget.left - RESERVE) lo = mid;
      else hi = mid - 1;
    }
    const batch = candidates.slice(next, next + lo);
    if (batch.length === 0) {
      stoppedBy = "storage";
      break;
    }
    batchBytes = Math.min(batchBytes * 4, 16 * 1024 * 1024);

    const contents = await readBatch(ws, store, batch);
    for (let i = 0; i < batch.length && entries < need; i++) {
      const c = batch[i]!;
      if (cpu.spent) {
        stoppedBy = "cpu";
        break outer;
      }
      req.progress?.update(next, candidates.length);
      next++;
      const from = startIn(c);
      const got = contents[i];
      if (got === "stream") {
        const run = await streamFile(ws, req, options(), c, from, skipped, budget, cpu, c.unindexed ? remember : null);
        if (run) record(c, run);
        if (cursor) break outer;
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
      record(c, await searchBytes(c, got.bytes, got.etag, from));
      if (cursor) break outer;
    }
    if (persistBytes >= MAX_SEGMENT) await flush();
  }
  next = Math.min(next, candidates.length);
  req.progress?.update(next, candidates.length);
  if (stoppedBy && !cursor && next < candidates.length) {
    const c = candidates[next]!;
    cursor = { modified: c.file.modified, path: c.file.path, entries: 0 };
  }
  if (!cursor) stoppedBy = null;
  const resumeAt: GrepCursor | null = cursor ? { ...(cursor as GrepCursor), entries } : null;
  // A file stopped inside is not finished: it counts as unsearched.
  const unsearched = candidates.length - next + (resumeAt?.file ? 1 : 0);
  // A content page filled inside a file stopped collecting its matches there: more may follow.
  const complete = unsearched === 0 && stoppedBy === null && !(req.mode === "content" && entries >= need);
  if (persist.length >= PERSIST_MIN_FILES || persistBytes >= 256 * 1024 || (persist.length > 0 && stats.files_unindexed >= PERSIST_MIN_FILES)) {
    await flush().catch(() => undefined);
  }
  await compactSmall(store, collector, segs).catch(() => undefined);
  stats.storage_reads = budget.gets;
  stats.storage_lists = budget.lists;
  stats.storage_writes = budget.puts;
  return { hits, entries, complete, exhausted: stoppedBy !== null, stoppedBy, resume: resumeAt, base, unsearched, skipped, scanTruncated, stats };
}

/** Searches a big file as a stream (from the cursor's offset when resuming), never holding it whole. */
async function streamFile(ws: SearchedWorkspace, req: GrepRequest, o: SearchOptions, c: Candidate, from: FileCursor | null, skipped: SkipReport, budget: Budget, cpu: CpuBudget, remember: ((i: SegmentInput) => void) | null): Promise<FileRun | null> {
  const file = c.file;
  if (file.size > MAX_SCAN_BYTES || req.compiled.spec.multiline) {
    skipped.add("too_large", file.path);
    return null;
  }
  budget.take("get");
  const r = from ? await ws.get(file.path, { offset: readFrom(from) }) : await ws.get(file.path);
  if (!r) return null;
  return searchStream(r.body, r.etag, req.compiled, o, cpu, from, (first) => {
    if (from) return true; // sniffed (and remembered) by the call that started the file
    const binary = looksBinary(first.subarray(0, 8192), false);
    remember?.({ path: file.path, etag: r.etag, size: r.size, modified: file.modified, flags: FLAG_LARGE | (binary ? FLAG_BINARY : 0) });
    if (binary) skipped.add("binary", file.path);
    return !binary;
  });
}

/**
 * Which files a grep reads: the index's trigram query evaluated per segment (only the rarest
 * few posting lists of each AND are fetched), over the entries the listing confirms; files
 * no segment covers are candidates too.
 */
import type { SkipReport } from "./ignore.js";
import type { Listed } from "./listing.js";
import type { Query } from "./query.js";
import { decodePostings, FLAG_BINARY, FLAG_LARGE, type SegmentFile, type SegmentHead } from "./segment.js";
import type { IndexStore, SegmentRef } from "./store.js";
import type { CoverageSlot, IndexCoverage } from "./index-coverage.js";
import { newestFirstOrder } from "./newest-first.js";

const CONCURRENCY = 6;
/** Out-of-line posting lists fetched per AND: the rarest few are enough to narrow. */
const RAREST = 3;
const POSTING_GAP = 16 * 1024;
export const MAX_RANGE = 8 * 1024 * 1024;

export interface CandidateStats {
  segments: number;
  files_indexed: number;
  files_unindexed: number;
}

export async function mapLimit<T, R>(items: T[], limit: number, fn: (t: T, i: number) => Promise<R>): Promise<R[]> {
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

export interface Seg {
  ref: SegmentRef;
  head: SegmentHead;
}

/**
 * A file to search: packed in a segment, or read directly (`entry` = its index entry when
 * the index knows it as too large to pack; `unindexed`: no segment covers it, so once read
 * it is worth indexing).
 */
export type Candidate = { file: Listed; seg: Seg; entry: SegmentFile; unindexed: false } | { file: Listed; seg: null; entry: SegmentFile | null; unindexed: boolean };

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
export function coalesce<T extends { off: number; end: number }>(items: T[], gap: number): { off: number; end: number; items: T[] }[] {
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

/** Candidate files of one segment among the entries it covers: admitted[i] === 1 for entry i. */
async function segmentCandidates(store: IndexStore, seg: Seg, q: Query, covered: number[]): Promise<Uint8Array> {
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
  return evaluate(root, seg.head.files.length);
}

/** The entries of one segment that cover listed files: entry numbers, and the listed file's number beside each. */
interface Covered {
  seg: Seg;
  entries: number[];
  fileAt: number[];
}

function joinIndex(heads: readonly (Seg | null)[], files: readonly Listed[], segmentKeys: string): IndexCoverage {
  const at = new Map<string, number>();
  for (let k = 0; k < files.length; k++) at.set(files[k]!.path, k);
  const claimed = new Uint8Array(files.length);
  const covered: IndexCoverage["covered"] = [];
  let indexed = 0;
  heads.forEach((seg, h) => {
    if (!seg) return;
    const table = seg.head.files;
    const c = { at: h, entries: [] as number[], fileAt: [] as number[] };
    for (let i = 0; i < table.length; i++) {
      const f = table[i]!;
      const k = at.get(f.path);
      if (k === undefined || claimed[k] === 1 || files[k]!.etag !== f.etag) continue;
      claimed[k] = 1;
      c.entries.push(i);
      c.fileAt.push(k);
    }
    if (c.entries.length > 0) covered.push(c);
    indexed += c.entries.length;
  });
  return { segmentKeys, covered, claimed, indexed, order: filesNewestFirst(files) };
}

/**
 * Candidates through the index: covered files the query admits, and every uncovered file, newest
 * first then by path (sortNewestFirst's order). A file is covered by the newest segment holding its
 * path at the listed etag. `slot`: where the join of these very files with the index is kept.
 */
export async function indexCandidates(store: IndexStore, refs: SegmentRef[], files: Listed[], q: Query, skipped: SkipReport, stats: CandidateStats, slot?: CoverageSlot): Promise<{ candidates: Candidate[]; segs: Seg[] }> {
  const heads = await mapLimit([...refs].reverse(), CONCURRENCY, async (ref) => {
    const head = await store.readHead(ref).catch(() => null);
    return head ? { ref, head } : null;
  });
  // Kept only when every segment was read: a segment gone meanwhile (merged away) changes the join.
  const segmentKeys = heads.every(Boolean) ? heads.map((h) => h!.ref.key).join("\n") : null;
  const kept = slot?.coverage;
  let join: IndexCoverage;
  if (segmentKeys !== null && kept?.segmentKeys === segmentKeys) join = kept;
  else {
    join = joinIndex(heads, files, segmentKeys ?? "");
    if (slot && segmentKeys !== null) slot.coverage = join;
  }
  const { claimed, order } = join;
  const covered: Covered[] = join.covered.map((c) => ({ seg: heads[c.at]!, entries: c.entries, fileAt: c.fileAt }));
  stats.files_indexed += join.indexed;
  stats.segments = heads.filter(Boolean).length;
  const slots = new Array<Candidate | undefined>(files.length);
  await mapLimit(covered, CONCURRENCY, async ({ seg, entries, fileAt }) => {
    const text: number[] = [];
    for (let j = 0; j < entries.length; j++) {
      const f = seg.head.files[entries[j]!]!;
      if (f.flags & FLAG_BINARY) skipped.add("binary", f.path);
      else if (f.flags & FLAG_LARGE) slots[fileAt[j]!] = { file: files[fileAt[j]!]!, seg: null, entry: f, unindexed: false };
      else text.push(j);
    }
    if (text.length === 0) return;
    const admitted = q.op === "all" ? null : await segmentCandidates(store, seg, q, text.map((j) => entries[j]!));
    for (const j of text) {
      const i = entries[j]!;
      if (admitted === null || admitted[i] === 1) slots[fileAt[j]!] = { file: files[fileAt[j]!]!, seg, entry: seg.head.files[i]!, unindexed: false };
    }
  });
  const out: Candidate[] = [];
  for (let n = 0; n < order.length; n++) {
    const k = order[n]!;
    const c = slots[k];
    if (c) out.push(c);
    else if (claimed[k] === 0) {
      stats.files_unindexed++;
      out.push({ file: files[k]!, seg: null, entry: null, unindexed: true });
    }
  }
  return { candidates: out, segs: heads.filter((h): h is Seg => h !== null) };
}

/** The files' numbers newest first, then by path (IndexCoverage.order). */
function filesNewestFirst(files: readonly Listed[]): Uint32Array {
  return newestFirstOrder(files, (f) => f) ?? Uint32Array.from(files, (_, k) => k);
}

/** Puts candidates in newest-first-then-path order; candidates already in it (indexCandidates gives them so) are left as they are. */
export function sortNewestFirst(candidates: Candidate[]): void {
  const order = newestFirstOrder(candidates, (c) => c.file);
  if (order === null) return;
  const sorted = Array.from(order, (k) => candidates[k]!);
  for (let n = 0; n < sorted.length; n++) candidates[n] = sorted[n]!;
}

/**
 * What one grep is asked (GrepRequest) and what it answers (GrepOutcome: the hits, whether the
 * search is complete, and where a stopped one continues: GrepCursor). The search is grep.ts.
 */
import type { ProgressReporter } from "./workspace-view.js";
import type { FileCursor } from "./file-search.js";
import type { SkipReport } from "./ignore.js";
import type { Listed } from "./listing.js";
import type { Compiled, LineMatch } from "./matcher.js";
import type { SegmentCache } from "./segment-cache.js";
import type { ListingCache } from "./listing-cache.js";

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
  /** Continue a search an earlier call stopped (its cursor). */
  resume?: GrepCursor | null;
  /** Where progress goes when someone listens: the listing stage, then files searched of the candidates. */
  progress?: ProgressReporter | undefined;
  /** Index segment bytes this isolate read before (AppDeps.segmentCache). */
  segmentCache?: SegmentCache | undefined;
  /** Walks of layered workspaces this isolate made (AppDeps.listingCache). */
  listingCache?: ListingCache | undefined;
}

/**
 * Where a stopped search continues: candidates are searched in a fixed order (newest first,
 * then by path), so the first unfinished one names the place; `entries` were found before it.
 */
export interface GrepCursor {
  modified: number;
  path: string;
  entries: number;
  /** The search stopped inside this file. */
  file?: FileCursor;
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
  /** The search stopped because a budget ran out (not because the page was full). */
  exhausted: boolean;
  /** Which budget: storage requests, or verification (CPU). */
  stoppedBy: "storage" | "cpu" | null;
  /** Where to continue when exhausted. */
  resume: GrepCursor | null;
  /** Entries found before this call's start (a resumed search): hits[0] is entry number `base`. */
  base: number;
  /** Candidates left unsearched when exhausted. */
  unsearched: number;
  skipped: SkipReport;
  scanTruncated: boolean;
  stats: GrepStats;
}

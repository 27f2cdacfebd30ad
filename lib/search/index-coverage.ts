/**
 * The join of one listing with the index, whatever the query: per segment (its place among the
 * heads read, newest first), the entries that cover listed files; which files are covered; and
 * the files' numbers in the order the tool promises (newest first, then by path). A function of
 * the files and the segments' keys (a segment never changes), so a kept walk keeps it beside its
 * files (listing-cache.ts) for the next search of the same tree and the same segments.
 *
 * Made by candidates.ts (joinIndex); its own file so that the walk's cache can name it without an
 * import cycle (candidates.ts → listing.ts → listing-cache.ts).
 */
export interface IndexCoverage {
  /** The keys of the segments joined, newest first, one per line. */
  segmentKeys: string;
  /** Per segment that covers any listed file: its place among the heads read, its entries and the listed file's number beside each. */
  covered: { at: number; entries: number[]; fileAt: number[] }[];
  /** claimed[k] === 1: listed file k is covered by a segment. */
  claimed: Uint8Array;
  /** Files covered. */
  indexed: number;
  /** The files' numbers newest first, then by path. */
  order: Uint32Array;
}

/** A place to keep the coverage of one listing (listing-cache.ts WalkedTree is one). */
export interface CoverageSlot {
  coverage?: IndexCoverage;
}

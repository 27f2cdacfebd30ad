import { describe, expect, it } from "vitest";
import { sortNewestFirst, type Candidate } from "../../../lib/search/candidates.js";
import type { Listed } from "../../../lib/search/listing.js";
import { newestFirstOrder } from "../../../lib/search/newest-first.js";
import { rng } from "../../support/prng.js";

type Random = ReturnType<typeof rng>;

/** `n` files with distinct paths in path (string) order, their times drawn from few values so ties are common. */
function listing(r: Random, n: number): Listed[] {
  const paths = new Set<string>();
  while (paths.size < n) paths.add(`${r.pick(["a", "b", "c"])}/${r.int(10 * n)}.ts`);
  return [...paths].sort().map((path) => ({ path, etag: `"${path}"`, size: 1, modified: 1_700_000_000_000 + r.int(8) * 1000 }));
}

function shuffled<T>(r: Random, xs: readonly T[]): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = r.int(i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** The promised order, written the plain way: newest first, then by path. */
const expected = (files: readonly Listed[]) => [...files].sort((a, b) => b.modified - a.modified || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)).map((f) => f.path);

const candidate = (file: Listed): Candidate => ({ file, seg: null, entry: null, unindexed: true });

describe("newest first, then by path: one order for the candidates and the files' numbers", () => {
  it("orders a listing in path order, one in any other order, and one with a time shared by many files", () => {
    const r = rng(7);
    for (let round = 0; round < 50; round++) {
      const files = listing(r, 1 + r.int(300));
      for (const input of [files, shuffled(r, files), [...files].reverse()]) {
        const order = newestFirstOrder(input, (f) => f);
        const got = order === null ? input.map((f) => f.path) : Array.from(order, (k) => input[k]!.path);
        expect(got).toEqual(expected(input));
        const candidates = input.map(candidate);
        sortNewestFirst(candidates);
        expect(candidates.map((c) => c.file.path)).toEqual(expected(input));
      }
    }
  });

  it("leaves items already in that order as they are", () => {
    const files = listing(rng(11), 200);
    const ordered = expected(files).map((path) => files.find((f) => f.path === path)!);
    expect(newestFirstOrder(ordered, (f) => f)).toBeNull();
    const candidates = ordered.map(candidate);
    const before = [...candidates];
    sortNewestFirst(candidates);
    expect(candidates.every((c, i) => c === before[i])).toBe(true);
  });

  it("sorts a listing in path order by time alone: paths are read a few times per file, not per comparison", () => {
    const files = listing(rng(3), 5000);
    let pathReads = 0;
    const counted = files.map((f) => ({
      ...f,
      get path() {
        pathReads++;
        return f.path;
      },
    }));
    const order = newestFirstOrder(counted, (f) => f)!;
    expect(Array.from(order, (k) => files[k]!.path)).toEqual(expected(files));
    // Two scans (is it ordered? is it in path order?) read each path at most twice each; a sort comparing paths reads them ~n·log2(n) times.
    expect(pathReads).toBeLessThanOrEqual(4 * files.length);
  });
});

/**
 * The diff route's CPU bound per page (lib/layers/diff.ts, docs/versions.md "Diff"): each change's
 * minimal diff is bounded by itself (4,000 region lines, lib/shared/diff.ts), and a page's minimal
 * diffs together by PAGE_DIFF_LINES; past it a change's diff is the changed region as one block
 * (linear time, still cut at 80 lines / 8,000 characters), and says so. Without the page's bound a
 * page of 500 wholly rewritten 2,000-line files cost 500 minimal diffs (~0.2 s each where the clock
 * moves; Workers' clock stands still while code runs, so jsdiff's own timeout never fires there: ~1.8 s each).
 */
import { describe, expect, it } from "vitest";
import { diffVersions, PAGE_DIFF_LINES, type Side } from "../../../lib/layers/diff.js";

const lines = (seed: number, n: number) => Array.from({ length: n }, (_, i) => `l${(i * 7919 + seed * 104729) % 1000003} ${seed}`).join("\n") + "\n";
const side = (texts: Map<string, string>): Side => ({
  files: [...texts].map(([path, text]) => ({ path, etag: `e${text.length}-${text.slice(0, 12)}`, size: text.length })).sort((a, b) => (a.path < b.path ? -1 : 1)),
  read: async (path) => (texts.has(path) ? new TextEncoder().encode(texts.get(path)!) : null),
});
const minimized = (diff: string | undefined) => !!diff && !diff.includes("diff not minimized");

describe("diff: a page's minimal diffs are bounded together", () => {
  it("40 files rewritten whole (1,990 lines each): minimal diffs stop at the page's budget, the rest are one block each, every change has its diff", async () => {
    const n = 40;
    const from = new Map(Array.from({ length: n }, (_, i) => [`f${String(i).padStart(2, "0")}.txt`, lines(i, 1990)] as const));
    const to = new Map(Array.from({ length: n }, (_, i) => [`f${String(i).padStart(2, "0")}.txt`, lines(i + 5000, 1990)] as const));
    const r = await diffVersions(side(from), side(to), { limit: 100 });
    expect(r.changes).toHaveLength(n);
    const full = r.changes.filter((c) => minimized(c.diff)).length;
    expect(full * 3980).toBeLessThanOrEqual(PAGE_DIFF_LINES);
    for (const c of r.changes) {
      expect(c.diff, c.path).toMatch(/^--- a\//);
      expect(c.diff!.length).toBeLessThan(9000);
    }
    // (a minimal diff may also stop at jsdiff's own 200 ms timeout where the clock moves: then its note names no budget)
    expect(r.changes.filter((c) => c.diff!.includes("this page's minimal diffs used their budget")).length).toBeGreaterThanOrEqual(n - PAGE_DIFF_LINES / 3980);
  });

  it("small edits in many files are all minimized (the budget counts changed regions, not file sizes)", async () => {
    const n = 200;
    const from = new Map(Array.from({ length: n }, (_, i) => [`g${String(i).padStart(3, "0")}.txt`, lines(i, 1990)] as const));
    const to = new Map([...from].map(([p, t]) => [p, t.replace(/^l(\d+)/m, "changed $1")] as const));
    const r = await diffVersions(side(from), side(to), { limit: 500 });
    expect(r.changes).toHaveLength(n);
    expect(r.changes.every((c) => minimized(c.diff) && c.diff!.includes("+changed"))).toBe(true);
  });
});

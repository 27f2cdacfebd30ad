/**
 * The marks of a live runner's view as its polls send them (lib/sync/carried-files.ts, heldMarks:
 * 4 bytes an entry, 53 KB of base64 at 10,000 entries), made again only when the view's entries
 * changed. The key is the poll's own query: its bucket digests are SHA-256 over each bucket's
 * [path, etag] pairs, the very pairs the marks are made of, and ManifestView keeps them cached per
 * bucket. The view's version was the key before (2026-12-02), and every command's manifest answer
 * bumps it, so the marks of 10,000 entries were made again before every poll (~10 % of the runner's
 * CPU per no-change live command). Pure.
 */
import { heldMarks } from "../../lib/sync/carried-files.js";
import type { ManifestQuery } from "../../lib/sync/manifest.js";
import type { ManifestView } from "../../lib/sync/view.js";

const sameList = (a: readonly string[] | undefined, b: readonly string[] | undefined) =>
  a === b || (a !== undefined && b !== undefined && a.length === b.length && a.every((d, i) => d === b[i]));

/** `of(view, query)`: the marks of `view`, whose query (its digests) was just made; `make` (tests) makes them. */
export function viewMarks(make: typeof heldMarks = heldMarks) {
  let last: { view: ManifestView; size: number; digests: readonly string[] | undefined; held: string | undefined } | null = null;
  return {
    of(view: ManifestView, query: ManifestQuery): string | undefined {
      if (last && last.view === view && last.size === view.size && sameList(last.digests, query.digests)) return last.held;
      last = { view, size: view.size, digests: query.digests, held: make(view.values(), view.size) };
      return last.held;
    },
  };
}

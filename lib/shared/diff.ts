/**
 * The unified diff the edit tools hand back: minimal (jsdiff's Myers diff, one hunk per
 * separate change, `context` lines around each), CRLF shown as LF, a missing final newline
 * marked, and bounded: the diff itself is computed only over the changed region (common
 * leading and trailing lines are skipped in linear time), a region too large for it is shown
 * as one block and says so, and the text is cut at `maxLines` lines / `maxChars` characters.
 */
import { structuredPatch } from "diff";

export interface DiffBounds {
  /** Lines of context around each change (default 3). */
  context?: number;
  /** Most lines of the diff, headers included (default 80). */
  maxLines?: number;
  /** Most characters of the diff (default 8,000). */
  maxChars?: number;
  /** Longest diff line shown whole (default 400 characters). */
  maxLineChars?: number;
  /** Largest changed region (old + new lines) the minimal diff is computed over (default 4,000). */
  maxRegionLines?: number;
  /**
   * Region lines several diffs share (a page of the diff route): a minimal diff is computed only
   * while its region fits what is left, which it then uses up; past it, the region is one block.
   * A count, not a clock: Workers' clock stands still while code runs (jsdiff's timeout never fires there).
   */
  budget?: { lines: number };
}

/** CPU bound of the minimal diff; past it the region is shown as one block. */
const DIFF_TIMEOUT_MS = 200;

const countNewlines = (s: string, from = 0, to = s.length): number => {
  let n = 0;
  for (let i = s.indexOf("\n", from); i !== -1 && i < to; i = s.indexOf("\n", i + 1)) n++;
  return n;
};

/** Up to `limit` lines of a region for the one-block fallback, signed; a missing final newline marked. */
function blockLines(region: string, sign: string, endsFile: boolean, limit: number): string[] {
  if (region === "") return [];
  const lines = region.split("\n", limit + 1);
  const whole = countNewlines(region) < lines.length; // split saw every line
  if (whole && region.endsWith("\n")) lines.pop();
  const out = lines.slice(0, limit).map((l) => sign + l);
  if (whole && endsFile && !region.endsWith("\n")) out.push("\\ No newline at end of file");
  return out;
}

/** Cuts a line longer than `max` characters, on a code point boundary, saying how much. */
function cutLine(line: string, max: number): string {
  if (line.length <= max) return line;
  let end = max;
  if ((line.charCodeAt(end - 1) & 0xfc00) === 0xd800) end--;
  return `${line.slice(0, end)}… [${line.length - end} more characters]`;
}

/** Chars compared at once by the common prefix and suffix scans (a slice compare is native). */
const SCAN_STEP = 512;

/**
 * Length of the common prefix of `a` and `b`, at most `max`: equal slices skipped a step at a time,
 * then char by char (a 16 KB edit's char loop alone cost ~50 µs of CPU in workerd).
 */
function commonPrefix(a: string, b: string, max: number): number {
  let i = 0;
  while (i + SCAN_STEP <= max && a.slice(i, i + SCAN_STEP) === b.slice(i, i + SCAN_STEP)) i += SCAN_STEP;
  while (i < max && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/** Length of the common suffix of `a` and `b`, at most `max` (as commonPrefix, from the ends). */
function commonSuffix(a: string, b: string, max: number): number {
  let j = 0;
  while (j + SCAN_STEP <= max && a.slice(a.length - j - SCAN_STEP, a.length - j) === b.slice(b.length - j - SCAN_STEP, b.length - j)) j += SCAN_STEP;
  while (j < max && a.charCodeAt(a.length - 1 - j) === b.charCodeAt(b.length - 1 - j)) j++;
  return j;
}

const range = (start: number, n: number) => `${n === 0 ? start - 1 : start},${n}`;

/**
 * A unified diff of `before` → `after` for `path`: headers, then hunks. See the module comment
 * for the bounds.
 */
export function shortDiff(path: string, before: string, after: string, context = 3, maxLines = 80, bounds: DiffBounds = {}): string {
  const maxChars = bounds.maxChars ?? 8000;
  const maxLineChars = bounds.maxLineChars ?? 400;
  const maxRegion = bounds.maxRegionLines ?? 4000;
  const a = before.replaceAll("\r\n", "\n");
  const b = after.replaceAll("\r\n", "\n");
  const header = [`--- a/${path}`, `+++ b/${path}`];
  if (a === b) return header.join("\n");

  // The changed region, on line boundaries: common leading lines, then common trailing lines.
  const min = Math.min(a.length, b.length);
  const i = commonPrefix(a, b, min);
  const start = i === 0 ? 0 : a.lastIndexOf("\n", i - 1) + 1;
  const j = commonSuffix(a, b, min - start);
  let endA = a.length - j;
  let endB = b.length - j;
  const lineStart = (s: string, at: number) => at === 0 || s.charCodeAt(at - 1) === 10;
  if (j > 0 && !(lineStart(a, endA) && lineStart(b, endB))) {
    const nl = a.indexOf("\n", endA);
    const to = nl === -1 ? a.length : nl + 1;
    endB += to - endA;
    endA = to;
  }
  // Widen by `context` lines each side.
  let from = start;
  for (let k = 0; k < context && from > 0; k++) from = a.lastIndexOf("\n", from - 2) + 1;
  let toA = endA;
  for (let k = 0; k < context && toA < a.length; k++) {
    const nl = a.indexOf("\n", toA);
    toA = nl === -1 ? a.length : nl + 1;
  }
  const toB = endB + (toA - endA);
  const offset = countNewlines(a, 0, from);
  const regionA = a.slice(from, toA);
  const regionB = b.slice(from, toB);
  const linesA = regionA === "" ? 0 : countNewlines(regionA) + (regionA.endsWith("\n") ? 0 : 1);
  const linesB = regionB === "" ? 0 : countNewlines(regionB) + (regionB.endsWith("\n") ? 0 : 1);

  let body: string[] = [];
  let total: number;
  let note = "";
  const overBudget = bounds.budget !== undefined && linesA + linesB > bounds.budget.lines;
  const minimize = linesA + linesB <= maxRegion && !overBudget;
  if (minimize && bounds.budget) bounds.budget.lines -= linesA + linesB;
  const patch = minimize ? structuredPatch("a", "b", regionA, regionB, undefined, undefined, { context, timeout: DIFF_TIMEOUT_MS }) : undefined;
  if (patch) {
    for (const h of patch.hunks) {
      body.push(`@@ -${range(h.oldStart + offset, h.oldLines)} +${range(h.newStart + offset, h.newLines)} @@`, ...h.lines);
    }
    total = header.length + body.length;
  } else {
    // Too large (or too slow) for a minimal diff: the region as one block, the old lines then the new.
    const ctxBefore = countNewlines(a, from, start);
    const ctxAfter = countNewlines(a, endA, toA) + (toA === a.length && toA > endA && !a.endsWith("\n") ? 1 : 0);
    const changedA = linesA - ctxBefore - ctxAfter;
    const changedB = linesB - ctxBefore - ctxAfter;
    const room = maxLines;
    body = [`@@ -${range(offset + 1, linesA)} +${range(offset + 1, linesB)} @@`];
    body.push(...blockLines(a.slice(from, start), " ", false, room));
    body.push(...blockLines(a.slice(start, endA), "-", endA === a.length, room));
    body.push(...blockLines(b.slice(start, endB), "+", endB === b.length, room));
    body.push(...blockLines(a.slice(endA, toA), " ", toA === a.length, room));
    total = header.length + 1 + linesA + linesB - ctxBefore - ctxAfter; // "\ No newline" markers not counted
    note = `(diff not minimized: the changed region has ${changedA} old and ${changedB} new lines${overBudget && linesA + linesB <= maxRegion ? ", and this page's minimal diffs used their budget" : ""}; shown as one block)`;
  }

  const out = [...header];
  let chars = out.join("\n").length;
  for (const raw of body) {
    const line = cutLine(raw, maxLineChars);
    if (out.length >= maxLines || chars + 1 + line.length > maxChars) break;
    out.push(line);
    chars += 1 + line.length;
  }
  const shown = out.length;
  const rest = Math.max(0, total - shown);
  if (rest > 0) out.push(`... (${rest} more diff lines)`);
  if (note) out.push(note);
  return out.join("\n");
}

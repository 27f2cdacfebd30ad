/**
 * Line-mode search of one file, fed by the line splitter: blocks of whole lines, and windows
 * ("pieces") of lines too long to hold. Line numbers, context and counts carry across calls,
 * so a search can stop between two steps and continue there (in this call or the next).
 */
import { columnOf, CONTEXT_CHARS, cutLine, MAX_LINE_CHARS, type Compiled, type FileMatches, type LineMatch, type SearchOptions } from "./matcher.js";
import { OVERLAP_BYTES } from "./line-splitter.js";

/** A match that ends at a window's cut and starts within this many units of it is left to the next window (whose overlap holds it). */
const DEFER_UNITS = Math.floor(OVERLAP_BYTES / 3) - 2;

/** Where a search stands inside a long line (for a cursor). */
export interface LongLineState {
  /** UTF-16 units and code points of the line before the next window's new bytes. */
  units: number;
  cp: number;
  /** The line already matched: the rest is only read to its end. */
  matched: boolean;
}

interface LongLine extends LongLineState {
  head: string;
  /** The match of this line, its text waiting for the line's length. */
  pending: { m: LineMatch; from: number; to: number; excerpt: string } | null;
}

export interface SearchStart {
  /** Lines already finished (a long line being resumed is the next one). */
  line: number;
  /** Matches already counted in this file (count mode). */
  count?: number;
  /** Resuming inside a long line (line = its number). */
  long?: LongLineState;
}

const containsAll = (text: string, parts: readonly string[]) => parts.every((p) => text.includes(p));

/** The lines of a block (a last line break ends the last line, it does not start an empty one). */
const splitLines = (t: string): string[] => (t.endsWith("\n") ? t.slice(0, -1).split("\n") : t.split("\n"));

/**
 * The lines of `t` that contain every one of `required` (non-empty, none with a line break), found
 * from the occurrences of the longest (a native search), joined with "\n"; "" when there are none;
 * null when they make up most of the block (then testing the block itself costs no more). Time
 * linear in `t`: each search for a line's start stops at the end of the line before.
 */
function linesWithAll(t: string, required: readonly string[]): string | null {
  const anchor = required.reduce((a, b) => (b.length > a.length ? b : a));
  const out: string[] = [];
  let held = 0;
  for (let at = t.indexOf(anchor); at >= 0; ) {
    const start = t.lastIndexOf("\n", at - 1) + 1;
    let end = t.indexOf("\n", at + anchor.length);
    if (end < 0) end = t.length;
    const line = t.slice(start, end);
    if (required.length === 1 || containsAll(line, required)) {
      held += line.length + 1;
      if (held > t.length / 2) return null;
      out.push(line);
    }
    at = end < t.length ? t.indexOf(anchor, end + 1) : -1;
  }
  return out.join("\n");
}

/** Code points in s[a, b). */
function codePoints(s: string, a: number, b: number): number {
  let n = b - a;
  for (let i = a; i < b; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xdc00 && c <= 0xdfff && i > a && s.charCodeAt(i - 1) >= 0xd800 && s.charCodeAt(i - 1) <= 0xdbff) n--;
  }
  return n;
}

/** A long line shown as context: its head, and how much follows. */
function cutHead(head: string, units: number): string {
  return units <= MAX_LINE_CHARS ? head.slice(0, units) : `${head.slice(0, MAX_LINE_CHARS)}… [${units - MAX_LINE_CHARS} more chars]`;
}

export class TextSearch {
  private lineNo: number;
  private readonly ring: string[] = [];
  private readonly open: LineMatch[] = [];
  readonly result: FileMatches = { matches: [], count: 0 };
  private readonly matcher;
  private long: LongLine | null = null;

  constructor(private readonly c: Compiled, private readonly o: SearchOptions, start: SearchStart = { line: 0 }) {
    this.matcher = c.re.matcher("");
    this.lineNo = start.line + (start.long ? 1 : 0);
    this.result.count = start.count ?? 0;
    if (start.long) this.long = { ...start.long, head: "", pending: null };
  }

  get done(): boolean {
    return this.result.count >= this.o.maxMatches && this.open.length === 0;
  }

  /** Lines finished (a long line being read counts once it ends). */
  get lines(): number {
    return this.long ? this.lineNo - 1 : this.lineNo;
  }

  /** Where a long line being read stands, or null between lines. */
  get longLine(): LongLineState | null {
    return this.long ? { units: this.long.units, cp: this.long.cp, matched: this.long.matched } : null;
  }

  /** Feeds whole lines (each at most MAX_LINE_BYTES; the last block may lack a final line break). */
  block(text: string): void {
    if (this.done || text.length === 0) return;
    const t = text.includes("\r\n") ? text.replaceAll("\r\n", "\n") : text;
    const required = this.c.required;
    if (this.open.length === 0 && !this.mayMatch(t, required)) {
      this.passOver(t);
      return;
    }
    const lines = splitLines(t);
    for (const line of lines) {
      this.lineNo++;
      if (this.open.length > 0) this.contextLine(cutLine(line));
      if (this.result.count < this.o.maxMatches) {
        if (required.length > 0 && !containsAll(line, required)) {
          if (this.o.before > 0) this.remember([line]);
          continue;
        }
        this.matcher.resetMatcherInput(line);
        if (this.matcher.find()) {
          this.result.count++;
          if (this.o.collect === false) continue;
          const start = this.matcher.start();
          this.found({ line: this.lineNo, column: columnOf(line, start), text: cutLine(line, start, this.matcher.end() - start), before: [...this.ring], after: [] });
        }
      } else if (this.open.length === 0) return;
      if (this.o.before > 0) this.remember([line]);
    }
  }

  /**
   * False when no line of the block can match: a substring every match needs is missing from the
   * block (native searches), or from every line; or the whole-text regex test (^/$ at line ends)
   * fails on the lines that hold them all, joined (or on the whole block when no substring is known,
   * or when those lines are most of it). The regex then runs on those lines only, not on every byte. Sound as the
   * whole-block test was: each line is whole and ends at "\n" in both, so a line's match is one there.
   */
  private mayMatch(t: string, required: readonly string[]): boolean {
    if (required.length === 0) return this.c.prefilter === null || this.c.prefilter.test(t);
    if (!containsAll(t, required)) return false;
    const lines = linesWithAll(t, required);
    if (lines === "") return false;
    return this.c.prefilter === null || this.c.prefilter.test(lines ?? t);
  }

  /** A block with no match: its lines are counted (and the last ones kept as context) without splitting it when none is needed. */
  private passOver(t: string): void {
    if (this.o.before > 0) {
      const lines = splitLines(t);
      this.lineNo += lines.length;
      this.remember(lines.slice(-this.o.before));
      return;
    }
    let n = 0;
    for (let at = t.indexOf("\n"); at >= 0; at = t.indexOf("\n", at + 1)) n++;
    this.lineNo += t.endsWith("\n") ? n : n + 1;
  }

  /**
   * Feeds a window of a long line: `text` starts with `overlap` units repeated from the
   * previous window (none for the first); the last window holds the line's end.
   */
  piece(text: string, overlap: number, first: boolean, last: boolean): void {
    if (first || !this.long) {
      this.lineNo++;
      this.long = { units: 0, cp: 0, matched: false, head: "", pending: null };
    }
    const l = this.long;
    let t = text;
    if (last) {
      if (t.endsWith("\n")) t = t.slice(0, -1);
      if (t.endsWith("\r")) t = t.slice(0, -1);
    }
    if (l.units === 0 && l.head === "") l.head = t.slice(overlap, overlap + MAX_LINE_CHARS + 1);
    const base = l.units - overlap; // line offset of t[0]
    if (!l.matched && this.result.count < this.o.maxMatches) {
      this.matcher.resetMatcherInput(t);
      // Past the first window, start after the first unit so ^ and \b see the character before.
      if (this.matcher.find(first || overlap === 0 ? 0 : 1)) {
        const s = this.matcher.start();
        const e = this.matcher.end();
        if (last || e < t.length || t.length - s >= DEFER_UNITS) this.foundInLong(l, t, s, e, base, overlap);
      }
    }
    l.cp += t.length >= overlap ? codePoints(t, overlap, t.length) : -codePoints(text, t.length, overlap);
    l.units = base + t.length;
    if (last) this.endLong();
  }

  private foundInLong(l: LongLine, t: string, s: number, e: number, base: number, overlap: number): void {
    l.matched = true;
    this.result.count++;
    if (this.o.collect === false) return;
    const column = l.cp + (s >= overlap ? codePoints(t, overlap, s) : -codePoints(t, s, overlap)) + 1;
    let a = Math.max(0, s - CONTEXT_CHARS);
    const b = Math.min(t.length, Math.max(a + MAX_LINE_CHARS, s + Math.min(e - s, MAX_LINE_CHARS - CONTEXT_CHARS)));
    a = Math.max(0, Math.min(a, b - MAX_LINE_CHARS));
    const m: LineMatch = { line: this.lineNo, column, text: "", before: [...this.ring], after: [] };
    l.pending = { m, from: base + a, to: base + b, excerpt: t.slice(a, b) };
    this.result.matches.push(m);
  }

  /** The long line ended: its match gets its text, and it becomes a context line. */
  private endLong(): void {
    const l = this.long!;
    this.long = null;
    const m = l.pending?.m;
    this.settle(l, l.units);
    this.contextLine(cutHead(l.head, l.units));
    if (m && this.o.after > 0) this.open.push(m);
    if (this.o.before > 0) this.remember([cutHead(l.head, l.units)], true);
  }

  private settle(l: LongLine, total: number | null): void {
    const p = l.pending;
    if (!p) return;
    const tail = total === null ? "… [line continues]" : p.to < total ? `… [${total - p.to} more chars]` : "";
    p.m.text = `${p.from > 0 ? `[${p.from} chars] …` : ""}${p.excerpt}${tail}`;
    l.pending = null;
  }

  /** The search stops here (page full, end of file or budget): a long line's match gets its text now. */
  finish(): void {
    if (this.long) this.settle(this.long, null);
  }

  private found(m: LineMatch): void {
    this.result.matches.push(m);
    if (this.o.after > 0) this.open.push(m);
  }

  /** A line read after open matches: their after-context. */
  private contextLine(shown: string): void {
    for (let i = 0; i < this.open.length; ) {
      const m = this.open[i]!;
      m.after.push(shown);
      if (m.after.length >= this.o.after) this.open.splice(i, 1);
      else i++;
    }
  }

  private remember(lines: string[], cut = false): void {
    for (const l of lines) {
      this.ring.push(cut ? l : cutLine(l));
      if (this.ring.length > this.o.before) this.ring.shift();
    }
  }
}

/**
 * Matching text with a user pattern on a linear-time engine (re2js, RE2 semantics): no
 * pattern can make a search take more than time linear in the text, which matters in a
 * Worker that cannot interrupt its own CPU-bound loop.
 *
 * Lines: a file is matched line by line ("\r\n" counts as one line ending). A whole-text
 * test with ^/$ at line boundaries runs first; only texts it accepts are split into lines.
 * Every line match found by the line loop is also found by that test, so the prefilter
 * never hides a match (patterns with \A, \z or flag groups skip it).
 */
import { RE2JS } from "re2js";
import { ToolError } from "../errors.js";
import { literalQuery, regexQuery, type Query } from "./query.js";

/** Longest line shown; longer lines are cut around the match. */
export const MAX_LINE_CHARS = 400;
const CONTEXT_CHARS = 150;

export interface MatchSpec {
  pattern: string;
  literal: boolean;
  caseInsensitive: boolean;
  multiline: boolean;
}

export interface Compiled {
  spec: MatchSpec;
  /** Per line (or, in multiline mode, over the whole text). */
  re: RE2JS;
  /** Whole-text test (^ and $ at line boundaries), or null when it cannot be used. */
  prefilter: RE2JS | null;
  /** Trigrams every matching file contains. */
  query: Query;
}

export function compileMatcher(spec: MatchSpec): Compiled {
  if (spec.pattern.length === 0) throw new ToolError("INVALID_ARGUMENT", "pattern is empty. Give a regular expression (RE2 syntax) or a literal string with literal: true.");
  const source = spec.literal ? RE2JS.quote(spec.pattern) : spec.pattern;
  let flags = spec.caseInsensitive ? RE2JS.CASE_INSENSITIVE : 0;
  if (spec.multiline) flags |= RE2JS.MULTILINE | RE2JS.DOTALL;
  let re: RE2JS;
  try {
    re = RE2JS.compile(source, flags);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    throw new ToolError(
      "INVALID_ARGUMENT",
      `Invalid regular expression ${JSON.stringify(spec.pattern)}: ${why}. Patterns use RE2 syntax (no backreferences or lookaround); escape special characters such as ( [ { . * + ? with a backslash, or pass literal: true to search for the text as is.`,
      { pattern: spec.pattern, error: why },
    );
  }
  let prefilter: RE2JS | null = null;
  if (!spec.multiline && (spec.literal || !/\\[Az]|\(\?/.test(spec.pattern))) {
    prefilter = RE2JS.compile(source, flags | RE2JS.MULTILINE);
  }
  const query = spec.literal ? literalQuery(spec.pattern, spec.caseInsensitive) : regexQuery(spec.pattern, spec.caseInsensitive);
  return { spec, re, prefilter, query };
}

export interface LineMatch {
  line: number;
  /** 1-based, in characters (code points). */
  column: number;
  text: string;
  before: string[];
  after: string[];
  /** Last line of a multiline match. */
  end_line?: number;
}

export interface FileMatches {
  matches: LineMatch[];
  /** Matching lines (or matches, in multiline mode) in the file, up to the count cap. */
  count: number;
}

export interface SearchOptions {
  before: number;
  after: number;
  /** Stop collecting (and counting) after this many matches. */
  maxMatches: number;
  /** Keep the matches (default true); false only counts them. */
  collect?: boolean;
}

/** Code point column of a UTF-16 index. */
function columnOf(line: string, index: number): number {
  const head = line.slice(0, index);
  if (!/[\uD800-\uDFFF]/.test(head)) return index + 1;
  return Array.from(head).length + 1;
}

/** A line cut to MAX_LINE_CHARS, keeping the match in view. */
export function cutLine(line: string, at = 0, length = 0): string {
  if (line.length <= MAX_LINE_CHARS) return line;
  let start = Math.max(0, at - CONTEXT_CHARS);
  const end = Math.min(line.length, Math.max(start + MAX_LINE_CHARS, at + Math.min(length, MAX_LINE_CHARS - CONTEXT_CHARS)));
  start = Math.max(0, Math.min(start, end - MAX_LINE_CHARS));
  // Do not cut a surrogate pair.
  const s = start > 0 && /[\uDC00-\uDFFF]/.test(line[start]!) ? start - 1 : start;
  const e = end < line.length && /[\uD800-\uDBFF]/.test(line[end - 1]!) ? end + 1 : end;
  return `${s > 0 ? `[${s} chars] …` : ""}${line.slice(s, e)}${e < line.length ? `… [${line.length - e} more chars]` : ""}`;
}

/**
 * Searches one piece of text. Texts come whole, or in blocks of complete lines for big
 * files: `state` carries line numbers and context between blocks.
 */
export class TextSearch {
  private lineNo = 0;
  private readonly ring: string[] = [];
  private readonly open: LineMatch[] = [];
  readonly result: FileMatches = { matches: [], count: 0 };
  private readonly matcher;

  constructor(private readonly c: Compiled, private readonly o: SearchOptions) {
    this.matcher = c.re.matcher("");
  }

  get done(): boolean {
    return this.result.count >= this.o.maxMatches && this.open.length === 0;
  }

  /** Feeds text made of whole lines (the last block may lack a final line break). */
  block(text: string): void {
    if (this.done) return;
    if (text.length === 0) return;
    const t = text.includes("\r\n") ? text.replaceAll("\r\n", "\n") : text;
    if (this.c.spec.multiline) return this.multiline(t);
    const lines = t.endsWith("\n") ? t.slice(0, -1).split("\n") : t.split("\n");
    if (this.c.prefilter && this.open.length === 0 && !this.c.prefilter.test(t)) {
      this.lineNo += lines.length;
      if (this.o.before > 0) this.remember(lines.slice(-this.o.before));
      return;
    }
    for (const line of lines) {
      this.lineNo++;
      for (let i = 0; i < this.open.length; ) {
        const m = this.open[i]!;
        m.after.push(cutLine(line));
        if (m.after.length >= this.o.after) this.open.splice(i, 1);
        else i++;
      }
      if (this.result.count < this.o.maxMatches) {
        this.matcher.resetMatcherInput(line);
        if (this.matcher.find()) {
          this.result.count++;
          if (this.o.collect === false) continue;
          const start = this.matcher.start();
          const m: LineMatch = { line: this.lineNo, column: columnOf(line, start), text: cutLine(line, start, this.matcher.end() - start), before: [...this.ring], after: [] };
          this.result.matches.push(m);
          if (this.o.after > 0) this.open.push(m);
        }
      } else if (this.open.length === 0) return;
      if (this.o.before > 0) this.remember([line]);
    }
  }

  private remember(lines: string[]): void {
    for (const l of lines) {
      this.ring.push(cutLine(l));
      if (this.ring.length > this.o.before) this.ring.shift();
    }
  }

  /** Multiline mode: the pattern runs over the whole text; `.` matches line breaks. */
  private multiline(t: string): void {
    const starts: number[] = [0];
    for (let i = t.indexOf("\n"); i >= 0; i = t.indexOf("\n", i + 1)) starts.push(i + 1);
    const lineAt = (pos: number): number => {
      let lo = 0;
      let hi = starts.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >>> 1;
        if (starts[mid]! <= pos) lo = mid;
        else hi = mid - 1;
      }
      return lo;
    };
    const lineText = (k: number) => t.slice(starts[k]!, k + 1 < starts.length ? starts[k + 1]! - 1 : t.length);
    const m = this.c.re.matcher(t);
    let from = 0;
    let lastLine = -1;
    while (this.result.count < this.o.maxMatches && from <= t.length && m.find(from)) {
      const s = m.start();
      const e = m.end();
      from = e > s ? e : e + 1;
      const k = lineAt(s);
      if (k === lastLine) continue;
      lastLine = k;
      const endK = lineAt(Math.max(s, e - 1));
      const line = lineText(k);
      const col = s - starts[k]!;
      this.result.count++;
      if (this.o.collect === false) continue;
      const before: string[] = [];
      for (let j = Math.max(0, k - this.o.before); j < k; j++) before.push(cutLine(lineText(j)));
      const after: string[] = [];
      for (let j = endK + 1; j <= Math.min(starts.length - 1, endK + this.o.after); j++) after.push(cutLine(lineText(j)));
      this.result.matches.push({ line: this.lineNo + k + 1, column: columnOf(line, col), text: cutLine(line, col, e - s), before, after, ...(endK > k ? { end_line: this.lineNo + endK + 1 } : {}) });
    }
  }
}

/** Whether the text has at least one match (files_with_matches mode). */
export function hasMatch(c: Compiled, text: string): boolean {
  const s = new TextSearch(c, { before: 0, after: 0, maxMatches: 1 });
  s.block(text);
  return s.result.count > 0;
}

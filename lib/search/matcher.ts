/**
 * Matching text with a user pattern on a linear-time engine (re2js, RE2 semantics): no
 * pattern can make a search take more than time linear in the text, which matters in a
 * Worker that cannot interrupt its own CPU-bound loop.
 *
 * Lines: a file is matched line by line ("\r\n" counts as one line ending), in blocks the
 * line splitter bounds (text-search.ts). A whole-block test with ^/$ at line boundaries runs
 * first; only blocks it accepts are split into lines. Every line match found by the line loop
 * is also found by that test, so the prefilter never hides a match (patterns with \A, \z or
 * flag groups skip it). Multiline mode is in multiline.ts.
 */
import { RE2JS } from "re2js";
import { ToolError } from "../shared/errors.js";
import { literalQuery, type Query } from "./query.js";
import { regexQuery, requiredLiterals } from "./regex-query.js";

/** Longest line shown; longer lines are cut around the match. */
export const MAX_LINE_CHARS = 400;
export const CONTEXT_CHARS = 150;

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
  /**
   * Substrings every matching line contains (line mode; [] when none is known): a block or a
   * line without one of them is passed over without running the regex (text-search.ts).
   */
  required: string[];
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
  // A literal with a line break never matches a line; one whose case may vary is not a plain substring.
  const literals = spec.multiline || spec.caseInsensitive ? [] : spec.literal ? [spec.pattern] : requiredLiterals(spec.pattern, false);
  const required = literals.some((l) => /[\r\n]/.test(l)) ? [] : literals;
  return { spec, re, prefilter, query, required };
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
export function columnOf(line: string, index: number): number {
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


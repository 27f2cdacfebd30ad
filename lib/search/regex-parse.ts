/**
 * A parser for the subset of JavaScript regex syntax that picomatch emits for globs:
 * groups ((?:…), (…), lookahead (?=…) (?!…)), alternation, classes, escapes, ., ^, $,
 * \b, and the quantifiers *, +, ?, {n}, {n,}, {n,m} (greedy or lazy, which a yes/no
 * match does not distinguish). No flags: ^ and $ are the string's ends, "." excludes
 * line terminators, characters are UTF-16 code units, as in `new RegExp(source)`.
 * Anything else (backreferences, lookbehind, named groups) throws: the caller refuses the glob.
 */

export type CharTest = (c: number) => boolean;
export type Assertion = "start" | "end" | "word" | "notword" | "notDotSegment" | "notDotSegmentHere" | "notEnd";

/**
 * picomatch's lookaheads, spelled as it emits them, each an O(1) assertion with the same
 * meaning (regex-nfa.ts evaluates them): the general lookahead machinery gives the same
 * answers (the differential test checks both), only slower.
 */
const KNOWN_LOOKAHEADS: readonly [string, Assertion][] = [
  ["(?!(?:^|\\/)\\.{1,2}(?:\\/|$))", "notDotSegment"], // no "." or ".." segment starts here (or after the "/" here)
  ["(?!\\.{1,2}(?:\\/|$))", "notDotSegmentHere"], // the text here is not "." or ".." followed by "/" or the end
  ["(?=.)", "notEnd"], // a character (not a line terminator) follows
];

export type RegexNode =
  | { t: "empty" }
  | { t: "char"; test: CharTest }
  | { t: "cat"; items: RegexNode[] }
  | { t: "alt"; items: RegexNode[] }
  | { t: "rep"; body: RegexNode; min: number; max: number }
  | { t: "assert"; kind: Assertion }
  | { t: "look"; negate: boolean; body: RegexNode };

export class RegexSyntaxError extends Error {}

type Range = [number, number];
const DIGIT: Range[] = [[48, 57]];
const WORD: Range[] = [[48, 57], [65, 90], [95, 95], [97, 122]];
const SPACE: Range[] = [[9, 13], [32, 32], [160, 160], [5760, 5760], [8192, 8202], [8232, 8233], [8239, 8239], [8287, 8287], [12288, 12288], [65279, 65279]];
const LINE_END = new Set([10, 13, 0x2028, 0x2029]);

const inRanges = (rs: Range[], c: number): boolean => rs.some(([a, b]) => c >= a && c <= b);
export const isWordChar = (c: number): boolean => inRanges(WORD, c);

function rangesTest(rs: Range[], negate: boolean): CharTest {
  // ASCII by table, the rest by the ranges.
  const ascii = new Uint8Array(128);
  for (let c = 0; c < 128; c++) ascii[c] = inRanges(rs, c) !== negate ? 1 : 0;
  return (c) => (c < 128 ? ascii[c] === 1 : inRanges(rs, c) !== negate);
}

const SIMPLE_ESCAPES: Record<string, number> = { n: 10, r: 13, t: 9, v: 11, f: 12, "0": 0 };

/** fastLookaheads: false parses picomatch's lookaheads as lookaheads (for tests). */
export function parseRegex(source: string, fastLookaheads = true): RegexNode {
  let i = 0;
  const fail = (why: string): never => {
    throw new RegexSyntaxError(`${why} at offset ${i} of /${source}/`);
  };

  /** A class escape (\d \w \s and negations) as ranges, or null for a single character. */
  function classEscape(ch: string): { ranges: Range[]; negate: boolean } | null {
    switch (ch) {
      case "d": return { ranges: DIGIT, negate: false };
      case "D": return { ranges: DIGIT, negate: true };
      case "w": return { ranges: WORD, negate: false };
      case "W": return { ranges: WORD, negate: true };
      case "s": return { ranges: SPACE, negate: false };
      case "S": return { ranges: SPACE, negate: true };
      default: return null;
    }
  }

  /** The code unit of a single-character escape after "\" (i is past the backslash). */
  function escapedUnit(inClass: boolean): number {
    const ch = source[i++];
    if (ch === undefined) return fail("trailing backslash");
    const simple = SIMPLE_ESCAPES[ch];
    if (simple !== undefined && !(ch === "0" && /[0-9]/.test(source[i] ?? ""))) return simple;
    if (ch === "b" && inClass) return 8;
    if (ch === "x" && /^[0-9a-fA-F]{2}/.test(source.slice(i))) { i += 2; return parseInt(source.slice(i - 2, i), 16); }
    if (ch === "u" && /^[0-9a-fA-F]{4}/.test(source.slice(i))) { i += 4; return parseInt(source.slice(i - 4, i), 16); }
    if (ch === "c" && /^[A-Za-z]/.test(source[i] ?? "")) return source.charCodeAt(i++) % 32;
    if (/[1-9]/.test(ch)) fail("backreference not supported");
    return ch.charCodeAt(0);
  }

  function parseClass(): RegexNode {
    i++; // [
    let negate = false;
    if (source[i] === "^") { negate = true; i++; }
    const ranges: Range[] = [];
    const negParts: { ranges: Range[]; negate: boolean }[] = [];
    const atom = (): number | { ranges: Range[]; negate: boolean } => {
      if (source[i] === "\\") {
        i++;
        const cls = classEscape(source[i] ?? "");
        if (cls) { i++; return cls; }
        return escapedUnit(true);
      }
      if (i >= source.length) fail("unterminated character class");
      return source.charCodeAt(i++);
    };
    while (source[i] !== "]") {
      if (i >= source.length) fail("unterminated character class");
      const a = atom();
      if (typeof a !== "number") { negParts.push(a); continue; }
      if (source[i] === "-" && source[i + 1] !== "]" && i + 1 < source.length) {
        i++;
        const b = atom();
        if (typeof b !== "number") { ranges.push([a, a], [45, 45]); negParts.push(b); continue; }
        if (b < a) fail("character class range out of order");
        ranges.push([a, b]);
      } else ranges.push([a, a]);
    }
    i++; // ]
    const own = rangesTest(ranges, false);
    const parts = negParts.map((p) => rangesTest(p.ranges, p.negate));
    const member: CharTest = parts.length === 0 ? own : (c) => own(c) || parts.some((t) => t(c));
    return { t: "char", test: negate ? (c) => !member(c) : member };
  }

  function parseAtom(): RegexNode {
    const ch = source[i];
    if (ch === "(") {
      const known = fastLookaheads ? KNOWN_LOOKAHEADS.find(([text]) => source.startsWith(text, i)) : undefined;
      if (known) {
        i += known[0].length;
        return { t: "assert", kind: known[1] };
      }
      i++;
      let look: { negate: boolean } | null = null;
      if (source.startsWith("?:", i)) i += 2;
      else if (source.startsWith("?=", i)) { look = { negate: false }; i += 2; }
      else if (source.startsWith("?!", i)) { look = { negate: true }; i += 2; }
      else if (source[i] === "?") fail("group kind not supported");
      const body = parseAlt();
      if (source[i] !== ")") fail("unterminated group");
      i++;
      return look ? { t: "look", negate: look.negate, body } : body;
    }
    if (ch === "[") return parseClass();
    if (ch === ".") { i++; return { t: "char", test: (c) => !LINE_END.has(c) }; }
    if (ch === "^") { i++; return { t: "assert", kind: "start" }; }
    if (ch === "$") { i++; return { t: "assert", kind: "end" }; }
    if (ch === "\\") {
      i++;
      const next = source[i] ?? "";
      if (next === "b" || next === "B") { i++; return { t: "assert", kind: next === "b" ? "word" : "notword" }; }
      const cls = classEscape(next);
      if (cls) { i++; return { t: "char", test: rangesTest(cls.ranges, cls.negate) }; }
      const u = escapedUnit(false);
      return { t: "char", test: (c) => c === u };
    }
    if (ch === "*" || ch === "+" || ch === "?") fail("nothing to repeat");
    if (ch === "{" && quantifierAt(i)) fail("nothing to repeat");
    const u = source.charCodeAt(i++);
    return { t: "char", test: (c) => c === u };
  }

  /** A {n}, {n,} or {n,m} quantifier at j, as [min, max, length], else null ("{" is then a literal). */
  function quantifierAt(j: number): [number, number, number] | null {
    const m = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(j, j + 24));
    if (!m) return null;
    const min = Number(m[1]);
    const max = m[2] === undefined ? min : m[3] === "" ? Infinity : Number(m[3]);
    return [min, max, m[0].length];
  }

  function parseSeq(): RegexNode {
    const items: RegexNode[] = [];
    while (i < source.length && source[i] !== "|" && source[i] !== ")") {
      let node = parseAtom();
      for (;;) {
        const q = source[i];
        let min: number, max: number;
        if (q === "*") { min = 0; max = Infinity; i++; }
        else if (q === "+") { min = 1; max = Infinity; i++; }
        else if (q === "?") { min = 0; max = 1; i++; }
        else if (q === "{" && quantifierAt(i)) { const [a, b, len] = quantifierAt(i)!; min = a; max = b; i += len; if (max < min) fail("numbers out of order in quantifier"); }
        else break;
        if (node.t === "assert" || node.t === "look") fail("quantified assertion not supported");
        if (source[i] === "?") i++; // lazy: same set of matches
        node = { t: "rep", body: node, min, max };
      }
      items.push(node);
    }
    return items.length === 0 ? { t: "empty" } : items.length === 1 ? items[0]! : { t: "cat", items };
  }

  function parseAlt(): RegexNode {
    const items = [parseSeq()];
    while (source[i] === "|") { i++; items.push(parseSeq()); }
    return items.length === 1 ? items[0]! : { t: "alt", items };
  }

  const node = parseAlt();
  if (i < source.length) fail("unmatched )");
  return node;
}

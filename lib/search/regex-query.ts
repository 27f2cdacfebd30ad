/**
 * A regular expression (RE2 syntax) to its trigram query (query.ts): a recursive-descent parser
 * that keeps only what every match must contain. Conservative: what it does not understand
 * becomes ALL (the regex itself verifies every candidate).
 */
import { ALL, and, literalQuery, or, type Query } from "./query.js";

/** Beyond this many trigram leaves the rest become ALL (still sound, less selective). */
const MAX_LEAVES = 256;
const MAX_DEPTH = 200;

/** Trigram query of a regex. Never throws: anything it does not understand gives ALL. */
export function regexQuery(pattern: string, caseInsensitive: boolean): Query {
  // A flag group turning on (?i) anywhere makes the whole pattern case-insensitive (conservative).
  const ci = caseInsensitive || /\(\?[A-Za-z-]*i/.test(pattern);
  try {
    const p = new Parser(pattern, ci);
    const q = p.alternation(0);
    if (p.i !== p.s.length) return ALL;
    return limitLeaves(q);
  } catch {
    return ALL;
  }
}

/**
 * Substrings every match of the regex contains, as they appear in the text (case-sensitive
 * patterns only): the literal runs of its top-level sequence, e.g. "=>" and "{" for
 * `\w+\s*=>\s*\{`. A text without one of them cannot match, which a native substring search
 * tells far faster than the regex engine (ripgrep's inner-literal prefilter). Sound for the same
 * reason the trigram query is (the same runs); [] whenever unsure: case-insensitive, flag or
 * named groups, a top-level alternation, anything the parser does not understand.
 */
export function requiredLiterals(pattern: string, caseInsensitive: boolean): string[] {
  if (caseInsensitive || pattern.includes("(?")) return [];
  try {
    const p = new Parser(pattern, false);
    const top = p.alternation(0);
    if (p.i !== p.s.length || top.op === "or") return [];
    if (p.branches0 !== 1) return [];
    return [...new Set(p.topRuns)].filter((r) => r !== "");
  } catch {
    return [];
  }
}

/** Replaces trigram leaves past MAX_LEAVES by ALL (sound: the formula is monotone). */
function limitLeaves(q: Query): Query {
  let left = MAX_LEAVES;
  const walk = (x: Query): Query => {
    if (x.op === "tri") return left-- > 0 ? x : ALL;
    if (x.op === "and") return and(x.of.map(walk));
    if (x.op === "or") return or(x.of.map(walk));
    return x;
  };
  return walk(q);
}

class Unsupported extends Error {}

interface Repeat {
  min: number;
  max: number; // Infinity when unbounded
}

class Parser {
  i = 0;
  /** Literal runs of the top-level sequence (requiredLiterals), and how many branches the top level has. */
  readonly topRuns: string[] = [];
  branches0 = 0;
  constructor(readonly s: string, readonly ci: boolean) {}

  alternation(depth: number): Query {
    if (depth > MAX_DEPTH) throw new Unsupported();
    const branches = [this.sequence(depth)];
    while (this.s[this.i] === "|") {
      this.i++;
      branches.push(this.sequence(depth));
    }
    if (depth === 0) this.branches0 = branches.length;
    return or(branches);
  }

  private sequence(depth: number): Query {
    const parts: Query[] = [];
    let run = "";
    const flush = () => {
      if (run) parts.push(literalQuery(run, this.ci));
      if (run && depth === 0) this.topRuns.push(run);
      run = "";
    };
    /** A literal character followed by an optional repeat. */
    const literal = (ch: string) => {
      const r = this.repeat();
      if (!r) {
        run += ch;
        return;
      }
      if (r.min === 0) {
        flush();
        return;
      }
      run += ch.repeat(Math.min(r.min, 8));
      if (r.max !== r.min || r.min > 8) flush();
    };
    const s = this.s;
    while (this.i < s.length) {
      const c = s[this.i]!;
      if (c === "|" || c === ")") break;
      if (c === "(") {
        flush();
        this.i++;
        if (s[this.i] === "?") {
          this.i++;
          if (s.startsWith("P<", this.i) || s[this.i] === "<") {
            const close = s.indexOf(">", this.i);
            if (close < 0) throw new Unsupported();
            this.i = close + 1;
          } else {
            while (this.i < s.length && /[A-Za-z-]/.test(s[this.i]!)) this.i++;
            if (s[this.i] === ")") {
              this.i++; // a flag group like (?i): no atom
              continue;
            }
            if (s[this.i] !== ":") throw new Unsupported();
            this.i++;
          }
        }
        const inner = this.alternation(depth + 1);
        if (s[this.i] !== ")") throw new Unsupported();
        this.i++;
        const r = this.repeat();
        if (!r || r.min >= 1) parts.push(inner);
        continue;
      }
      if (c === "\\") {
        const e = s[this.i + 1];
        if (e === undefined) throw new Unsupported();
        if (!/[0-9A-Za-z]/.test(e)) {
          this.i += 2;
          literal(e);
          continue;
        }
        const simple: Record<string, string> = { t: "\t", n: "\n", r: "\r", f: "\f", v: "\v", a: "\x07" };
        if (simple[e] !== undefined) {
          this.i += 2;
          literal(simple[e]!);
          continue;
        }
        if (e === "x") {
          this.i += 2;
          let hex: string;
          if (s[this.i] === "{") {
            const close = s.indexOf("}", this.i);
            if (close < 0) throw new Unsupported();
            hex = s.slice(this.i + 1, close);
            this.i = close + 1;
          } else {
            hex = s.slice(this.i, this.i + 2);
            this.i += 2;
          }
          if (!/^[0-9A-Fa-f]{1,8}$/.test(hex)) throw new Unsupported();
          const cp = parseInt(hex, 16);
          if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) throw new Unsupported();
          literal(String.fromCodePoint(cp));
          continue;
        }
        if (e === "Q") {
          const end = s.indexOf("\\E", this.i + 2);
          const text = end < 0 ? s.slice(this.i + 2) : s.slice(this.i + 2, end);
          this.i = end < 0 ? s.length : end + 2;
          const chars = Array.from(text);
          if (chars.length === 0) continue;
          run += chars.slice(0, -1).join("");
          literal(chars[chars.length - 1]!);
          continue;
        }
        if (e === "b" || e === "B" || e === "A" || e === "z") {
          this.i += 2;
          flush();
          this.repeat();
          continue;
        }
        if (e === "p" || e === "P") {
          this.i += 2;
          if (s[this.i] === "{") {
            const close = s.indexOf("}", this.i);
            if (close < 0) throw new Unsupported();
            this.i = close + 1;
          } else this.i++;
          flush();
          this.repeat();
          continue;
        }
        if ("dDwWsSC".includes(e)) {
          this.i += 2;
          flush();
          this.repeat();
          continue;
        }
        if (/[0-7]/.test(e)) {
          this.i += 2;
          while (this.i < s.length && /[0-7]/.test(s[this.i]!) && this.i < s.length) this.i++;
          flush();
          this.repeat();
          continue;
        }
        throw new Unsupported();
      }
      if (c === "[") {
        this.skipClass();
        flush();
        this.repeat();
        continue;
      }
      if (c === "." ) {
        this.i++;
        flush();
        this.repeat();
        continue;
      }
      if (c === "^" || c === "$") {
        this.i++;
        flush();
        this.repeat();
        continue;
      }
      if (c === "*" || c === "+" || c === "?") throw new Unsupported(); // a repeat with nothing to repeat
      const cp = s.codePointAt(this.i)!;
      const ch = String.fromCodePoint(cp);
      this.i += ch.length;
      literal(ch);
    }
    flush();
    return and(parts);
  }

  /** Parses an optional repeat operator (and its lazy `?`). */
  private repeat(): Repeat | null {
    const s = this.s;
    let r: Repeat | null = null;
    const c = s[this.i];
    if (c === "*") r = { min: 0, max: Infinity };
    else if (c === "+") r = { min: 1, max: Infinity };
    else if (c === "?") r = { min: 0, max: 1 };
    if (r) this.i++;
    else if (c === "{") {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(s.slice(this.i, this.i + 24));
      if (!m) return null; // a literal "{" (handled by the caller as a character)
      const min = Number(m[1]);
      const max = m[2] === undefined ? min : m[3] === "" ? Infinity : Number(m[3]);
      r = { min, max };
      this.i += m[0].length;
    }
    if (r && s[this.i] === "?") this.i++;
    // A second repeat (a** is an error in RE2, but be safe): treat as optional.
    if (r && (s[this.i] === "*" || s[this.i] === "+" || s[this.i] === "?")) throw new Unsupported();
    return r;
  }

  private skipClass(): void {
    const s = this.s;
    this.i++; // [
    if (s[this.i] === "^") this.i++;
    if (s[this.i] === "]") this.i++; // a leading ] is literal
    while (this.i < s.length && s[this.i] !== "]") {
      if (s[this.i] === "\\") this.i += 2;
      else if (s.startsWith("[:", this.i)) {
        const close = s.indexOf(":]", this.i + 2);
        if (close < 0) throw new Unsupported();
        this.i = close + 2;
      } else this.i++;
    }
    if (s[this.i] !== "]") throw new Unsupported();
    this.i++;
  }
}

/**
 * Linear-time matching of a parsed regex (regex-parse.ts) by NFA simulation: every
 * character is read once per program state, never re-tried, so a match costs
 * O(text length × program size) whatever the pattern (a backtracking engine can take
 * exponential time on the same regex).
 *
 * Lookaheads are position predicates. One whose body has bounded length (picomatch's
 * "not a . or .. segment here", "not at the end") is evaluated on demand by a forward run
 * that ends within that bound. One with an unbounded body (a negated extglob "!(…)") is
 * evaluated at every position at once, by one right-to-left run of its reversed body.
 * Each is computed at most once per position, so nesting keeps the bound.
 */
import { isWordChar, type Assertion, type CharTest, type RegexNode } from "./regex-parse.js";

const SLASH = 47, DOT = 46;
const isLineEnd = (c: number): boolean => c === 10 || c === 13 || c === 0x2028 || c === 0x2029;
/** Whether s has "." or ".." at pos, followed by "/" or the end: /\.{1,2}(?:\/|$)/ there. */
function dotSegmentAt(s: string, pos: number): boolean {
  if (s.charCodeAt(pos) !== DOT) return false;
  const after = (q: number) => q === s.length || s.charCodeAt(q) === SLASH;
  return after(pos + 1) || (s.charCodeAt(pos + 1) === DOT && after(pos + 2));
}

export const CHAR = 0, SPLIT = 1, ASSERT = 2, LOOK = 3, MATCH = 4;
/** More program states than this is refused (counted repeats are expanded). */
const MAX_STATES = 200_000;

interface Look { negate: boolean; bounded: boolean; fwd: number; rev: number }

export interface Program {
  op: number[];
  next: number[];
  alt: number[];
  test: (CharTest | null)[];
  assertion: (Assertion | null)[];
  /** For LOOK states: the index into looks. */
  look: number[];
  looks: Look[];
}

const bounded = (n: RegexNode): boolean => {
  switch (n.t) {
    case "rep": return n.max !== Infinity && bounded(n.body);
    case "cat": case "alt": return n.items.every(bounded);
    case "look": return true; // zero-width: adds no length
    default: return true;
  }
};

export function build(root: RegexNode): { prog: Program; start: number } {
  const prog: Program = { op: [], next: [], alt: [], test: [], assertion: [], look: [], looks: [] };
  const add = (op: number, next: number, alt = -1, test: CharTest | null = null, assertion: Assertion | null = null, look = -1): number => {
    if (prog.op.length >= MAX_STATES) throw new Error("pattern too large");
    prog.op.push(op); prog.next.push(next); prog.alt.push(alt); prog.test.push(test); prog.assertion.push(assertion); prog.look.push(look);
    return prog.op.length - 1;
  };
  // Builds back to front: each node is compiled with the state that follows it.
  const compile = (n: RegexNode, next: number, rev: boolean): number => {
    switch (n.t) {
      case "empty": return next;
      case "char": return add(CHAR, next, -1, n.test);
      case "assert": return add(ASSERT, next, -1, null, n.kind);
      case "cat": {
        let s = next;
        const items = rev ? n.items : [...n.items].reverse();
        for (const item of items) s = compile(item, s, rev);
        return s;
      }
      case "alt": {
        let s = compile(n.items[n.items.length - 1]!, next, rev);
        for (let k = n.items.length - 2; k >= 0; k--) s = add(SPLIT, compile(n.items[k]!, next, rev), s);
        return s;
      }
      case "rep": {
        let s = next;
        if (n.max === Infinity) {
          const loop = add(SPLIT, -1, next);
          prog.next[loop] = compile(n.body, loop, rev);
          s = loop;
        } else for (let k = n.min; k < n.max; k++) s = add(SPLIT, compile(n.body, s, rev), next);
        for (let k = 0; k < n.min; k++) s = compile(n.body, s, rev);
        return s;
      }
      case "look": {
        const id = prog.looks.length;
        const look: Look = { negate: n.negate, bounded: bounded(n.body), fwd: -1, rev: -1 };
        prog.looks.push(look);
        look.fwd = compile(n.body, add(MATCH, -1), false);
        if (!look.bounded) look.rev = compile(n.body, add(MATCH, -1), true);
        return add(LOOK, next, -1, null, null, id);
      }
    }
  };
  const start = compile(root, add(MATCH, -1), false);
  return { prog, start };
}

/** Whether a zero-width assertion holds at pos of s. */
export function assertionAt(kind: Assertion, s: string, pos: number): boolean {
  switch (kind) {
    case "start": return pos === 0;
    case "end": return pos === s.length;
    case "notEnd": return pos < s.length && !isLineEnd(s.charCodeAt(pos));
    case "notDotSegmentHere": return !dotSegmentAt(s, pos);
    case "notDotSegment": return !((pos === 0 && dotSegmentAt(s, pos)) || (s.charCodeAt(pos) === SLASH && dotSegmentAt(s, pos + 1)));
    default: {
      const before = pos > 0 && isWordChar(s.charCodeAt(pos - 1));
      const after = pos < s.length && isWordChar(s.charCodeAt(pos));
      return (before !== after) === (kind === "word");
    }
  }
}

/** A set of states, cleared in O(1). */
class StateSet {
  readonly items: Int32Array;
  private readonly mark: Uint32Array;
  private gen = 1;
  len = 0;
  matched = false;
  constructor(size: number) {
    this.items = new Int32Array(size);
    this.mark = new Uint32Array(size);
  }
  clear(): void { this.gen++; this.len = 0; this.matched = false; }
  /** Adds s; false when it was already there. */
  add(s: number): boolean {
    if (this.mark[s] === this.gen) return false;
    this.mark[s] = this.gen;
    this.items[this.len++] = s;
    return true;
  }
}

/** One text being matched: the memo of lookahead answers per position, and scratch sets per nesting depth. */
export class Run {
  private readonly memo: (Int8Array | null)[];
  private readonly stack: number[] = [];
  constructor(private readonly p: Program, private readonly s: string, private readonly sets: StateSet[]) {
    this.memo = p.looks.map(() => null);
  }

  private set(k: number): StateSet {
    const size = this.p.op.length;
    while (this.sets.length <= k) this.sets.push(new StateSet(size));
    const set = this.sets[k]!;
    set.clear();
    return set;
  }

  /** Adds `from` and every state reachable from it without reading, at position pos. */
  private closure(set: StateSet, from: number, pos: number, depth: number): void {
    const { p, stack } = this;
    const base = stack.length;
    stack.push(from);
    while (stack.length > base) {
      const st = stack.pop()!;
      if (!set.add(st)) continue;
      switch (p.op[st]) {
        case SPLIT: stack.push(p.alt[st]!, p.next[st]!); break;
        case ASSERT: if (this.assertion(p.assertion[st]!, pos)) stack.push(p.next[st]!); break;
        case LOOK: if (this.look(p.look[st]!, pos, depth)) stack.push(p.next[st]!); break;
        case MATCH: set.matched = true; break;
      }
    }
  }

  /** Whether the ASSERT or LOOK state st lets the match through at pos. */
  condition(st: number, pos: number): boolean {
    const p = this.p;
    return p.op[st] === ASSERT ? this.assertion(p.assertion[st]!, pos) : this.look(p.look[st]!, pos, 0);
  }

  private assertion(kind: Assertion, pos: number): boolean {
    return assertionAt(kind, this.s, pos);
  }

  private look(id: number, pos: number, depth: number): boolean {
    const l = this.p.looks[id]!;
    let memo = this.memo[id];
    if (!memo) memo = this.memo[id] = new Int8Array(this.s.length + 1);
    if (memo[pos] === 0) {
      if (l.bounded) memo[pos] = this.forward(l.fwd, pos, true, depth + 1) ? 1 : 2;
      else this.backward(l.rev, memo, depth + 1);
    }
    return (memo[pos] === 1) !== l.negate;
  }

  /** Whether the program at `start` matches a prefix of the text from `from` (anchored), or any substring from there on. */
  forward(start: number, from: number, anchored: boolean, depth: number): boolean {
    const { p, s } = this;
    let cur = this.set(2 * depth);
    let nxt = this.set(2 * depth + 1);
    this.closure(cur, start, from, depth);
    for (let pos = from; ; pos++) {
      if (cur.matched) return true;
      if (pos === s.length || (anchored && cur.len === 0)) return false;
      const c = s.charCodeAt(pos);
      nxt.clear();
      for (let k = 0; k < cur.len; k++) {
        const st = cur.items[k]!;
        if (p.op[st] === CHAR && p.test[st]!(c)) this.closure(nxt, p.next[st]!, pos + 1, depth);
      }
      if (!anchored) this.closure(nxt, start, pos + 1, depth);
      [cur, nxt] = [nxt, cur];
    }
  }

  /** memo[pos] for every pos: whether the reversed program at `start` matches some s[pos..end) read right to left. */
  private backward(start: number, memo: Int8Array, depth: number): void {
    const { p, s } = this;
    const cur = this.set(2 * depth);
    const carried: number[] = [];
    for (let pos = s.length; pos >= 0; pos--) {
      cur.clear();
      for (const st of carried) this.closure(cur, st, pos, depth);
      this.closure(cur, start, pos, depth);
      memo[pos] = cur.matched ? 1 : 2;
      carried.length = 0;
      if (pos === 0) break;
      const c = s.charCodeAt(pos - 1);
      for (let k = 0; k < cur.len; k++) {
        const st = cur.items[k]!;
        if (p.op[st] === CHAR && p.test[st]!(c)) carried.push(p.next[st]!);
      }
    }
  }
}

export type TextTest = (text: string) => boolean;

/** The NFA simulation alone: whether the program matches text (anchored when it starts with "^"). */
export function nfaTest(prog: Program, start: number): TextTest {
  const anchored = prog.op[start] === ASSERT && prog.assertion[start] === "start";
  const sets: StateSet[] = [];
  return (text) => new Run(prog, text, sets).forward(start, 0, anchored, 0);
}

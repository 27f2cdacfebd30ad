/**
 * A cache of the NFA simulation's steps (a lazy DFA), so that matching many names against
 * one glob costs a table lookup per character once the states it needs are built. A DFA
 * state is the set of NFA states entered at a position; its closure depends on the
 * assertions it can reach, so closures are cached per state and per outcome of those
 * assertions at the position (a bit mask). Every step is at most one NFA step, so the
 * time stays linear in the text; the cache is cleared between texts once it is large.
 */
import { ASSERT, assertionAt, build, CHAR, LOOK, MATCH, nfaTest, Run, SPLIT, type Program, type TextTest } from "./regex-nfa.js";
import { parseRegex, type Assertion } from "./regex-parse.js";

/** DFA states kept across texts; above this the cache starts afresh. */
const MAX_CACHED_STATES = 1024;

interface Closed {
  matched: boolean;
  /** The CHAR states of the closure. */
  reading: number[];
  /** Next DFA state by character code (ASCII in the array, the rest in the map). */
  ascii: (DfaState | null)[];
  other: Map<number, DfaState>;
}

interface DfaState {
  entered: number[];
  /** The conditions (see Dfa.condition) the closure can meet, whose outcomes key `closed`. */
  conditions: number[];
  closed: Map<number, Closed>;
}

class Dfa {
  private states = new Map<string, DfaState>();
  private readonly stack: number[] = [];
  private readonly mark: Uint32Array;
  private gen = 1;
  /** Per ASSERT/LOOK state, its condition: states of the same assertion kind or the same lookahead share one. */
  private readonly condition: Int32Array;
  /** Per condition: the assertion kind, or a state of the lookahead. */
  private readonly conditionKinds: (Assertion | number)[] = [];

  constructor(private readonly p: Program, private readonly start: number) {
    this.mark = new Uint32Array(p.op.length);
    this.condition = new Int32Array(p.op.length).fill(-1);
    const ids = new Map<string, number>();
    p.op.forEach((op, st) => {
      if (op !== ASSERT && op !== LOOK) return;
      const key = op === ASSERT ? p.assertion[st]! : `look ${p.look[st]}`;
      let id = ids.get(key);
      if (id === undefined) {
        ids.set(key, (id = this.conditionKinds.length));
        this.conditionKinds.push(op === ASSERT ? p.assertion[st]! : st);
      }
      this.condition[st] = id;
    });
  }

  /** How many distinct conditions the program has. */
  get conditionCount(): number {
    return this.conditionKinds.length;
  }

  private intern(entered: number[]): DfaState {
    const key = entered.join(",");
    let st = this.states.get(key);
    if (!st) {
      const met = new Set(this.reach(entered, null).map((s) => this.condition[s]!));
      st = { entered, conditions: [...met].sort((a, b) => a - b), closed: new Map() };
      this.states.set(key, st);
    }
    return st;
  }

  /**
   * The states reachable without reading from `from`. With `pass` null: every ASSERT/LOOK
   * state met (each assumed to pass); else the CHAR states reached, each condition passing
   * when pass says so, and whether MATCH is reached (last element -1).
   */
  private reach(from: number[], pass: ((st: number) => boolean) | null): number[] {
    const { p, stack, mark } = this;
    const gen = ++this.gen;
    const out: number[] = [];
    let matched = false;
    stack.push(...from);
    while (stack.length > 0) {
      const st = stack.pop()!;
      if (mark[st] === gen) continue;
      mark[st] = gen;
      const op = p.op[st];
      if (op === SPLIT) stack.push(p.alt[st]!, p.next[st]!);
      else if (op === ASSERT || op === LOOK) {
        if (!pass) out.push(st);
        if (!pass || pass(st)) stack.push(p.next[st]!);
      } else if (op === CHAR) { if (pass) out.push(st); }
      else if (op === MATCH) matched = true;
    }
    if (pass && matched) out.push(-1);
    return out;
  }

  private close(st: DfaState, mask: number): Closed {
    const bit = new Map(st.conditions.map((c, k) => [c, (mask >>> k) & 1]));
    const reached = this.reach(st.entered, (s) => bit.get(this.condition[s]!) === 1);
    const matched = reached[reached.length - 1] === -1;
    if (matched) reached.pop();
    const closed: Closed = { matched, reading: reached, ascii: new Array(128).fill(null), other: new Map() };
    st.closed.set(mask, closed);
    return closed;
  }

  private step(closed: Closed, c: number): DfaState {
    const p = this.p;
    const next = new Set<number>();
    for (const st of closed.reading) if (p.test[st]!(c)) next.add(p.next[st]!);
    const st = this.intern([...next].sort((a, b) => a - b));
    if (c < 128) closed.ascii[c] = st;
    else closed.other.set(c, st);
    return st;
  }

  test(text: string): boolean {
    if (this.states.size > MAX_CACHED_STATES) this.states = new Map();
    let run: Run | null = null;
    let st = this.intern([this.start]);
    for (let pos = 0; ; pos++) {
      let mask = 0;
      for (let k = 0; k < st.conditions.length; k++) {
        const kind = this.conditionKinds[st.conditions[k]!]!;
        let holds: boolean;
        if (typeof kind === "string") holds = assertionAt(kind, text, pos);
        else holds = (run ??= new Run(this.p, text, [])).condition(kind, pos);
        if (holds) mask |= 1 << k;
      }
      const closed = st.closed.get(mask) ?? this.close(st, mask);
      if (closed.matched) return true;
      if (pos === text.length || closed.reading.length === 0) return false;
      const c = text.charCodeAt(pos);
      st = (c < 128 ? closed.ascii[c] : closed.other.get(c)) ?? this.step(closed, c);
    }
  }
}

export interface LinearOptions {
  /** false keeps picomatch's lookaheads as general lookaheads (default: true; false is for tests). */
  fastLookaheads?: boolean;
  /** "nfa" skips the DFA cache (default: the DFA when the regex starts with "^"; "nfa" is for tests). */
  engine?: "dfa" | "nfa";
}

/**
 * Compiles a regex source (picomatch's output) into a linear-time test, like
 * `new RegExp(source).test`. Throws RegexSyntaxError or Error on what it cannot compile.
 */
export function compileLinear(source: string, opts: LinearOptions = {}): TextTest {
  const { prog, start } = build(parseRegex(source, opts.fastLookaheads ?? true));
  const anchored = prog.op[start] === ASSERT && prog.assertion[start] === "start";
  const dfa = new Dfa(prog, start);
  // The DFA keys closures by a 30-bit mask of conditions; an unanchored search stays on the NFA.
  if (opts.engine === "nfa" || !anchored || dfa.conditionCount > 30) return nfaTest(prog, start);
  return (text) => dfa.test(text);
}

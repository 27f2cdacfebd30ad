import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import picomatch from "picomatch/posix";
import { describe, expect, it } from "vitest";
import { compileGlob } from "../../../lib/search/globs.js";
import { rng as prngOf } from "../../support/prng.js";
import { compileLinear } from "../../../lib/search/regex-dfa.js";
import { expectScaling } from "../../support/scaling.js";

/** A small deterministic generator (test/support/prng.ts), so a failure reproduces. */
const rng = (seed: number): (() => number) => prngOf(seed).next;
const pick = <T,>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;

const GLOB_TOKENS = ["a", "b", "a", "b", ".", "/", "/", "*", "*", "**", "?", "[ab]", "[!a]", "[^b]", "[a-b]", "{a,b}", "{,a}", "{a..c}", "!", "(", ")", "@(", "+(", "!(", "*(", "?(", "!(*.a)", "!(a|b*)", "*.!(a)", "@(a*|b)", "|", "\\", "]", "[", "{", "}", ",", "-", "$", "^", "+"];
const NAME_CHARS = ["a", "b", "a", "b", ".", "/", "c", "!", "["];
const OPTIONS = { dot: true, windows: false } as const;

function randomGlob(r: () => number): string {
  const n = 1 + Math.floor(r() * 7);
  let s = r() < 0.15 ? "!" : "";
  for (let k = 0; k < n; k++) s += pick(r, GLOB_TOKENS);
  return s;
}
function randomName(r: () => number): string {
  const n = Math.floor(r() * 9);
  let s = "";
  for (let k = 0; k < n; k++) s += pick(r, NAME_CHARS);
  return s;
}

/** A name shaped like the glob (its syntax replaced by random bits), so that many pairs match. */
function nameLike(r: () => number, glob: string): string {
  return glob.replace(/[*?[\]{}!()@+|,\\^$-]/g, () => pick(r, ["", "a", "b", ".", "/", "ab", "a/b"]));
}

type Outcome = boolean | "refused";
function reference(glob: string): ((s: string) => Outcome) | "refused" {
  try {
    const m = picomatch(glob, OPTIONS);
    return (s) => m(s);
  } catch {
    return "refused";
  }
}

type Matcher = (s: string) => boolean;

/** Mismatches between picomatch and `make` on `count` random globs, 40 names each. */
function differential(seed: number, count: number, make: (glob: string) => Matcher) {
  const r = rng(seed);
  const mismatches: string[] = [];
  let pairs = 0;
  let refusedByUs = 0;
  let matched = 0;
  for (let k = 0; k < count; k++) {
    const glob = randomGlob(r);
    const names = [glob, "", ...Array.from({ length: 19 }, () => randomName(r)), ...Array.from({ length: 19 }, () => nameLike(r, glob))];
    const ref = reference(glob);
    let ours: Matcher | "refused";
    try {
      ours = make(glob);
    } catch {
      ours = "refused";
    }
    if (ref === "refused" || ours === "refused") {
      if (ref !== ours) mismatches.push(`${JSON.stringify(glob)}: picomatch ${ref === "refused" ? "refuses" : "accepts"}, we ${ours === "refused" ? "refuse" : "accept"}`);
      if (ours === "refused") refusedByUs++;
      continue;
    }
    for (const name of names) {
      pairs++;
      const want = ref(name);
      const got = ours(name);
      if (got) matched++;
      if (want !== got) mismatches.push(`${JSON.stringify(glob)} on ${JSON.stringify(name)}: picomatch ${want}, ours ${got}`);
    }
  }
  return { mismatches: mismatches.slice(0, 20), pairs, refusedByUs, matched };
}

describe("glob matching agrees with picomatch", () => {
  it("compileGlob (what glob, find and grep use): 400 random globs x 40 names from a small alphabet", () => {
    const d = differential(20261123, Number(process.env.GLOB_N ?? 400), (g) => compileGlob(g, "glob"));
    expect(d.mismatches).toEqual([]);
    expect(d.pairs).toBeGreaterThan(14_000);
    expect(d.matched).toBeGreaterThan(1_000); // enough pairs that match, not only ones that do not
    expect(d.refusedByUs).toBe(0);
  });

  // Both engines, with picomatch's lookaheads as O(1) assertions and as general lookaheads.
  for (const engine of ["dfa", "nfa"] as const) {
    for (const fastLookaheads of [true, false]) {
      it(`the ${engine} engine, ${fastLookaheads ? "known lookaheads as assertions" : "every lookahead general"}: 150 globs x 40 names`, () => {
        const d = differential(7 + (engine === "dfa" ? 1 : 2) * (fastLookaheads ? 3 : 5), 150, (glob) => {
          const t = compileLinear(picomatch.makeRe(glob, OPTIONS).source, { engine, fastLookaheads });
          return (s) => s !== "" && (s === glob || t(s));
        });
        expect(d.mismatches).toEqual([]);
        expect(d.pairs).toBeGreaterThan(5_000);
      });
    }
  }
});

describe("glob matching takes time linear in the name", () => {
  const PATHOLOGICAL = "*a*a*a*a*a*a*a*a*b";

  /** A plain linear scan of the text, 100 times over: the unit of time a linear matcher is measured against. */
  const scan100 = (text: string) => {
    let h = 0;
    for (let r = 0; r < 100; r++) for (let k = 0; k < text.length; k++) h = (h * 31 + text.charCodeAt(k)) | 0;
    return h;
  };

  for (const glob of [PATHOLOGICAL, `!${PATHOLOGICAL}`, "!(*a*a*a*a*b)", "*!(*a*b)", "**/*a*a*a*a*a*a*/**/*b", "@(*a|*b)*a*a*a*a*a*b"]) {
    it(`${glob} on 10,000 characters: within a bound of a linear scan, and 4x the name is about 4x the time`, async () => {
      const m = compileGlob(glob, "glob");
      const name = "a".repeat(10_000);
      const long = "a".repeat(40_000);
      expect(m(name)).toBe(picomatch(glob, OPTIONS)("a".repeat(12)));
      // A backtracking matcher needs ~n^8/8! steps here (years); a linear one a constant per character.
      await expectScaling({ what: `${glob} against a plain scan`, small: () => scan100(name), large: () => m(name), bound: (s) => 50 * s + 20, runs: 5 });
      // Linear: 4x the input is ~4x the time (quadratic would be 16x).
      await expectScaling({ what: `${glob} on 10,000 then 40,000 characters`, small: () => m(name), large: () => m(long), bound: (s) => 9 * s + 5, runs: 5 });
    });
  }
});

describe("one place compiles globs", () => {
  it("no source file but lib/search/globs.ts imports picomatch (which would run its backtracking regex)", () => {
    const users: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (/\.tsx?$/.test(e.name) && /from\s+["']picomatch/.test(readFileSync(p, "utf8"))) users.push(p);
      }
    };
    for (const dir of ["lib", "functions", "infra", "scripts"]) {
      try {
        walk(dir);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
      }
    }
    expect(users).toEqual([join("lib", "search", "globs.ts")]);
  });
});

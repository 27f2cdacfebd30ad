import picomatch from "picomatch/posix";
import { describe, expect, it } from "vitest";
import { compileGlob } from "../../../lib/search/globs.js";
import { compileLinear } from "../../../lib/search/regex-nfa.js";

/** A small deterministic generator (mulberry32), so a failure reproduces. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
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

describe("compileGlob agrees with picomatch", () => {
  it("on 200 patterns x 40 names (8,000 pairs) from a small alphabet", () => {
    const r = rng(20261123);
    const mismatches: string[] = [];
    let pairs = 0;
    let refusedByUs = 0;
    let trues = 0;
    for (let k = 0; k < Number(process.env.GLOB_N ?? 200); k++) {
      const glob = randomGlob(r);
      const names = [glob, "", ...Array.from({ length: 19 }, () => randomName(r)), ...Array.from({ length: 19 }, () => nameLike(r, glob))];
      const ref = reference(glob);
      let ours: ((s: string) => boolean) | "refused";
      try {
        ours = compileGlob(glob, "glob");
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
        if (got) trues++;
        if (want !== got) mismatches.push(`${JSON.stringify(glob)} on ${JSON.stringify(name)}: picomatch ${want}, ours ${got}`);
      }
    }
    if (process.env.GLOB_N) console.log({ pairs, refusedByUs, trues });
    expect(mismatches.slice(0, 20)).toEqual([]);
    expect(pairs).toBeGreaterThan(7_000);
    expect(refusedByUs).toBe(0);
  });
});

/** The best of three timings of f, in ms (the least disturbed by other work on the machine). */
function best(f: () => unknown): number {
  let min = Infinity;
  for (let k = 0; k < 3; k++) {
    const t0 = performance.now();
    f();
    min = Math.min(min, performance.now() - t0);
  }
  return min;
}

describe("glob matching takes time linear in the name", () => {
  const PATHOLOGICAL = "*a*a*a*a*a*a*a*a*b";

  for (const glob of [PATHOLOGICAL, `!${PATHOLOGICAL}`, "!(*a*a*a*a*b)", "*!(*a*b)", "**/*a*a*a*a*a*a*/**/*b", "@(*a|*b)*a*a*a*a*a*b"]) {
    it(`${glob} on 10,000 characters: within a small factor of "*b" (one star), and 4x the name is about 4x the time`, () => {
      const m = compileGlob(glob, "glob");
      const one = compileGlob("*b", "glob");
      const name = "a".repeat(10_000);
      const long = "a".repeat(40_000);
      expect(m(name)).toBe(picomatch(glob, OPTIONS)("a".repeat(12)));
      const tOne = best(() => one(name));
      const t = best(() => m(name));
      const tLong = best(() => m(long));
      // A backtracking matcher needs ~n^8/8! steps here; linear-time: a constant factor (the pattern's size).
      expect(t).toBeLessThan(100 * tOne + 5);
      // Linear: 4x the input is ~4x the time (quadratic would be 16x).
      expect(tLong).toBeLessThan(9 * t + 5);
    });
  }
});

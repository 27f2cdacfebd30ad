/**
 * Line-mode search of a block (text-search.ts): the regex runs only on the lines that hold every
 * required substring, and a block with no such line is counted without being split. Whatever the
 * shortcut, the matching lines, their numbers and the lines counted are those of the regex run on
 * every line.
 */
import { describe, expect, it } from "vitest";
import { RE2JS } from "re2js";
import { compileMatcher } from "../../../lib/search/matcher.js";
import { TextSearch } from "../../../lib/search/text-search.js";

/** Line numbers (1-based) of the lines the regex finds a match in, run on each line alone. */
function naive(pattern: string, lines: string[]): number[] {
  const re = RE2JS.compile(pattern);
  return lines.flatMap((l, i) => (re.matcher(l).find() ? [i + 1] : []));
}

/** The lines TextSearch reports, fed as blocks of `per` lines each, and the lines it counted. */
function searched(pattern: string, lines: string[], per: number, before = 0): { found: number[]; lines: number; before: string[][] } {
  const s = new TextSearch(compileMatcher({ pattern, literal: false, caseInsensitive: false, multiline: false }), { before, after: 0, maxMatches: 1_000_000 });
  for (let i = 0; i < lines.length; i += per) {
    const chunk = lines.slice(i, i + per);
    // Whole lines, each ending with its line break (the splitter's blocks); a file's last block may lack
    // it, which only matters to the count when its last line is empty (then there is no such line).
    const last = i + per >= lines.length && lines.length % 3 === 0 && lines.at(-1) !== "";
    s.block(chunk.join("\n") + (last ? "" : "\n"));
  }
  s.finish();
  return { found: s.result.matches.map((m) => m.line), lines: s.lines, before: s.result.matches.map((m) => m.before) };
}

describe("TextSearch.block", () => {
  it("finds exactly the lines the regex matches line by line, whatever the block size (random patterns and texts)", () => {
    let seed = 11;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n);
    const atoms = ["a", "b", "=>", "=", ">", "{", "\\{", "\\w+", "\\s*", "\\d+", ".", "[ab]", "(ab)?", "b*", "c{2}", "x?", "\\bab", "^", "$", "é", "😀", " "];
    const alphabet = ["a", "b", "c", "=", ">", "{", " ", "1", ".", "x", "é", "😀", "=>", "ab"];
    let withMatches = 0;
    let checked = 0;
    for (let p = 0; p < 300; p++) {
      const pattern = Array.from({ length: 1 + rnd(5) }, () => atoms[rnd(atoms.length)]).join("");
      try {
        RE2JS.compile(pattern);
      } catch {
        continue;
      }
      const lines = Array.from({ length: 1 + rnd(80) }, () => Array.from({ length: rnd(12) }, () => alphabet[rnd(alphabet.length)]).join(""));
      const want = naive(pattern, lines);
      for (const per of [1, 7, 1000]) {
        const got = searched(pattern, lines, per);
        expect(got.found, `${pattern} over ${JSON.stringify(lines)} in blocks of ${per}`).toEqual(want);
        expect(got.lines).toBe(lines.length);
        checked++;
      }
      if (want.length > 0) withMatches++;
    }
    expect(checked).toBeGreaterThan(600);
    expect(withMatches).toBeGreaterThan(50);
  });

  it("keeps context lines and numbering across blocks it passes over", () => {
    const lines = Array.from({ length: 50 }, (_, i) => (i === 41 ? "const f = x => { return 1; };" : `line ${i} => nothing here`));
    const got = searched("\\w+\\s*=>\\s*\\{", lines, 10, 2);
    expect(got.found).toEqual([42]);
    expect(got.before).toEqual([["line 39 => nothing here", "line 40 => nothing here"]]);
    expect(got.lines).toBe(50);
  });

  it("tests the whole block when most of its lines hold the required substrings, with the same result", () => {
    // Every line holds " ": the lines to test are the block itself.
    const lines = Array.from({ length: 400 }, (_, i) => `abcdefgh ${i % 100_000}`);
    expect(searched("(a|b|c|d|e|f|g|h)+ \\d{3}", lines, 100).found).toEqual(naive("(a|b|c|d|e|f|g|h)+ \\d{3}", lines));
  });
});

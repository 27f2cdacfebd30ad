/** The substrings every match needs (regex-query.ts requiredLiterals): what they are, and that no match lacks one. */
import { describe, expect, it } from "vitest";
import { RE2JS } from "re2js";
import { requiredLiterals } from "../../../lib/search/regex-query.js";
import { compileMatcher } from "../../../lib/search/matcher.js";

describe("requiredLiterals", () => {
  it("takes the literal runs of the top-level sequence", () => {
    expect(requiredLiterals("\\w+\\s*=>\\s*\\{", false)).toEqual(["=>", "{"]);
    expect(requiredLiterals("function\\s+(\\w+)", false)).toEqual(["function"]);
    expect(requiredLiterals("ab?c", false)).toEqual(["a", "c"]);
    expect(requiredLiterals("x{2,4}y", false)).toEqual(["xx", "y"]);
    expect(requiredLiterals("\\Qa.b\\E", false)).toEqual(["a.b"]);
  });

  it("gives nothing where it cannot be sure", () => {
    expect(requiredLiterals("foo|bar", false)).toEqual([]);
    expect(requiredLiterals("(?i)foo", false)).toEqual([]);
    expect(requiredLiterals("(?P<n>foo)", false)).toEqual([]);
    expect(requiredLiterals("foo", true)).toEqual([]);
    expect(requiredLiterals("(foo)*bar(", false)).toEqual([]);
    expect(requiredLiterals("\\w+", false)).toEqual([]);
  });

  it("is dropped for literals with a line break, case-insensitive and multiline searches", () => {
    expect(compileMatcher({ pattern: "a\\nb", literal: false, caseInsensitive: false, multiline: false }).required).toEqual([]);
    expect(compileMatcher({ pattern: "a\nb", literal: true, caseInsensitive: false, multiline: false }).required).toEqual([]);
    expect(compileMatcher({ pattern: "Foo", literal: true, caseInsensitive: true, multiline: false }).required).toEqual([]);
    expect(compileMatcher({ pattern: "Foo", literal: false, caseInsensitive: false, multiline: true }).required).toEqual([]);
    expect(compileMatcher({ pattern: "a.b(c", literal: true, caseInsensitive: false, multiline: false }).required).toEqual(["a.b(c"]);
  });

  it("never excludes a line the regex matches (random patterns over random lines)", () => {
    let seed = 7;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n);
    const atoms = ["a", "b", "=", ">", "{", "\\{", "\\w", "\\s*", "\\d+", ".", "[ab]", "(ab)?", "(a|b)", "b*", "a+", "c{2}", "x?", "\\bab", "^", "$", "\\.", "é", "😀"];
    const alphabet = ["a", "b", "c", "=", ">", "{", " ", "1", ".", "x", "é", "😀"];
    let checked = 0;
    for (let p = 0; p < 400; p++) {
      const pattern = Array.from({ length: 1 + rnd(6) }, () => atoms[rnd(atoms.length)]).join("");
      let re: RE2JS;
      try {
        re = RE2JS.compile(pattern);
      } catch {
        continue;
      }
      const req = requiredLiterals(pattern, false);
      for (let l = 0; l < 60; l++) {
        const line = Array.from({ length: rnd(14) }, () => alphabet[rnd(alphabet.length)]).join("");
        if (re.matcher(line).find()) {
          checked++;
          for (const r of req) expect(line.includes(r), `${pattern} matched ${JSON.stringify(line)} without ${JSON.stringify(r)}`).toBe(true);
        }
      }
    }
    expect(checked).toBeGreaterThan(1000);
  });
});

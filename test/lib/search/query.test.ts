import { RE2JS } from "re2js";
import { describe, expect, it } from "vitest";
import { evalQuery, leaves, literalQuery, type Query } from "../../../lib/search/query.js";
import { regexQuery } from "../../../lib/search/regex-query.js";
import { foldBytes, literalTrigrams, TrigramCollector, trigramText } from "../../../lib/search/trigrams.js";

const enc = new TextEncoder();
const collector = new TrigramCollector();
const trigramsOf = (text: string) => new Set(collector.collect(enc.encode(text)));
const shown = (q: Query): unknown => {
  if (q.op === "tri") return trigramText(q.t);
  if (q.op === "and" || q.op === "or") return { [q.op]: q.of.map(shown) };
  return q.op;
};

describe("trigrams", () => {
  it("folds ASCII case, the Kelvin sign and long s, and CRLF", () => {
    expect(new TextDecoder().decode(foldBytes(enc.encode("AbC\r\nx\rY")))).toBe("abc\nx\ry");
    expect(new TextDecoder().decode(foldBytes(enc.encode("\u212Aey \u017Fun")))).toBe("key sun");
    expect(literalTrigrams("Hello").map(trigramText)).toEqual(["hel", "ell", "llo"]);
    expect(literalTrigrams("ab")).toEqual([]);
  });

  it("collects each distinct trigram once, sorted, and clears its bitset between calls", () => {
    const a = collector.collect(enc.encode("abcabcabc"));
    expect([...a].map(trigramText)).toEqual(["abc", "bca", "cab"]);
    const b = collector.collect(enc.encode("xyz"));
    expect([...b].map(trigramText)).toEqual(["xyz"]);
  });

  it("collects the trigrams of the folded bytes (it folds as it goes): the same as foldBytes then every window", () => {
    let seed = 3;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) / (1 << 24);
    const pieces = [[0x61], [0x5a], [0x7a], [0x0d], [0x0a], [0x0d, 0x0a], [0xe2, 0x84, 0xaa], [0xe2, 0x84], [0xc5, 0xbf], [0xc5], [0xff], [0x41]];
    for (let round = 0; round < 300; round++) {
      const bytes: number[] = [];
      const n = Math.floor(rnd() * 12);
      for (let i = 0; i < n; i++) bytes.push(...pieces[Math.floor(rnd() * pieces.length)]!);
      const f = foldBytes(new Uint8Array(bytes));
      const want = new Set<number>();
      for (let i = 0; i + 2 < f.length; i++) want.add((f[i]! << 16) | (f[i + 1]! << 8) | f[i + 2]!);
      expect([...collector.collect(new Uint8Array(bytes))]).toEqual([...want].sort((x, y) => x - y));
    }
  });
});

describe("regexQuery", () => {
  it("takes literals, alternations and mandatory groups; drops optional parts", () => {
    expect(shown(regexQuery("handleWebhook", false))).toEqual({ and: ["han", "and", "ndl", "dle", "lew", "ewe", "web", "ebh", "bho", "hoo", "ook"] });
    expect(shown(regexQuery("foo|barx", false))).toEqual({ or: ["foo", { and: ["bar", "arx"] }] });
    expect(shown(regexQuery("(abc)?defg", false))).toEqual({ and: ["def", "efg"] });
    expect(shown(regexQuery("(abc)+de", false))).toEqual("abc");
    expect(shown(regexQuery("abc+def", false))).toEqual({ and: ["abc", "def"] });
    expect(shown(regexQuery("ab+cd", false))).toBe("all");
    expect(shown(regexQuery("x{3}yz", false))).toEqual({ and: ["xxx", "xxy", "xyz"] });
    expect(shown(regexQuery("a.*b", false))).toBe("all");
    expect(shown(regexQuery("\\w+Error\\(", false))).toEqual({ and: ["err", "rro", "ror", "or("] });
    expect(shown(regexQuery("\\Qa.b*c\\E", false))).toEqual({ and: ["a.b", ".b*", "b*c"] });
    expect(shown(regexQuery("[abc]def", false))).toBe("def");
    expect(shown(regexQuery("foo(bar|baz)qux", false))).toEqual({ and: ["foo", { or: ["bar", "baz"] }, "qux"] });
    expect(shown(regexQuery("foo|.*", false))).toBe("all");
    expect(shown(regexQuery("\\x41BC", false))).toEqual("abc");
  });

  it("cuts literals at non-ASCII letters when matching ignores case", () => {
    expect(shown(literalQuery("caféteria", false))).toEqual({ and: ["caf", "af\xc3", "f\xc3\xa9", "\xc3\xa9t", "\xa9te", "ter", "eri", "ria"] });
    expect(shown(literalQuery("caféteria", true))).toEqual({ and: ["caf", "ter", "eri", "ria"] });
    expect(shown(regexQuery("(?i)caféteria", false))).toEqual({ and: ["caf", "ter", "eri", "ria"] });
  });

  it("is ALL for anything it does not understand", () => {
    for (const p of ["(?<name>abc", "a{", "\\", "[abc", "\\pL+abc"]) expect(() => regexQuery(p, false)).not.toThrow();
    expect(regexQuery("\\z", false)).toEqual({ op: "all" });
  });

  it("never excludes a file that has a matching line (random patterns and texts)", () => {
    let seed = 12345;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    const alphabet = ["a", "b", "c", "A", "B", "K", "\u212A", "s", "\u017F", "é", "É", "\r", " ", "x"];
    const atoms = ["a", "b", "c", "ab", "abc", "K", "k", "s", "é", ".", "[ab]", "\\w", "\\s", "\\d", "(ab|c)", "(abc)?", "(?:ba)+", "x{2}", "b*", "c+", "a?", "\\Qa.c\\E", "^", "$", "\\b"];
    let checked = 0;
    for (let n = 0; n < 3000; n++) {
      const k = 1 + rnd(5);
      let pattern = "";
      for (let i = 0; i < k; i++) pattern += atoms[rnd(atoms.length)];
      if (rnd(6) === 0) pattern = `${pattern}|${atoms[rnd(atoms.length)]}${atoms[rnd(atoms.length)]}`;
      const ci = rnd(3) === 0;
      let re: RE2JS;
      try {
        re = RE2JS.compile(pattern, ci ? RE2JS.CASE_INSENSITIVE : 0);
      } catch {
        continue;
      }
      const q = regexQuery(pattern, ci);
      for (let m = 0; m < 20; m++) {
        let text = "";
        const len = rnd(14);
        for (let i = 0; i < len; i++) text += alphabet[rnd(alphabet.length)];
        const lines = text.replaceAll("\r\n", "\n").split("\n");
        if (!lines.some((l) => re.matcher(l).find())) continue;
        const tris = trigramsOf(text);
        checked++;
        expect(evalQuery(q, (t) => tris.has(t)), `${pattern} (ci ${ci}) on ${JSON.stringify(text)}`).toBe(true);
      }
    }
    expect(checked).toBeGreaterThan(1000);
  });

  it("keeps queries bounded", () => {
    expect(leaves(regexQuery("a".repeat(5000), false)).length).toBeLessThanOrEqual(256);
  });
});

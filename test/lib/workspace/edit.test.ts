import { describe, expect, it } from "vitest";
import { applyEdit, assertEditSize, shortDiff, utf8Length } from "../../../lib/workspace/edit.js";
import { ToolError } from "../../../lib/shared/errors.js";
import { MAX_EDIT_BYTES } from "../../../lib/workspace/text-file.js";

function fails(fn: () => unknown): ToolError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ToolError);
    return e as ToolError;
  }
  throw new Error("expected a ToolError");
}

describe("applyEdit", () => {
  it("replaces one unique match", () => {
    expect(applyEdit("let a = 1;\nlet b = 2;\n", { old_string: "b = 2", new_string: "b = 3" }, "f.ts")).toEqual({ text: "let a = 1;\nlet b = 3;\n", count: 1, bytes: 22 });
  });

  it("takes new_string literally ($& and $1 are not patterns)", () => {
    expect(applyEdit("price\n", { old_string: "price", new_string: "$& $1 $$" }, "f").text).toBe("$& $1 $$\n");
    expect(applyEdit("a a\n", { old_string: "a", new_string: "$&$&", replace_all: true }, "f").text).toBe("$&$& $&$&\n");
  });

  it("an empty new_string deletes the match", () => {
    expect(applyEdit("keep\ndrop me\nkeep\n", { old_string: "drop me\n", new_string: "" }, "f").text).toBe("keep\nkeep\n");
  });

  it("replace_all replaces every occurrence and counts them", () => {
    expect(applyEdit("x.y x.y\nx.y\n", { old_string: "x.y", new_string: "z", replace_all: true }, "f")).toEqual({ text: "z z\nz\n", count: 3, bytes: 6 });
    // replace_all with one match is fine too.
    expect(applyEdit("one\n", { old_string: "one", new_string: "1", replace_all: true }, "f")).toEqual({ text: "1\n", count: 1, bytes: 2 });
  });

  it("counts matches without overlap", () => {
    expect(applyEdit("aaa", { old_string: "aa", new_string: "b" }, "f")).toEqual({ text: "ba", count: 1, bytes: 2 });
    expect(applyEdit("aaaa", { old_string: "aa", new_string: "b", replace_all: true }, "f")).toEqual({ text: "bb", count: 2, bytes: 2 });
  });

  it("NOT_UNIQUE names the line of every match", () => {
    const e = fails(() => applyEdit("foo()\nbar\nfoo()\n\nfoo() foo()\n", { old_string: "foo()", new_string: "baz()" }, "src/x.ts"));
    expect(e.code).toBe("NOT_UNIQUE");
    expect(e.details).toMatchObject({ path: "src/x.ts", count: 4, lines: [1, 3, 5, 5] });
    expect(e.message).toContain("lines 1, 3, 5, 5");
    expect(e.message).toContain("replace_all");
  });

  it("NO_MATCH shows the nearest lines with whitespace made visible", () => {
    const text = "function f() {\n\tif (ready) {\n\t\treturn 1;\n\t}\n}\n";
    const e = fails(() => applyEdit(text, { old_string: "if (ready) {\n    return 2;", new_string: "x" }, "f.ts"));
    expect(e.code).toBe("NO_MATCH");
    const candidates = e.details.candidates as { line: number; text: string }[];
    expect(candidates[0]).toEqual({ line: 2, text: "→if·(ready)·{" });
    expect(e.message).toContain("2: →if·(ready)·{");
    expect(e.details.whitespace_only).toBe(false);
  });

  it("NO_MATCH says when only whitespace differs", () => {
    const text = "function f() {\n\tif (ready) {\n\t\treturn 1;\n\t}\n}\n";
    const e = fails(() => applyEdit(text, { old_string: "  if (ready) {\n    return 1;", new_string: "x" }, "f.ts"));
    expect(e.code).toBe("NO_MATCH");
    expect(e.details.whitespace_only).toBe(true);
    expect(e.message).toContain("whitespace");
    expect(e.message).toContain("Your first line: ··if·(ready)·{");
  });

  it("NO_MATCH with nothing similar says to read again", () => {
    const e = fails(() => applyEdit("alpha\nbeta\n", { old_string: "zzzzqqqq", new_string: "x" }, "f"));
    expect(e.code).toBe("NO_MATCH");
    expect(e.details.candidates).toEqual([]);
    expect(e.message).toContain("Read the file again");
  });

  it("refuses identical strings and an empty old_string", () => {
    expect(fails(() => applyEdit("a", { old_string: "a", new_string: "a" }, "f")).code).toBe("INVALID_ARGUMENT");
    expect(fails(() => applyEdit("a", { old_string: "", new_string: "b" }, "f")).code).toBe("INVALID_ARGUMENT");
  });

  it("labels errors (multi_edit names the edit)", () => {
    expect(fails(() => applyEdit("a", { old_string: "zzz", new_string: "b" }, "f", "edits[2]: ")).message.startsWith("edits[2]: ")).toBe(true);
    expect(fails(() => applyEdit("a a", { old_string: "a", new_string: "b" }, "f", "edits[1]: ")).message.startsWith("edits[1]: ")).toBe(true);
  });

  it("keeps CRLF line endings when old and new strings use LF", () => {
    const crlf = "one\r\ntwo\r\nthree\r\n";
    expect(applyEdit(crlf, { old_string: "one\ntwo", new_string: "1\n2\n2.5" }, "f").text).toBe("1\r\n2\r\n2.5\r\nthree\r\n");
    // CRLF in the strings works as well.
    expect(applyEdit(crlf, { old_string: "two\r\nthree", new_string: "2\r\n3" }, "f").text).toBe("one\r\n2\r\n3\r\n");
    // Deleting whole lines.
    expect(applyEdit(crlf, { old_string: "two\n", new_string: "" }, "f").text).toBe("one\r\nthree\r\n");
  });

  it("in a CRLF file, strings that differ only in line endings change nothing: INVALID_ARGUMENT", () => {
    const e = fails(() => applyEdit("a\r\nb\r\n", { old_string: "a\r\nb", new_string: "a\nb" }, "f"));
    expect(e.code).toBe("INVALID_ARGUMENT");
    expect(e.message).toContain("line endings");
  });

  it("leaves LF files and unicode alone", () => {
    expect(applyEdit("héllo 😀\nwörld\n", { old_string: "😀\nw", new_string: "🎉\nW" }, "f").text).toBe("héllo 🎉\nWörld\n");
  });
});

describe("applyEdit: canonically equivalent text (Unicode NFC) matches", () => {
  const nfd = (s: string) => s.normalize("NFD");
  const nfc = (s: string) => s.normalize("NFC");

  it("a decomposed file (e + U+0301) takes a composed old_string; only the match is respelled", () => {
    const text = nfd('const a = "José";\nconst b = "Müller";\n');
    const r = applyEdit(text, { old_string: 'a = "José";', new_string: 'a = "Ana";' }, "f");
    // The other line keeps its decomposed spelling, byte for byte.
    expect(r).toMatchObject({ text: `const a = "Ana";\n${nfd('const b = "Müller";')}\n`, count: 1, unicodeNormalized: true });
    expect(r.bytes).toBe(utf8Length(r.text));
  });

  it("a composed file takes a decomposed old_string", () => {
    const r = applyEdit(nfc("naïve café\n"), { old_string: nfd("café"), new_string: "bar" }, "f");
    expect(r).toMatchObject({ text: "naïve bar\n", count: 1, unicodeNormalized: true });
  });

  it("an exact match needs no normalization and says none", () => {
    const r = applyEdit(nfd("José\n"), { old_string: nfd("José"), new_string: "x" }, "f");
    expect(r).toEqual({ text: "x\n", count: 1, bytes: 2 });
  });

  it("keeps the rules: NOT_UNIQUE with every line, replace_all, CRLF, and the size bound", () => {
    const text = nfd("é\nx\né\n");
    const e = fails(() => applyEdit(text, { old_string: "é", new_string: "e" }, "f"));
    expect(e.code).toBe("NOT_UNIQUE");
    expect(e.details).toMatchObject({ count: 2, lines: [1, 3] });
    expect(applyEdit(text, { old_string: "é", new_string: "e", replace_all: true }, "f")).toMatchObject({ text: "e\nx\ne\n", count: 2 });
    expect(applyEdit(nfd("Zoë\r\nend\r\n"), { old_string: "Zoë\nend", new_string: "Zoe\nEND" }, "f").text).toBe("Zoe\r\nEND\r\n");
    expect(fails(() => applyEdit(nfd("é"), { old_string: "é", new_string: "abc" }, "f", "", 2)).code).toBe("FILE_TOO_LARGE");
  });

  it("CJK, emoji and text that normalization leaves alone still say NO_MATCH", () => {
    expect(fails(() => applyEdit(nfd("日本語 é 😀\n"), { old_string: "日本 é", new_string: "x" }, "f")).code).toBe("NO_MATCH");
    expect(applyEdit(nfd("日本語 é 😀\n"), { old_string: "語 é 😀", new_string: "x" }, "f").text).toBe("日本x\n");
  });
});

describe("applyEdit: the size of the result is bounded before it is built", () => {
  const MiB = 1024 * 1024;

  it("utf8Length counts UTF-8 bytes as TextEncoder does", () => {
    for (const s of ["", "abc", "é", "€", "😀", "a😀b\n", "\uD800", "x\uDC00y", "大阪 Grüße 👋🏽"]) expect(utf8Length(s), s).toBe(new TextEncoder().encode(s).length);
    // A long ASCII run, then every kind of character after it (the run is counted at once).
    const ascii = "const x = 1; // \u007f\t\n".repeat(700);
    for (const tail of ["", "é", "😀 end", "\uD800", "\u0080", "x\uDC00"]) expect(utf8Length(ascii + tail), JSON.stringify(tail)).toBe(new TextEncoder().encode(ascii + tail).length);
    // A surrogate pair across each place a chunk of 8,192 units could end, and lone halves there.
    for (let at = 8185; at <= 8194; at++) {
      for (const odd of ["😀", "\uD83D", "\uDE00", "\uDE00\uD83D", "é😀"]) {
        const s = "a".repeat(at) + odd + "b".repeat(20_000);
        expect(utf8Length(s), `${at} ${JSON.stringify(odd)}`).toBe(new TextEncoder().encode(s).length);
      }
    }
  });

  it("replace_all of x by 1,000 y in a 100 KB file: FILE_TOO_LARGE at once, naming the limit and the size it would have had", () => {
    const text = "x".repeat(100_000) + "\n";
    const t0 = Date.now();
    const e = fails(() => applyEdit(text, { old_string: "x", new_string: "y".repeat(1000), replace_all: true }, "big.txt"));
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(e.code).toBe("FILE_TOO_LARGE");
    expect(e.details).toMatchObject({ path: "big.txt", size: 100_000 * 1000 + 1, limit: MAX_EDIT_BYTES, replacements: 100_000 });
    expect(e.message).toContain("100,000,001 bytes");
    expect(e.message).toContain("10 MiB (10,485,760 bytes)");
    expect(e.message).toContain("nothing was written");
  });

  it("exactly at the limit is allowed; one byte over is refused (ASCII, UTF-8, CRLF)", () => {
    // ASCII: 10 bytes → 20 bytes.
    expect(applyEdit("abcdefghij", { old_string: "j", new_string: "j".repeat(11) }, "f", "", 20).bytes).toBe(20);
    expect(fails(() => applyEdit("abcdefghij", { old_string: "j", new_string: "j".repeat(12) }, "f", "", 20)).details).toMatchObject({ size: 21, limit: 20 });
    // UTF-8: é is 2 bytes, 😀 4: "aaaa" → "éé😀" is 8 bytes.
    expect(applyEdit("aaaa", { old_string: "a", new_string: "é", replace_all: true }, "f", "", 8)).toMatchObject({ text: "éééé", bytes: 8 });
    expect(fails(() => applyEdit("aaaa", { old_string: "a", new_string: "😀", replace_all: true }, "f", "", 15)).details).toMatchObject({ size: 16 });
    expect(applyEdit("aaaa", { old_string: "a", new_string: "😀", replace_all: true }, "f", "", 16).bytes).toBe(16);
    // CRLF: each inserted newline is written as \r\n (2 bytes). "a\r\nb\r\n" (6) → "a\r\nx\r\ny\r\nb\r\n" (12).
    const crlf = "a\r\nb\r\n";
    const r = applyEdit(crlf, { old_string: "a\n", new_string: "a\nx\ny\n" }, "f", "", 12);
    expect(r).toMatchObject({ text: "a\r\nx\r\ny\r\nb\r\n", bytes: 12 });
    expect(new TextEncoder().encode(r.text).length).toBe(12);
    expect(fails(() => applyEdit(crlf, { old_string: "a\n", new_string: "a\nx\ny\n" }, "f", "", 11)).details).toMatchObject({ size: 12, limit: 11 });
  });

  it("at the real limit: a 10 MiB result passes, 10 MiB + 1 byte does not", () => {
    const text = "x".repeat(MiB) + "\n";
    const grow = (n: number) => ({ old_string: "\n", new_string: "y".repeat(n) + "\n" });
    expect(applyEdit(text, grow(MAX_EDIT_BYTES - MiB - 1), "f").bytes).toBe(MAX_EDIT_BYTES);
    expect(fails(() => applyEdit(text, grow(MAX_EDIT_BYTES - MiB), "f")).code).toBe("FILE_TOO_LARGE");
  });

  it("the label names the edit (multi_edit), and assertEditSize is the same rule for new files", () => {
    const e = fails(() => applyEdit("ab", { old_string: "a", new_string: "aaaa" }, "f", "edits[3]: ", 4));
    expect(e.message.startsWith("edits[3]: this edit would make f 5 bytes")).toBe(true);
    expect(() => assertEditSize(MAX_EDIT_BYTES, "f")).not.toThrow();
    expect(fails(() => assertEditSize(MAX_EDIT_BYTES + 1, "f")).code).toBe("FILE_TOO_LARGE");
  });

  it("NOT_UNIQUE lists at most 50 lines and counts the rest, without a quadratic scan", () => {
    const text = "dup\n".repeat(200_000);
    const t0 = Date.now();
    const e = fails(() => applyEdit(text, { old_string: "dup", new_string: "one" }, "f"));
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(e.details.count).toBe(200_000);
    expect((e.details.lines as number[]).slice(0, 3)).toEqual([1, 2, 3]);
    expect(e.details.lines).toHaveLength(50);
    expect(e.message).toContain("and 199950 more");
  });
});

describe("applyEdit: line-number prefixes pasted from read", () => {
  const text = "const a = 1;\nconst b = 2;\n\tif (a) {\n";

  it("NO_MATCH says to drop the prefixes when the text without them is in the file", () => {
    const e = fails(() => applyEdit(text, { old_string: "     1\tconst a = 1;\n     2\tconst b = 2;", new_string: "x" }, "f.ts"));
    expect(e.code).toBe("NO_MATCH");
    expect(e.message).toContain(`old_string starts with line-number prefixes from read's output (e.g. "     1\\t": spaces, the line number and a tab, as in details.example_prefix); drop that prefix from every line and retry`);
    expect(e.details).toMatchObject({ line_number_prefix: true, example_prefix: "     1\t" });
    // The → rendering and a single line work too (the message shows the prefix as pasted); a tab-indented line keeps its tab after the prefix.
    const arrow = fails(() => applyEdit(text, { old_string: "     3→\tif (a) {", new_string: "x" }, "f.ts"));
    expect(arrow.details).toMatchObject({ line_number_prefix: true, example_prefix: "     3→" });
    expect(arrow.message).toContain('(e.g. "     3→": spaces, the line number and →,');
    expect(fails(() => applyEdit(text, { old_string: "    12\tconst a = 1;\n", new_string: "x" }, "f.ts")).details.line_number_prefix).toBe(true);
  });

  it("is not claimed when a line lacks the prefix or the rest does not match", () => {
    expect(fails(() => applyEdit(text, { old_string: "     1\tconst a = 1;\nconst b = 2;", new_string: "x" }, "f.ts")).details.line_number_prefix).toBe(false);
    expect(fails(() => applyEdit(text, { old_string: "     1\tconst a = 9;", new_string: "x" }, "f.ts")).details.line_number_prefix).toBe(false);
  });

  it("names the edit in multi_edit", () => {
    expect(fails(() => applyEdit(text, { old_string: "     2\tconst b = 2;", new_string: "x" }, "f.ts", "edits[1]: ")).message).toMatch(/^edits\[1\]: .*line-number prefixes/);
  });
});

describe("shortDiff", () => {
  it("shows the changed line with context", () => {
    const before = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
    const after = "1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n";
    expect(shortDiff("a.txt", before, after)).toBe(["--- a/a.txt", "+++ b/a.txt", "@@ -2,7 +2,7 @@", " 2", " 3", " 4", "-5", "+FIVE", " 6", " 7", " 8"].join("\n"));
  });

  it("has no phantom empty line for the final newline", () => {
    expect(shortDiff("f", "a\nb\nc\n", "a\nB\nc\n")).toBe(["--- a/f", "+++ b/f", "@@ -1,3 +1,3 @@", " a", "-b", "+B", " c"].join("\n"));
  });

  it("diffs a new file against nothing", () => {
    expect(shortDiff("f", "", "x\ny\n")).toBe(["--- a/f", "+++ b/f", "@@ -0,0 +1,2 @@", "+x", "+y"].join("\n"));
    expect(shortDiff("f", "x\n", "")).toBe(["--- a/f", "+++ b/f", "@@ -1,1 +0,0 @@", "-x"].join("\n"));
  });

  it("marks a missing final newline", () => {
    expect(shortDiff("f", "a\nb", "a\nc")).toBe(["--- a/f", "+++ b/f", "@@ -1,2 +1,2 @@", " a", "-b", "\\ No newline at end of file", "+c", "\\ No newline at end of file"].join("\n"));
    expect(shortDiff("f", "a", "a\n")).toBe(["--- a/f", "+++ b/f", "@@ -1,1 +1,1 @@", "-a", "\\ No newline at end of file", "+a"].join("\n"));
  });

  it("finds the changed line wherever it falls against the scans' 512-char steps, from the start and from the end", () => {
    // Lines of 1 to 40 chars: the change falls before, on and after every step boundary of the common prefix and suffix scans.
    const lines = Array.from({ length: 400 }, (_, i) => `${i}:${"x".repeat(i % 37)}`);
    const before = lines.join("\n") + "\n";
    for (let k = 0; k < lines.length; k += 3) {
      for (const changed of [`${lines[k]}!`, lines[k]!.slice(0, -1) + "y", `new ${k}\n${lines[k]}?`]) {
        const after = [...lines.slice(0, k), changed, ...lines.slice(k + 1)].join("\n") + "\n";
        const from = Math.max(0, k - 3), to = Math.min(lines.length, k + 4);
        const added = changed.split("\n");
        const expected = ["--- a/f", "+++ b/f", `@@ -${from + 1},${to - from} +${from + 1},${to - from + added.length - 1} @@`, ...lines.slice(from, k).map((l) => ` ${l}`), `-${lines[k]}`, ...added.map((l) => `+${l}`), ...lines.slice(k + 1, to).map((l) => ` ${l}`)];
        expect(shortDiff("f", before, after), `line ${k}`).toBe(expected.join("\n"));
      }
    }
  });

  it("ignores CRLF vs LF and counts lines of insertions and deletions", () => {
    expect(shortDiff("f", "a\r\nb\r\n", "a\r\nx\r\nb\r\n")).toBe(["--- a/f", "+++ b/f", "@@ -1,2 +1,3 @@", " a", "+x", " b"].join("\n"));
  });

  it("is cut at maxLines", () => {
    const after = Array.from({ length: 200 }, (_, i) => `line ${i}`).join("\n") + "\n";
    const d = shortDiff("f", "", after, 3, 20);
    const lines = d.split("\n");
    expect(lines.length).toBe(21);
    expect(lines[20]).toBe("... (183 more diff lines)");
  });
});

describe("shortDiff: minimal, bounded", () => {
  const numbered = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`).join("\n") + "\n";

  it("two edits far apart: two hunks with only the changed lines", () => {
    const before = numbered(40);
    const after = before.replace("line 5\n", "LINE 5\n").replace("line 35\n", "LINE 35\n");
    expect(shortDiff("f", before, after)).toBe(
      ["--- a/f", "+++ b/f",
        "@@ -2,7 +2,7 @@", " line 2", " line 3", " line 4", "-line 5", "+LINE 5", " line 6", " line 7", " line 8",
        "@@ -32,7 +32,7 @@", " line 32", " line 33", " line 34", "-line 35", "+LINE 35", " line 36", " line 37", " line 38"].join("\n"),
    );
  });

  it("an inserted line between unchanged lines shows no unchanged line as removed", () => {
    const d = shortDiff("f", "a\nb\nc\nd\n", "a\nb\nNEW\nc\nd\nEND\n");
    expect(d.split("\n").filter((l) => l.startsWith("-") && !l.startsWith("---"))).toEqual([]);
    expect(d.split("\n").filter((l) => l.startsWith("+") && !l.startsWith("+++"))).toEqual(["+NEW", "+END"]);
  });

  it("CRLF: lines shown without \\r, only the changed ones", () => {
    const before = numbered(20).replaceAll("\n", "\r\n");
    const after = before.replace("line 3\r\n", "three\r\n").replace("line 18\r\n", "eighteen\r\n");
    const d = shortDiff("w.txt", before, after);
    expect(d).not.toContain("\r");
    expect(d.split("\n").filter((l) => /^[-+][^-+]/.test(l))).toEqual(["-line 3", "+three", "-line 18", "+eighteen"]);
    expect(d).toContain("@@ -1,6 +1,6 @@");
    expect(d).toContain("@@ -15,6 +15,6 @@");
  });

  it("no final newline: the marker on the side that lacks it, only there", () => {
    const before = numbered(10).slice(0, -1); // ends "line 10" without newline
    const d = shortDiff("f", before, before.replace("line 2\n", "two\n") + "\n");
    expect(d).toBe(
      ["--- a/f", "+++ b/f", "@@ -1,5 +1,5 @@", " line 1", "-line 2", "+two", " line 3", " line 4", " line 5",
        "@@ -7,4 +7,4 @@", " line 7", " line 8", " line 9", "-line 10", "\\ No newline at end of file", "+line 10"].join("\n"),
    );
  });

  it("unicode: whole characters, right lines", () => {
    const before = "Grüße 👋🏽\n東京\nok\nok\nok\nok\nok\nok\nok\n大阪 🎉\n";
    const after = before.replace("東京", "京都").replace("🎉", "🎊");
    const d = shortDiff("u", before, after);
    expect(d.split("\n").filter((l) => /^[-+][^-+]/.test(l))).toEqual(["-東京", "+京都", "-大阪 🎉", "+大阪 🎊"]);
    expect(d).toContain("@@ -1,5 +1,5 @@");
    expect(d).toContain("@@ -7,4 +7,4 @@");
  });

  it("long lines are cut on a character boundary; the whole diff stays under maxChars", () => {
    const long = "😀".repeat(1000);
    const d = shortDiff("f", "a\n", `${long}\n`);
    const plus = d.split("\n").find((l) => l.startsWith("+😀"))!;
    expect(plus).toMatch(/… \[\d+ more characters\]$/);
    expect(plus).not.toContain("\uFFFD");
    expect(new TextEncoder().encode(plus).length).toBeGreaterThan(0);
    expect(plus.replace(/… \[.*$/, "").match(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/)).toBeNull();
    const many = Array.from({ length: 60 }, (_, i) => `${i} ${"x".repeat(390)}`).join("\n") + "\n";
    const big = shortDiff("f", "", many);
    expect(big.length).toBeLessThanOrEqual(8000 + 100);
    expect(big).toMatch(/\.\.\. \(\d+ more diff lines\)$/);
  });

  it("huge changes are bounded in time: a 10 MB rewrite is shown as one block and says so", () => {
    const before = numbered(600_000); // ~ 7 MB
    const after = before.replaceAll("line", "LINE");
    const t0 = Date.now();
    const d = shortDiff("big", before, after);
    expect(Date.now() - t0).toBeLessThan(3000);
    const lines = d.split("\n");
    expect(lines.length).toBeLessThanOrEqual(82);
    expect(lines[2]).toBe("@@ -1,600000 +1,600000 @@");
    expect(lines[3]).toBe("-line 1");
    expect(d).toContain("(diff not minimized: the changed region has 600000 old and 600000 new lines; shown as one block)");
    // Two small edits in a big file stay minimal: only the region between them is diffed.
    const two = before.replace("line 100\n", "X\n").replace("line 2000\n", "Y\n");
    const t1 = Date.now();
    const d2 = shortDiff("big", before, two);
    expect(Date.now() - t1).toBeLessThan(3000);
    expect(d2.split("\n").filter((l) => /^[-+][^-+]/.test(l))).toEqual(["-line 100", "+X", "-line 2000", "+Y"]);
  });
});

import { describe, expect, it } from "vitest";
import { applyEdit, shortDiff } from "../../lib/edit.js";
import { ToolError } from "../../lib/errors.js";

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
    expect(applyEdit("let a = 1;\nlet b = 2;\n", { old_string: "b = 2", new_string: "b = 3" }, "f.ts")).toEqual({ text: "let a = 1;\nlet b = 3;\n", count: 1 });
  });

  it("takes new_string literally ($& and $1 are not patterns)", () => {
    expect(applyEdit("price\n", { old_string: "price", new_string: "$& $1 $$" }, "f").text).toBe("$& $1 $$\n");
    expect(applyEdit("a a\n", { old_string: "a", new_string: "$&$&", replace_all: true }, "f").text).toBe("$&$& $&$&\n");
  });

  it("an empty new_string deletes the match", () => {
    expect(applyEdit("keep\ndrop me\nkeep\n", { old_string: "drop me\n", new_string: "" }, "f").text).toBe("keep\nkeep\n");
  });

  it("replace_all replaces every occurrence and counts them", () => {
    expect(applyEdit("x.y x.y\nx.y\n", { old_string: "x.y", new_string: "z", replace_all: true }, "f")).toEqual({ text: "z z\nz\n", count: 3 });
    // replace_all with one match is fine too.
    expect(applyEdit("one\n", { old_string: "one", new_string: "1", replace_all: true }, "f")).toEqual({ text: "1\n", count: 1 });
  });

  it("counts matches without overlap", () => {
    expect(applyEdit("aaa", { old_string: "aa", new_string: "b" }, "f")).toEqual({ text: "ba", count: 1 });
    expect(applyEdit("aaaa", { old_string: "aa", new_string: "b", replace_all: true }, "f")).toEqual({ text: "bb", count: 2 });
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

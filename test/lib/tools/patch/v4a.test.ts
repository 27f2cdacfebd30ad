/**
 * lib/tools/patch: the V4A parser and applier, pure. Cases follow OpenAI's apply_patch documentation
 * and the public test suites of codex (codex-rs/apply-patch: parser tests, seek_sequence tests,
 * tests/fixtures/scenarios) and openai-agents (apply_diff): read there, written here.
 */
import { describe, expect, it } from "vitest";
import { ToolError } from "../../../../lib/shared/errors.js";
import { applyHunks, insertLines, Lines, seek } from "../../../../lib/tools/patch/apply.js";
import { operationToPatch, parseHunks, parsePatch, type FileOp } from "../../../../lib/tools/patch/parse.js";

const wrap = (body: string) => `*** Begin Patch\n${body}\n*** End Patch`;

function errorOf(fn: () => unknown): ToolError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ToolError) return e;
    throw e;
  }
  throw new Error("expected a ToolError");
}

/** Applies the single Update File section of `body` to `text`. */
function update(text: string, body: string, path = "f.txt") {
  const ops = parsePatch(wrap(`*** Update File: ${path}\n${body}`));
  const op = ops[0] as Extract<FileOp, { type: "update" }>;
  return applyHunks(text, op.hunks, path);
}

describe("parsePatch: the envelope", () => {
  it("an Add File section: + lines become the content, with a final newline", () => {
    expect(parsePatch(wrap("*** Add File: bar.md\n+This is a new file\n+second"))).toEqual([{ type: "add", path: "bar.md", content: "This is a new file\nsecond\n", line: 2 }]);
  });

  it("an Add File with no lines is an empty file", () => {
    expect(parsePatch(wrap("*** Add File: empty.txt"))).toMatchObject([{ type: "add", content: "" }]);
  });

  it("an empty line between + lines of an added file is an empty line of it", () => {
    expect(parsePatch(wrap("*** Add File: a.py\n+def f():\n\n+    pass"))).toMatchObject([{ content: "def f():\n\n    pass\n" }]);
  });

  it("several operations in order: add, delete, update with a move", () => {
    const ops = parsePatch(wrap("*** Add File: path/add.py\n+abc\n+def\n*** Delete File: path/delete.py\n*** Update File: path/update.py\n*** Move to: path/update2.py\n@@ def f():\n-    pass\n+    return 123"));
    expect(ops.map((o) => o.type)).toEqual(["add", "delete", "update"]);
    expect(ops[2]).toMatchObject({ path: "path/update.py", moveTo: "path/update2.py", hunks: [{ anchors: ["def f():"], lines: [{ op: "-", text: "    pass" }, { op: "+", text: "    return 123" }], eof: false }] });
  });

  it("the first hunk of an Update File may omit @@", () => {
    const [op] = parsePatch(wrap("*** Update File: file2.py\n import foo\n+bar"));
    expect(op).toMatchObject({ hunks: [{ anchors: [], lines: [{ op: " ", text: "import foo" }, { op: "+", text: "bar" }] }] });
  });

  it("an Update File followed by an Add File", () => {
    const ops = parsePatch(wrap("*** Update File: file.py\n@@\n+line\n*** Add File: other.py\n+content"));
    expect(ops).toMatchObject([{ type: "update", hunks: [{ lines: [{ op: "+", text: "line" }] }] }, { type: "add", path: "other.py", content: "content\n" }]);
  });

  it("whitespace around the markers is tolerated (codex scenarios 017, 018, 020)", () => {
    const ops = parsePatch(" *** Begin Patch \n  *** Update File: foo.txt  \n@@\n-a\n+b\n *** End Patch  \n");
    expect(ops).toMatchObject([{ type: "update", path: "foo.txt" }]);
  });

  it("a heredoc wrapper and blank lines around the patch are not part of it", () => {
    for (const open of ["<<EOF", "<<'EOF'", '<<"EOF"']) {
      expect(parsePatch(`\n${open}\n${wrap("*** Delete File: x.txt")}\nEOF\n`)).toMatchObject([{ type: "delete", path: "x.txt" }]);
    }
  });

  it("CRLF line breaks in the patch read as LF", () => {
    const ops = parsePatch(wrap("*** Update File: a.txt\n@@\n-old\n+new").replaceAll("\n", "\r\n"));
    expect(ops).toMatchObject([{ hunks: [{ lines: [{ op: "-", text: "old" }, { op: "+", text: "new" }] }] }]);
  });

  it("a missing Begin or End marker is INVALID_ARGUMENT that shows the format", () => {
    const a = errorOf(() => parsePatch("bad"));
    expect(a.code).toBe("INVALID_ARGUMENT");
    expect(a.message).toContain("the first line must be '*** Begin Patch'");
    expect(a.message).toContain("*** Add File: <path>");
    expect(errorOf(() => parsePatch("*** Begin Patch\nbad")).message).toContain("the last line must be '*** End Patch'");
    expect(errorOf(() => parsePatch("")).code).toBe("INVALID_ARGUMENT");
  });

  it("a patch with no file sections is refused (codex 005)", () => {
    expect(errorOf(() => parsePatch("*** Begin Patch\n*** End Patch")).message).toContain("no file sections");
  });

  it("an Update File with no hunks is refused, with its line (codex 008)", () => {
    const e = errorOf(() => parsePatch(wrap("*** Update File: test.py")));
    expect(e.message).toContain("has no hunks");
    expect(e.details.line).toBe(2);
  });

  it("an Update File with only a move is a rename", () => {
    expect(parsePatch(wrap("*** Update File: a.txt\n*** Move to: b.txt"))).toMatchObject([{ type: "update", moveTo: "b.txt", hunks: [] }]);
  });

  it("an unknown header names the line (codex 013)", () => {
    const e = errorOf(() => parsePatch(wrap("*** Frobnicate File: foo\n+x")));
    expect(e.message).toContain("Invalid patch at line 2");
    expect(e.message).toContain("*** Frobnicate File: foo");
  });

  it("a line that is not ' ', '-', '+' or '@@' inside a hunk names the line", () => {
    const e = errorOf(() => parsePatch(wrap("*** Update File: a.txt\n@@\n-old\nnew without prefix")));
    expect(e.message).toContain("at line 5");
    expect(e.message).toContain("every line of a hunk starts with");
  });

  it("an anchor with no lines is refused", () => {
    expect(errorOf(() => parsePatch(wrap("*** Update File: a.txt\n@@ def f():\n@@ def g():\n-x\n+y\n@@ def h():"))).message).toContain("'@@ def h():' has no lines");
  });

  it("'@@' glued to text is not a hunk header", () => {
    expect(errorOf(() => parsePatch(wrap("*** Update File: a.txt\n@@def f():\n-x"))).message).toContain("is not a hunk header");
  });
});

describe("parseHunks", () => {
  it("nested @@ anchors accumulate on one hunk", () => {
    const [h] = parseHunks(["@@ class BaseClass", "@@     def method():", " a", "-b", "+c"], 1);
    expect(h).toMatchObject({ anchors: ["class BaseClass", "    def method():"], line: 1 });
  });

  it("a unified-diff header is read as an anchor on the text after it", () => {
    expect(parseHunks(["@@ -10,3 +10,4 @@ function main() {", "-a", "+b"], 1)[0]!.anchors).toEqual(["function main() {"]);
    expect(parseHunks(["@@ -1 +1 @@", "-a", "+b"], 1)[0]!.anchors).toEqual([]);
  });

  it("*** End of File marks the hunk; blank lines between hunks are separators", () => {
    const hs = parseHunks(["@@", " a", "-b", "+B", "", "", "@@", " f", "+g", "*** End of File"], 3);
    expect(hs).toHaveLength(2);
    expect(hs[0]).toMatchObject({ eof: false, line: 3, lines: [{ op: " " }, { op: "-" }, { op: "+" }] });
    expect(hs[1]).toMatchObject({ eof: true, line: 9 });
  });

  it("an empty line inside a hunk is an empty context line", () => {
    const [h] = parseHunks(["@@", " a", "", "-b", "+c"], 1);
    expect(h!.lines).toEqual([{ op: " ", text: "a" }, { op: " ", text: "" }, { op: "-", text: "b" }, { op: "+", text: "c" }]);
  });

  it("markers are read at the start of a line: a context line may hold '@@', '***' or a file header", () => {
    const ops = parsePatch(wrap("*** Update File: notes.md\n@@\n @@ -1 +1 @@ quoted diff\n *** Delete File: x\n *** End of File\n-old\n+new"));
    expect(ops).toHaveLength(1);
    expect(ops[0]).toMatchObject({ hunks: [{ anchors: [], eof: false, lines: [{ op: " ", text: "@@ -1 +1 @@ quoted diff" }, { op: " ", text: "*** Delete File: x" }, { op: " ", text: "*** End of File" }, { op: "-" }, { op: "+" }] }] });
    expect(() => operationToPatch({ type: "update_file", path: "notes.md", diff: "@@\n *** bold ***\n-a\n+b" })).not.toThrow();
  });

  it("a hunk after *** End of File must start with @@", () => {
    expect(errorOf(() => parseHunks(["@@", "-a", "+b", "*** End of File", "-c"], 1)).message).toContain("must start with '@@'");
  });
});

describe("operationToPatch (OpenAI's apply_patch_call operations)", () => {
  it("create_file: + lines become the file", () => {
    const [op] = parsePatch(operationToPatch({ type: "create_file", path: "src/hello.ts", diff: '+export const hello = () => "hi";\n+\n+console.log(hello());\n' }));
    expect(op).toEqual({ type: "add", path: "src/hello.ts", content: 'export const hello = () => "hi";\n\nconsole.log(hello());\n', line: 2 });
  });

  it("update_file: the diff is one Update File section", () => {
    const [op] = parsePatch(operationToPatch({ type: "update_file", path: "lib/fib.py", diff: "@@ def fib(n):\n-    if n <= 1:\n+    if n < 2:\n         return n\n" }));
    expect(op).toMatchObject({ type: "update", path: "lib/fib.py", hunks: [{ anchors: ["def fib(n):"] }] });
  });

  it("delete_file needs no diff", () => {
    expect(parsePatch(operationToPatch({ type: "delete_file", path: "old.txt" }))).toMatchObject([{ type: "delete", path: "old.txt" }]);
  });

  it("refuses an operation that would reach another file", () => {
    expect(errorOf(() => operationToPatch({ type: "delete_file", path: "a.txt\n*** Delete File: b.txt" })).code).toBe("INVALID_ARGUMENT");
    expect(errorOf(() => operationToPatch({ type: "update_file", path: "a.txt", diff: "@@\n-a\n+b\n*** Delete File: b.txt" })).message).toContain("patch marker");
    expect(errorOf(() => operationToPatch({ type: "create_file", path: "a.txt", diff: "+a\nb" })).message).toContain("does not start with '+'");
    expect(errorOf(() => operationToPatch({ type: "update_file", path: "a.txt", diff: "" })).message).toContain("empty");
    // *** End of File belongs to a hunk and is allowed.
    expect(() => operationToPatch({ type: "update_file", path: "a.txt", diff: "@@\n x\n+y\n*** End of File" })).not.toThrow();
  });
});

describe("applyHunks", () => {
  it("replaces a line after its context (codex: update hunk)", () => {
    expect(update("foo\nbar\n", "@@\n foo\n-bar\n+baz").text).toBe("foo\nbaz\n");
  });

  it("several hunks in one file (codex 003)", () => {
    expect(update("foo\nbar\nbaz\nqux\n", "@@\n foo\n-bar\n+BAR\n@@\n baz\n-qux\n+QUX").text).toBe("foo\nBAR\nbaz\nQUX\n");
  });

  it("interleaved changes and an append at the end of the file", () => {
    const r = update("a\nb\nc\nd\ne\nf\n", "@@\n a\n-b\n+B\n@@\n c\n d\n-e\n+E\n@@\n f\n+g\n*** End of File");
    expect(r.text).toBe("a\nB\nc\nd\nE\nf\ng\n");
    expect(r.applied.map((h) => h.line)).toEqual([1, 3, 6]);
  });

  it("a pure addition goes after its anchor, or at the end of the file without one (codex 016)", () => {
    expect(update("def f():\n    pass\nx = 1\n", "@@ def f():\n+    # doc").text).toBe("def f():\n    # doc\n    pass\nx = 1\n");
    expect(update("one\ntwo\n", "@@\n+three").text).toBe("one\ntwo\nthree\n");
  });

  it("deletes lines (codex 021)", () => {
    expect(update("line1\nline2\nline3\n", "@@\n line1\n-line2\n line3").text).toBe("line1\nline3\n");
  });

  it("an anchor narrows the search: the same lines under another function", () => {
    const src = "def a():\n    return 1\n\ndef b():\n    return 1\n";
    expect(update(src, "@@ def b():\n-    return 1\n+    return 2").text).toBe("def a():\n    return 1\n\ndef b():\n    return 2\n");
  });

  it("nested anchors: class, then method", () => {
    const src = "class A:\n    def run(self):\n        x = 1\nclass B:\n    def run(self):\n        x = 1\n";
    expect(update(src, "@@ class B:\n@@     def run(self):\n-        x = 1\n+        x = 2").text).toBe(src.replace(/x = 1\n$/, "x = 2\n"));
  });

  it("*** End of File matches the last occurrence, not the first", () => {
    expect(update("end\nmiddle\nend\n", "@@\n-end\n+END\n*** End of File").text).toBe("end\nmiddle\nEND\n");
  });

  it("matching ladder: trailing whitespace (1), indentation (2), punctuation (3)", () => {
    const a = update("foo   \nbar\t\n", "@@\n-foo\n+FOO\n bar");
    expect(a.text).toBe("FOO\nbar\t\n");
    expect(a.applied[0]!.fuzz).toBe(1);
    const b = update("    foo\n    bar\n", "@@\n-foo\n+    FOO\n bar");
    expect(b.text).toBe("    FOO\n    bar\n");
    expect(b.applied[0]!.fuzz).toBe(2);
    const c = update("say(\u201Chi\u201D) \u2014 ok\n", '@@\n-say("hi") - ok\n+say("bye")');
    expect(c.text).toBe('say("bye")\n');
    expect(c.applied[0]!.fuzz).toBe(3);
    expect(update("x\ny\n", "@@\n-x\n+X").applied[0]!.fuzz).toBe(0);
  });

  it("matching ladder: a line spelled with decomposed accents (NFD) matches the composed one (3), context kept as the file has it", () => {
    const file = `${"const who = \"José\";".normalize("NFD")}\n${"// Müller".normalize("NFD")}\n`;
    const r = update(file, '@@\n-const who = "José";\n+const who = "Ana";\n // Müller');
    expect(r.text).toBe(`const who = "Ana";\n${"// Müller".normalize("NFD")}\n`);
    expect(r.applied[0]!.fuzz).toBe(3);
  });

  it("seek prefers an exact match later over a loose match earlier", () => {
    const lines = new Lines(["foo ", "foo"]);
    expect(seek(lines, ["foo"], 0)).toEqual({ at: 1, fuzz: 0 });
    expect(seek(new Lines(["just one line"]), ["too", "many", "lines"], 0)).toBeNull();
    expect(seek(lines, [], 1)).toEqual({ at: 1, fuzz: 0 });
  });

  it("unicode content matches exactly (codex 019)", () => {
    expect(update("héllo wörld\n日本語\n🎉 done\n", "@@\n héllo wörld\n-日本語\n+中文\n 🎉 done").text).toBe("héllo wörld\n中文\n🎉 done\n");
  });

  it("a CRLF file stays CRLF; hunks are written with plain newlines", () => {
    expect(update("a\r\nb\r\nc\r\n", "@@\n a\n-b\n+B\n+B2\n c").text).toBe("a\r\nB\r\nB2\r\nc\r\n");
  });

  it("a file without a final newline keeps none; one with keeps it", () => {
    expect(update("a\nb", "@@\n a\n-b\n+c").text).toBe("a\nc");
    expect(update("a\nb\n", "@@\n a\n-b\n+c").text).toBe("a\nc\n");
  });

  it("an empty file takes a pure addition", () => {
    expect(update("", "@@\n+first").text).toBe("first\n");
  });

  it("a trailing empty context line may stand for the final newline", () => {
    expect(update("x\ny\n", "@@\n x\n-y\n+z\n ").text).toBe("x\nz\n");
  });

  it("a hunk that does not match: NO_MATCH naming the hunk, its patch line and first line, with the nearest lines", () => {
    const src = "function main() {\n  const total = compute(1);\n  return total;\n}\n";
    const e = errorOf(() => update(src, "@@\n function main() {\n-  const total = compute(1);\n+  const total = compute(0);\n@@\n-  const totl = compute(2);\n+  const t = 3;", "src/main.ts"));
    expect(e.code).toBe("NO_MATCH");
    expect(e.message).toContain("Hunk 2 of 2 in src/main.ts (patch line 7)");
    expect(e.message).toContain("Its first line: '··const·totl·=·compute(2);'");
    expect(e.message).toContain("Nearest lines:\n  2: ··const·total·=·compute(1);");
    expect(e.message).toContain("nothing was changed");
    expect(e.details).toMatchObject({ path: "src/main.ts", hunk: 2, patch_line: 7, first_line: "  const totl = compute(2);" });
    expect((e.details.candidates as { line: number }[])[0]!.line).toBe(2);
  });

  it("an anchor that is not in the file: NO_MATCH naming it", () => {
    const e = errorOf(() => update("def alpha():\n    pass\n", "@@ def alpah():\n-    pass\n+    return 1"));
    expect(e.code).toBe("NO_MATCH");
    expect(e.message).toContain("its anchor '@@ def·alpah():' was not found");
    expect(e.message).toContain("1: def·alpha():");
  });

  it("hunks out of file order say so (codex 006: missing context is refused)", () => {
    const e = errorOf(() => update("a\nb\nc\nd\n", "@@\n c\n-d\n+D\n@@\n a\n-b\n+B"));
    expect(e.code).toBe("NO_MATCH");
    expect(e.message).toContain("before the previous hunk");
    expect(errorOf(() => update("foo\n", "@@\n-missing\n+x")).code).toBe("NO_MATCH");
  });

  it("a pure addition at the end of the file may come before hunks above it", () => {
    expect(update("a\nb\n", "@@\n+x\n*** End of File\n@@\n a\n-b\n+B").text).toBe("a\nB\nx\n");
  });
});

describe("insertLines (the text editor's insert)", () => {
  it("inserts at the start, in the middle and at the end", () => {
    expect(insertLines("a\nb\n", 0, "top\n", "f").text).toBe("top\na\nb\n");
    expect(insertLines("a\nb\n", 1, "mid", "f").text).toBe("a\nmid\nb\n");
    expect(insertLines("a\nb\n", 2, "end1\nend2\n", "f")).toEqual({ text: "a\nb\nend1\nend2\n", lines: 2 });
    expect(insertLines("", 0, "only", "f").text).toBe("only\n");
  });

  it("keeps CRLF and a missing final newline", () => {
    expect(insertLines("a\r\nb\r\n", 1, "x\n", "f").text).toBe("a\r\nx\r\nb\r\n");
    expect(insertLines("a\nb", 2, "c", "f").text).toBe("a\nb\nc");
  });

  it("past the last line is INVALID_ARGUMENT with the range", () => {
    const e = errorOf(() => insertLines("a\nb\n", 3, "x", "f.txt"));
    expect(e.code).toBe("INVALID_ARGUMENT");
    expect(e.message).toContain("give 0 (the start) to 2 (the end)");
  });
});

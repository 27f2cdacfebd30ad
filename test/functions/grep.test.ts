import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fileKey } from "../../lib/layout/paths.js";
import { IndexStore } from "../../lib/search/store.js";
import { r2Driver } from "../../lib/storage/drivers/r2.js";
import { newTenant, testApp, upload, type Tenant } from "../helpers.js";
import { countingDriver, err, ok, rawDelete, sleep, sourceText, uploadSpaced } from "../lib/search/helpers.js";

/** Enough unrelated files that grep goes through the index (below a dozen it reads files directly). */
async function filler(t: Tenant, n = 14): Promise<void> {
  await Promise.all(Array.from({ length: n }, (_, i) => upload(t, `filler/f${i}.txt`, `nothing to see ${i}\nplain text\n`)));
  await sleep(5);
}

const files = (r: { body: any }) => r.body.data.files;

describe("grep: modes and output", { timeout: 30_000 }, () => {
  it("finds nothing in an empty workspace, and says so", async () => {
    const t = await newTenant();
    const r = await t.call("grep", { pattern: "anything" });
    const d = ok(r);
    expect(d).toMatchObject({ mode: "files_with_matches", files: [], count: 0, total_found: 0, truncated: false, next_offset: null, complete: true });
    expect(r.body.output).toBe('No matches for "anything" in the workspace.');
  });

  it("accented letters match in either Unicode spelling (precomposed or decomposed, as macOS may store them); where that cannot be written, a miss says so", async () => {
    const t = await newTenant();
    await upload(t, "people.txt", "name: Jose\u0301 Nu\u0301n\u0303ez\n"); // decomposed (NFD)
    await upload(t, "nfc.txt", "José (Núñez)\n"); // precomposed (NFC)
    for (const args of [{ pattern: "José" }, { pattern: "José", literal: true }, { pattern: "Núñez", output_mode: "count" }, { pattern: "JOSÉ", case_insensitive: true }]) {
      const r = await t.call("grep", args);
      expect(ok(r).total_found, JSON.stringify(args)).toBe(2);
      expect(r.body.data.pattern).toBe(args.pattern);
    }
    expect(ok(await t.call("grep", { pattern: "Núñez)", literal: true })).files).toEqual(["nfc.txt"]); // literal text around the letters stays literal
    const content = await t.call("grep", { pattern: "José", output_mode: "content" });
    expect(ok(content).matches.map((m: any) => [m.file, m.line, m.column])).toEqual(expect.arrayContaining([["people.txt", 1, 7], ["nfc.txt", 1, 1]]));
    // A character class cannot hold an alternative: searched as given, and a miss says what to write.
    const miss = await t.call("grep", { pattern: "Jos[é]" });
    expect(ok(miss).files).toEqual(["nfc.txt"]);
    const none = await t.call("grep", { pattern: "Nu[ñ]ez" });
    expect(ok(none).files).toEqual([]);
    expect(none.body.output).toContain("The pattern has accented letters (ñ): a file may store them decomposed");
    expect(none.body.output).toContain("(?:é|e\\x{301})");
    // An ASCII pattern's miss carries no such note.
    expect((await t.call("grep", { pattern: "Jones" })).body.output).toBe('No matches for "Jones" in the workspace.');
  });

  it("lists matching files newest first (default mode), counts, and shows content grouped by file", async () => {
    const t = await newTenant();
    await uploadSpaced(t, { "src/old.ts": "const token = 1;\nlet x = token + token;\n", "src/none.ts": "nothing\n", "src/new.ts": "// token here\n" });
    const f = await t.call("grep", { pattern: "token" });
    expect(files(f)).toEqual(["src/new.ts", "src/old.ts"]);
    expect(f.body.output).toBe("Found 2 files in the workspace, newest files first:\n\nsrc/new.ts\nsrc/old.ts");

    const c = await t.call("grep", { pattern: "token", output_mode: "count" });
    expect(ok(c).counts).toEqual([
      { file: "src/new.ts", count: 1 },
      { file: "src/old.ts", count: 2 },
    ]);
    expect(c.body.output).toBe("Found 2 files in the workspace (3 matching lines in these files), newest files first:\n\nsrc/new.ts:1\nsrc/old.ts:2");

    const m = await t.call("grep", { pattern: "token", output_mode: "content" });
    expect(ok(m).matches).toEqual([
      { file: "src/new.ts", line: 1, column: 4, text: "// token here", before: [], after: [] },
      { file: "src/old.ts", line: 1, column: 7, text: "const token = 1;", before: [], after: [] },
      { file: "src/old.ts", line: 2, column: 9, text: "let x = token + token;", before: [], after: [] },
    ]);
    expect(m.body.output).toBe("Found 3 matching lines in the workspace, newest files first:\n\nsrc/new.ts\n1:4:// token here\n\nsrc/old.ts\n1:7:const token = 1;\n2:9:let x = token + token;");
    expect(m.body.data).toMatchObject({ count: 3, total_found: 3, truncated: false, complete: true });
  });

  it("shows context before and after, merged, with -- between separate groups", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", ["l1", "l2", "hit 3", "l4", "l5", "l6", "l7", "hit 8", "hit 9", "l10"].join("\n"));
    const r = await t.call("grep", { pattern: "hit", output_mode: "content", context: 1 });
    expect(r.body.output).toBe("Found 3 matching lines in the workspace, newest files first:\n\na.txt\n2-l2\n3:1:hit 3\n4-l4\n--\n7-l7\n8:1:hit 8\n9:1:hit 9\n10-l10");
    expect(ok(r).matches[0]).toEqual({ file: "a.txt", line: 3, column: 1, text: "hit 3", before: ["l2"], after: ["l4"] });
    const b = ok(await t.call("grep", { pattern: "hit 3", output_mode: "content", before: 2, after: 0, context: 5 }));
    expect(b.matches[0]).toMatchObject({ before: ["l1", "l2"], after: [] });
    const a = ok(await t.call("grep", { pattern: "hit 9", output_mode: "content", after: 3 }));
    expect(a.matches[0]).toMatchObject({ before: [], after: ["l10"] });
    // Context is for content mode; other modes ignore it.
    expect(files(await t.call("grep", { pattern: "hit", context: 3 }))).toEqual(["a.txt"]);
  });

  it("pages every mode with head_limit and offset", async () => {
    const t = await newTenant();
    const spaced: Record<string, string> = {};
    for (let i = 0; i < 5; i++) spaced[`f${i}.txt`] = "match\nmatch\n";
    await uploadSpaced(t, spaced);
    const p1 = await t.call("grep", { pattern: "match", head_limit: 2 });
    expect(ok(p1)).toMatchObject({ files: ["f4.txt", "f3.txt"], count: 2, total_found: null, truncated: true, next_offset: 2 });
    expect(p1.body.output).toContain("Found at least 3 files in the workspace (showing 1-2)");
    expect(p1.body.output).toContain("[More results: call grep again with offset=2.]");
    const p3 = ok(await t.call("grep", { pattern: "match", head_limit: 2, offset: 4 }));
    expect(p3).toMatchObject({ files: ["f0.txt"], count: 1, total_found: 5, truncated: false, next_offset: null });
    const c = ok(await t.call("grep", { pattern: "match", output_mode: "content", head_limit: 3, offset: 2 }));
    expect(c.matches.map((m: any) => `${m.file}:${m.line}`)).toEqual(["f3.txt:1", "f3.txt:2", "f2.txt:1"]);
    expect(c).toMatchObject({ next_offset: 5, truncated: true });
    const n = ok(await t.call("grep", { pattern: "match", output_mode: "count", head_limit: 1, offset: 1 }));
    expect(n.counts).toEqual([{ file: "f3.txt", count: 2 }]);
    const past = await t.call("grep", { pattern: "match", offset: 50 });
    expect(ok(past)).toMatchObject({ files: [], count: 0, total_found: 5 });
    expect(past.body.output).toContain("offset 50 is past the end");
  });
});

describe("grep: patterns", { timeout: 30_000 }, () => {
  it("uses RE2 syntax, case_insensitive and literal; an invalid regex names the problem", async () => {
    const t = await newTenant();
    await upload(t, "a.ts", "function handle(req) {}\nHANDLE(x)\nfoo.bar(baz)\nfooXbar\n");
    expect(ok(await t.call("grep", { pattern: "function\\s+\\w+\\(", output_mode: "content" })).matches.map((m: any) => m.line)).toEqual([1]);
    expect(ok(await t.call("grep", { pattern: "handle\\(", output_mode: "content", case_insensitive: true })).matches.map((m: any) => m.line)).toEqual([1, 2]);
    expect(ok(await t.call("grep", { pattern: "(?i)HANDLE\\(x", output_mode: "content" })).matches.map((m: any) => m.line)).toEqual([2]);
    expect(ok(await t.call("grep", { pattern: "foo.bar", output_mode: "content" })).matches.map((m: any) => m.line)).toEqual([3, 4]);
    expect(ok(await t.call("grep", { pattern: "foo.bar(", literal: true, output_mode: "content" })).matches.map((m: any) => m.line)).toEqual([3]);
    const bad = err(await t.call("grep", { pattern: "foo.bar(" }), 400, "INVALID_ARGUMENT");
    expect(bad.message).toContain("missing closing )");
    expect(bad.message).toContain("literal: true");
    expect(err(await t.call("grep", { pattern: "(a)\\1" }), 400, "INVALID_ARGUMENT").message).toContain("Invalid regular expression");
    expect(err(await t.call("grep", { pattern: "(?=x)" }), 400, "INVALID_ARGUMENT").details.pattern).toBe("(?=x)");
    err(await t.call("grep", { pattern: "" }), 400, "INVALID_ARGUMENT");
    err(await t.call("grep", { pattern: "x", output_mode: "lines" }), 400, "INVALID_ARGUMENT");
  });

  it("finishes promptly on a pattern that is exponential for backtracking engines", async () => {
    const t = await newTenant();
    const line = `${"a".repeat(100_000)}!`;
    await upload(t, "evil.txt", `${line}\n${"a".repeat(50_000)}\n`);
    const started = Date.now();
    const r = await t.call("grep", { pattern: "(a+)+$", output_mode: "content" });
    const ms = Date.now() - started;
    const d = ok(r);
    // Line 1 ends in "!", so only line 2 matches.
    expect(d.matches.map((m: any) => m.line)).toEqual([2]);
    expect(ms).toBeLessThan(5000);
    const r2 = await t.call("grep", { pattern: "(a|aa)*(a|aa)*b", output_mode: "count" });
    expect(ok(r2).counts).toEqual([]);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("matches across lines with multiline", async () => {
    const t = await newTenant();
    await upload(t, "a.ts", "function f(\n  x,\n) {\n  return x;\n}\nfunction g() {}\n");
    const r = await t.call("grep", { pattern: "function f\\(.*?\\)", multiline: true, output_mode: "content" });
    expect(ok(r).matches).toEqual([{ file: "a.ts", line: 1, column: 1, text: "function f(", before: [], after: [], end_line: 3 }]);
    expect(r.body.output).toContain("1:1:function f(  [match continues to line 3]");
    expect(ok(await t.call("grep", { pattern: "x,\\n\\)", multiline: true, output_mode: "count" })).counts).toEqual([{ file: "a.ts", count: 1 }]);
    // Without multiline, a pattern cannot cross a line end, and the answer says what to pass (ripgrep refuses such a pattern).
    const single = await t.call("grep", { pattern: "x,\\n\\)", output_mode: "count" });
    expect(ok(single).counts).toEqual([]);
    expect(single.body.output).toContain("names a line break (\\n), and without multiline each line is searched alone");
    expect(single.body.output).toContain("pass multiline: true");
    // Not for an escaped backslash before an n, nor when multiline was asked.
    expect((await t.call("grep", { pattern: "x\\\\n", output_mode: "count" })).body.output).not.toContain("line break");
    expect((await t.call("grep", { pattern: "nothing\\nhere", multiline: true })).body.output).not.toContain("line break");
  });
});

describe("grep: filters and paths", { timeout: 30_000 }, () => {
  it("filters by glob (name at any depth, path with /, ! to exclude) and type", async () => {
    const t = await newTenant();
    await uploadSpaced(t, {
      "src/a.ts": "needle",
      "src/b.tsx": "needle",
      "src/c.mts": "needle",
      "src/d.cts": "needle",
      "src/e.js": "needle",
      "src/a.test.ts": "needle",
      "lib/f.py": "needle",
      "lib/g.pyi": "needle",
      "docs/h.md": "needle",
      "Dockerfile": "needle",
    });
    const sorted = (r: any) => [...files(r)].sort();
    expect(sorted(await t.call("grep", { pattern: "needle", glob: "*.ts" }))).toEqual(["src/a.test.ts", "src/a.ts"]);
    expect(sorted(await t.call("grep", { pattern: "needle", glob: "*.{ts,tsx}" }))).toEqual(["src/a.test.ts", "src/a.ts", "src/b.tsx"]);
    expect(sorted(await t.call("grep", { pattern: "needle", glob: "src/*.js" }))).toEqual(["src/e.js"]);
    expect(sorted(await t.call("grep", { pattern: "needle", glob: "!*.ts", type: "ts" }))).toEqual(["src/b.tsx", "src/c.mts", "src/d.cts"]);
    expect(sorted(await t.call("grep", { pattern: "needle", type: "ts" }))).toEqual(["src/a.test.ts", "src/a.ts", "src/b.tsx", "src/c.mts", "src/d.cts"]);
    expect(sorted(await t.call("grep", { pattern: "needle", type: "py" }))).toEqual(["lib/f.py", "lib/g.pyi"]);
    expect(sorted(await t.call("grep", { pattern: "needle", type: "js" }))).toEqual(["src/e.js"]);
    expect(sorted(await t.call("grep", { pattern: "needle", type: "md" }))).toEqual(["docs/h.md"]);
    expect(sorted(await t.call("grep", { pattern: "needle", type: "docker" }))).toEqual(["Dockerfile"]);
    expect(sorted(await t.call("grep", { pattern: "needle", type: "ts", path: "lib" }))).toEqual([]);
    const e = err(await t.call("grep", { pattern: "needle", type: "typescriptish" }), 400, "INVALID_ARGUMENT");
    expect(e.message).toContain("Known types:");
    expect(e.details.known).toContain("rust");
  });

  it("searches a directory or a single file; a missing path is NOT_FOUND", async () => {
    const t = await newTenant();
    await uploadSpaced(t, { "a/x.txt": "needle", "b/y.txt": "needle", "node_modules/m/z.js": "needle", ".env": "needle" });
    expect(files(await t.call("grep", { pattern: "needle", path: "a" }))).toEqual(["a/x.txt"]);
    expect(files(await t.call("grep", { pattern: "needle", path: "/b/" }))).toEqual(["b/y.txt"]);
    // An explicit file is searched even when hidden or ignored.
    expect(files(await t.call("grep", { pattern: "needle", path: ".env" }))).toEqual([".env"]);
    expect(files(await t.call("grep", { pattern: "needle", path: "node_modules/m/z.js" }))).toEqual(["node_modules/m/z.js"]);
    expect(files(await t.call("grep", { pattern: "needle", path: "node_modules" }))).toEqual(["node_modules/m/z.js"]);
    const nf = err(await t.call("grep", { pattern: "needle", path: "a/x.tx" }), 404, "NOT_FOUND");
    expect(nf.details.similar).toContain("a/x.txt");
    err(await t.call("grep", { pattern: "needle", path: "../../etc" }), 400, "INVALID_PATH");
  });

  it("reports what it skipped, so no match is never confused with not searched", async () => {
    const t = await newTenant();
    await uploadSpaced(t, {
      ".gitignore": "dist/\n",
      "dist/out.js": "secretword",
      "node_modules/x/i.js": "secretword",
      ".hidden/notes.txt": "secretword",
      "img.png": new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x73, 0x65, 0x63, 0x72, 0x65, 0x74, 0x77, 0x6f, 0x72, 0x64]),
      "blob.bin": new Uint8Array([0x73, 0x65, 0x63, 0x72, 0x65, 0x74, 0x77, 0x6f, 0x72, 0x64, 0, 1, 2, 3]),
      "src/a.ts": "nothing",
    });
    const r = await t.call("grep", { pattern: "secretword" });
    const d = ok(r);
    expect(d.files).toEqual([]);
    expect(d.skipped).toEqual({
      total: 6,
      counts: { hidden: 2, ignored_dir: 1, gitignore: 1, binary: 2 },
      examples: { hidden: [".gitignore", ".hidden/"], ignored_dir: ["node_modules/"], gitignore: ["dist/"], binary: expect.arrayContaining(["blob.bin", "img.png"]) },
    });
    expect(r.body.output).toContain('No matches for "secretword" in the workspace.');
    expect(r.body.output).toContain("[Skipped 6 entries (not searched): ");
    expect(r.body.output).toContain("binary files: ");
    // the flags bring back the hidden and ignored entries, never the binary files: the text says which (before: "to include them", all six)
    expect(r.body.output).toContain("Pass include_hidden: true and/or include_ignored: true to include the hidden and ignored ones; no flag includes the others.");
    expect([...files(await t.call("grep", { pattern: "secretword", include_hidden: true, include_ignored: true }))].sort()).toEqual([".hidden/notes.txt", "dist/out.js", "node_modules/x/i.js"]);
    expect(files(await t.call("grep", { pattern: "secretword", include_ignored: true, glob: "*.js" })).sort()).toEqual(["dist/out.js", "node_modules/x/i.js"]);
    // A binary file given as path is skipped too, and said to be.
    const one = await t.call("grep", { pattern: "secretword", path: "blob.bin" });
    expect(ok(one).skipped.counts).toEqual({ binary: 1 });
  });
});

describe("grep: text", { timeout: 30_000 }, () => {
  it("handles CRLF files as LF, unicode columns and case, and cuts long lines around the match", async () => {
    const t = await newTenant();
    await filler(t);
    await uploadSpaced(t, {
      "crlf.txt": "first line\r\nsecond end\r\nthird\r\n",
      "uni.txt": "😀😀 naïve CAFÉ\nKelvin \u212Aelvin\n",
      "long.txt": `${"x".repeat(5000)}NEEDLE${"y".repeat(5000)}\n`,
    });
    const c = ok(await t.call("grep", { pattern: "end$", output_mode: "content" }));
    expect(c.matches).toEqual([{ file: "crlf.txt", line: 2, column: 8, text: "second end", before: [], after: [] }]);
    expect(ok(await t.call("grep", { pattern: "line\\nsecond", multiline: true, output_mode: "count" })).counts).toEqual([{ file: "crlf.txt", count: 1 }]);
    expect(ok(await t.call("grep", { pattern: "second end\\r\\n", multiline: true, output_mode: "count" })).counts).toEqual([]);

    const u = ok(await t.call("grep", { pattern: "naïve", output_mode: "content" }));
    expect(u.matches[0]).toMatchObject({ file: "uni.txt", line: 1, column: 4 });
    expect(ok(await t.call("grep", { pattern: "café", case_insensitive: true, output_mode: "count" })).counts).toEqual([{ file: "uni.txt", count: 1 }]);
    expect(ok(await t.call("grep", { pattern: "café", output_mode: "count" })).counts).toEqual([]);
    // RE2 folds K (U+212A) with k: the index must not lose it.
    expect(ok(await t.call("grep", { pattern: "kelvin kelvin", case_insensitive: true, output_mode: "content" })).matches.map((m: any) => m.text)).toEqual(["Kelvin \u212Aelvin"]);
    expect(ok(await t.call("grep", { pattern: "NAÏVE", case_insensitive: true, literal: true, output_mode: "count" })).counts).toEqual([{ file: "uni.txt", count: 1 }]);

    const l = ok(await t.call("grep", { pattern: "NEEDLE", output_mode: "content" }));
    expect(l.matches[0].column).toBe(5001);
    expect(l.matches[0].text.length).toBeLessThan(600);
    expect(l.matches[0].text).toContain("NEEDLE");
    expect(l.matches[0].text).toMatch(/^\[\d+ chars\] …x+NEEDLEy+… \[\d+ more chars\]$/);
  });
});

describe("grep: index freshness", { timeout: 30_000 }, () => {
  it("finds what tools and raw routes just wrote, never what they removed", async () => {
    const t = await newTenant();
    await filler(t);
    const hit = async (pattern: string) => files(await t.call("grep", { pattern }));

    // write tool
    ok(await t.call("write", { file_path: "src/new.ts", content: "export const alphaToken = 1;\n" }));
    expect(await hit("alphaToken")).toEqual(["src/new.ts"]);
    // edit tool: the old text is gone, the new one is found
    ok(await t.call("read", { file_path: "src/new.ts" }));
    ok(await t.call("edit", { file_path: "src/new.ts", old_string: "alphaToken", new_string: "betaToken" }));
    expect(await hit("alphaToken")).toEqual([]);
    expect(await hit("betaToken")).toEqual(["src/new.ts"]);
    // raw PUT, new and overwrite
    await upload(t, "raw/r.txt", "gammaToken here");
    expect(await hit("gammaToken")).toEqual(["raw/r.txt"]);
    await upload(t, "raw/r.txt", "deltaToken now");
    expect(await hit("gammaToken")).toEqual([]);
    expect(await hit("deltaToken")).toEqual(["raw/r.txt"]);
    // raw DELETE
    await rawDelete(t, "raw/r.txt");
    expect(await hit("deltaToken")).toEqual([]);
    // move and delete tools
    ok(await t.call("move", { from: "src/new.ts", to: "lib/moved.ts" }));
    expect(await hit("betaToken")).toEqual(["lib/moved.ts"]);
    ok(await t.call("delete", { path: "lib/moved.ts" }));
    expect(await hit("betaToken")).toEqual([]);

    // All of it was answered from the index, kept current by the writes themselves.
    const last = ok(await t.call("grep", { pattern: "nothing to see" }));
    expect(last.stats.files_unindexed).toBe(0);
    expect(last.stats.files_indexed).toBeGreaterThanOrEqual(14);
  });

  it("stays exact when storage changes behind the index's back, or the index is missing or damaged", async () => {
    const t = await newTenant();
    await filler(t);
    await upload(t, "a.txt", "old content: omegaWord");
    expect(files(await t.call("grep", { pattern: "omegaWord" }))).toEqual(["a.txt"]);
    // Rewrite the file straight in the bucket: no listener sees it.
    await env.FILES.put(fileKey(t.tenant, t.ws, "a.txt"), "new content: sigmaWord");
    await env.FILES.put(fileKey(t.tenant, t.ws, "b.txt"), "sigmaWord too");
    let d = ok(await t.call("grep", { pattern: "omegaWord" }));
    expect(d.files).toEqual([]);
    d = ok(await t.call("grep", { pattern: "sigmaWord" }));
    expect([...d.files].sort()).toEqual(["a.txt", "b.txt"]);
    expect(d.stats.files_unindexed).toBe(2);
    // Deleted behind its back: gone.
    await env.FILES.delete(fileKey(t.tenant, t.ws, "b.txt"));
    expect(files(await t.call("grep", { pattern: "sigmaWord" }))).toEqual(["a.txt"]);

    // A damaged segment is ignored (its files are read directly), never trusted.
    const store = new IndexStore(r2Driver(env.FILES), t.tenant, t.ws);
    const [seg] = await store.listSegments();
    await env.FILES.put(seg!.key, "garbage");
    expect(files(await t.call("grep", { pattern: "sigmaWord" }))).toEqual(["a.txt"]);
    expect(files(await t.call("grep", { pattern: "nothing to see 3$" }))).toEqual(["filler/f3.txt"]);

    // No index at all: the same answers.
    const bare = await newTenant(testApp({ listeners: [] }));
    await filler(bare);
    await upload(bare, "x.txt", "sigmaWord");
    const r = ok(await bare.call("grep", { pattern: "sigmaWord" }));
    expect(r.files).toEqual(["x.txt"]);
    expect(r.stats.files_unindexed).toBe(15);
    // ... and that search indexed what it read, so the next one uses the index.
    const again = ok(await bare.call("grep", { pattern: "sigmaWord" }));
    expect(again.files).toEqual(["x.txt"]);
    expect(again.stats.files_unindexed).toBe(0);
  });
});

describe("grep at scale", () => {
  it("answers a selective search on 2,000 files with a few dozen object reads", async () => {
    const { driver, counts, snapshot } = countingDriver();
    const t = await newTenant(testApp({ storage: driver }));
    const N = 2000;
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < N) {
          const i = next++;
          await upload(t, `src/m${i % 20}/f${i}.ts`, sourceText(i) + (i === 1234 ? "export const rareIdentifierXyz = 1;\n" : ""));
        }
      }),
    );
    const measure = async (args: Record<string, unknown>) => {
      const before = snapshot();
      const r = await t.call("grep", args);
      return { d: ok(r), gets: counts.get - before.get, lists: counts.list - before.list };
    };
    const sel = await measure({ pattern: "rareIdentifierXyz", output_mode: "content" });
    expect(sel.d.matches).toEqual([{ file: "src/m14/f1234.ts", line: 41, column: 14, text: "export const rareIdentifierXyz = 1;", before: [], after: [] }]);
    expect(sel.d.stats).toMatchObject({ files_considered: N, files_indexed: N, files_unindexed: 0, candidates: 1, files_searched: 1 });
    expect(sel.gets).toBeLessThan(N / 20);
    // A second search finds the small segments merged by the first: fewer reads still.
    const sel2 = await measure({ pattern: "rareIdentifierXyz" });
    expect(sel2.d.files).toEqual(["src/m14/f1234.ts"]);
    expect(sel2.gets).toBeLessThanOrEqual(sel.gets);
    // A regex with no literal reads every file's bytes, from packed segments: still few requests.
    const scan = await measure({ pattern: "[A-Z]{3}\\d", output_mode: "count" });
    expect(scan.d.counts).toEqual([]);
    expect(scan.d.complete).toBe(true);
    expect(scan.d.stats.files_searched).toBe(N);
    expect(scan.gets).toBeLessThan(N / 20);
    console.log(`2,000 files: selective grep ${sel.gets} gets / ${sel.lists} lists (then ${sel2.gets} gets), full scan ${scan.gets} gets`);
    // glob lists (only below the pattern's literal prefix); it never reads a file.
    let before = snapshot();
    const g = ok(await t.call("glob", { pattern: "src/m3/**/*.ts", limit: 5 }));
    expect(g.total_found).toBe(100);
    // Its only reads: the workspace record (meta.json, which carries the layer pointer) and the
    // .gitignore files above the listed directory (/.gitignore, src/.gitignore), and the links table
    // (symlinks are named in the skip report: docs/symlinks.md), side by side with the listing.
    expect(counts.get - before.get).toBe(4);
    expect(counts.list - before.list).toBe(1);
    before = snapshot();
    expect(ok(await t.call("glob", { pattern: "**/f1234.ts" })).matches.map((m: any) => m.path)).toEqual(["src/m14/f1234.ts"]);
    expect(counts.get - before.get).toBeLessThanOrEqual(3); // the workspace record, the links table, and the listing's split points at most
    expect(counts.list - before.list).toBeLessThanOrEqual(3);
  }, 300_000); // 2,000 uploads: ~40 s alone, over 180 s on a 2-core machine at load 12
});

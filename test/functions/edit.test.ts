import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { r2Driver } from "../../lib/storage/drivers/r2.js";
import type { StorageDriver } from "../../lib/storage/types.js";
import { newTenant, testApp, upload, type Tenant } from "../helpers.js";
import {
  callAs,
  enc,
  expectAuthErrors,
  expectError,
  expectMissingWorkspace,
  expectOk,
  keyWithScopes,
  pngBytes,
  rawGet,
  rawText,
  sameBytes,
  tenantWithBrokenFile,
  tenantWithCreateRace,
  tenantWithOverwriteRace,
  withFile,
} from "./file-helpers.js";


const SRC = `import { a } from "./a";

export function f(x: number) {
\tif (x > 0) {
\t\treturn a(x);
\t}
\treturn 0;
}
`;

describe("edit", () => {
  it("text spelled with combining marks (NFD) is edited with the composed spelling a model sends, and the output says so", async () => {
    const content = 'const who = "José Müller";\nconsole.log(who);\n'.normalize("NFD");
    const t = await withFile("src/nfd.js", content);
    const r = await t.call("edit", { file_path: "src/nfd.js", old_string: 'who = "José Müller";', new_string: 'who = "Ana";' });
    expect(expectOk(r)).toMatchObject({ replacements: 1 });
    expect(r.body.output).toContain("[old_string matched only with Unicode normalized (NFC)");
    expect(await rawText(t, "src/nfd.js")).toBe('const who = "Ana";\nconsole.log(who);\n');
    // multi_edit goes through the same rule.
    const m = await withFile("b.txt", "café\nnaïve\n".normalize("NFD"));
    const r2 = await m.call("multi_edit", { file_path: "b.txt", edits: [{ old_string: "café", new_string: "tea" }, { old_string: "tea\nnaïve", new_string: "tea\nplain" }] });
    expect(expectOk(r2)).toMatchObject({ edits_applied: 2, replacements: 2 });
    expect(r2.body.output).toContain("Unicode normalized");
    expect(await rawText(m, "b.txt")).toBe("tea\nplain\n");
  });

  it("replaces one unique match and returns a unified diff", async () => {
    const t = await withFile("src/f.ts", SRC);
    const r = await t.call("edit", { file_path: "/src/f.ts", old_string: "\t\treturn a(x);", new_string: "\t\treturn a(x) * 2;" });
    const data = expectOk(r);
    const diff = ["--- a/src/f.ts", "+++ b/src/f.ts", "@@ -2,7 +2,7 @@", " ", " export function f(x: number) {", " \tif (x > 0) {", "-\t\treturn a(x);", "+\t\treturn a(x) * 2;", " \t}", " \treturn 0;", " }"].join("\n");
    expect(data).toMatchObject({ file_path: "src/f.ts", replacements: 1, created: false, diff });
    expect(r.body.output).toBe(`Edited src/f.ts: 1 replacement.\n${diff}`);
    expect(r.body.tool).toBe("edit");
    const raw = await rawGet(t, "src/f.ts");
    expect(new TextDecoder().decode(raw.bytes)).toBe(SRC.replace("return a(x);", "return a(x) * 2;"));
    expect(raw.etag).toBe(`"${data.etag}"`);
  });

  it("replace_all replaces every occurrence and counts them", async () => {
    const t = await withFile("v.txt", "let foo = 1;\nfoo += foo;\nprint(foo)\n");
    const r = await t.call("edit", { file_path: "v.txt", old_string: "foo", new_string: "bar", replace_all: true });
    expect(expectOk(r).replacements).toBe(4);
    expect(r.body.output.split("\n")[0]).toBe("Edited v.txt: 4 replacements.");
    expect(await rawText(t, "v.txt")).toBe("let bar = 1;\nbar += bar;\nprint(bar)\n");
  });

  it("takes new_string literally ($& is not a pattern)", async () => {
    const t = await withFile("d.txt", "cost: X\n");
    expectOk(await t.call("edit", { file_path: "d.txt", old_string: "X", new_string: "$& $1 $$" }));
    expect(await rawText(t, "d.txt")).toBe("cost: $& $1 $$\n");
  });

  it("NOT_UNIQUE lists the line of every match and changes nothing", async () => {
    const t = await withFile("dup.ts", "x = 1\ny = 2\nx = 1\n\nx = 1\n");
    const e = expectError(await t.call("edit", { file_path: "dup.ts", old_string: "x = 1", new_string: "x = 9" }), 422, "NOT_UNIQUE", "edit");
    expect(e.details).toMatchObject({ path: "dup.ts", count: 3, lines: [1, 3, 5] });
    expect(e.message).toContain("lines 1, 3, 5");
    expect(e.message).toContain("replace_all");
    expect(await rawText(t, "dup.ts")).toBe("x = 1\ny = 2\nx = 1\n\nx = 1\n");
  });

  it("NO_MATCH shows the nearest lines with spaces as · and tabs as →", async () => {
    const t = await withFile("src/f.ts", SRC);
    const e = expectError(await t.call("edit", { file_path: "src/f.ts", old_string: "\tif (x >= 0) {", new_string: "\tif (x > 1) {" }), 422, "NO_MATCH", "edit");
    expect(e.details.candidates[0]).toEqual({ line: 4, text: "→if·(x·>·0)·{" });
    expect(e.details.whitespace_only).toBe(false);
    expect(e.message).toContain("4: →if·(x·>·0)·{");
    expect(e.message).toContain("Your first line: →if·(x·>=·0)·{");
  });

  it("NO_MATCH says when only whitespace differs (spaces instead of tabs)", async () => {
    const t = await withFile("src/f.ts", SRC);
    const e = expectError(await t.call("edit", { file_path: "src/f.ts", old_string: "    if (x > 0) {\n        return a(x);", new_string: "x" }), 422, "NO_MATCH");
    expect(e.details.whitespace_only).toBe(true);
    expect(e.message).toContain("It matches if whitespace is ignored");
    expect(e.message).toContain("····if·(x·>·0)·{");
    expect(e.details.candidates.map((c: { line: number }) => c.line)).toContain(4);
    expect(await rawText(t, "src/f.ts")).toBe(SRC);
  });

  it("old_string equal to new_string is INVALID_ARGUMENT", async () => {
    const t = await withFile("a.txt", "abc\n");
    const e = expectError(await t.call("edit", { file_path: "a.txt", old_string: "abc", new_string: "abc" }), 400, "INVALID_ARGUMENT", "edit");
    expect(e.message).toContain("identical");
    // Both empty: creates an empty file (how the text editor's create writes an empty file).
    const created = await t.call("edit", { file_path: "new.txt", old_string: "", new_string: "" });
    expect(created.status).toBe(200);
    expect(await rawText(t, "new.txt")).toBe("");
    expectError(await t.call("edit", { file_path: "new.txt", old_string: "", new_string: "" }), 409, "ALREADY_EXISTS");
  });

  it("an empty old_string creates a new file; ALREADY_EXISTS when it exists", async () => {
    const t = await newTenant();
    const r = await t.call("edit", { file_path: "pkg/new.md", old_string: "", new_string: "# Title\n\nbody\n" });
    const data = expectOk(r);
    expect(data).toMatchObject({ file_path: "pkg/new.md", created: true, replacements: 0 });
    expect(data.diff).toBe(["--- a/pkg/new.md", "+++ b/pkg/new.md", "@@ -0,0 +1,3 @@", "+# Title", "+", "+body"].join("\n"));
    expect(r.body.output).toBe(`Created pkg/new.md.\n${data.diff}`);
    expect(await rawText(t, "pkg/new.md")).toBe("# Title\n\nbody\n");
    // It exists now.
    const e = expectError(await t.call("edit", { file_path: "pkg/new.md", old_string: "", new_string: "again" }), 409, "ALREADY_EXISTS", "edit");
    expect(e.details.path).toBe("pkg/new.md");
    expect(await rawText(t, "pkg/new.md")).toBe("# Title\n\nbody\n");
    // Created by this session: editable without a read.
    expectOk(await t.call("edit", { file_path: "pkg/new.md", old_string: "body", new_string: "text" }));
    expect(await rawText(t, "pkg/new.md")).toBe("# Title\n\ntext\n");
  });

  it("creating where another creator wins the race is ALREADY_EXISTS", async () => {
    const t = await tenantWithCreateRace("theirs\n");
    expectError(await t.call("edit", { file_path: "c.txt", old_string: "", new_string: "mine\n" }), 409, "ALREADY_EXISTS");
    expect(await rawText(t, "c.txt")).toBe("theirs\n");
  });

  it("creating below a file is NOT_A_DIRECTORY; creating a directory's path is IS_DIRECTORY", async () => {
    const t = await newTenant();
    await upload(t, "f.txt", "x\n");
    await upload(t, "dir/inner.txt", "x\n");
    expect(expectError(await t.call("edit", { file_path: "f.txt/g.txt", old_string: "", new_string: "y" }), 400, "NOT_A_DIRECTORY", "edit").details.file).toBe("f.txt");
    expectError(await t.call("edit", { file_path: "dir", old_string: "", new_string: "y" }), 400, "IS_DIRECTORY", "edit");
  });

  it("an empty new_string deletes the match", async () => {
    const t = await withFile("del.txt", "keep 1\nremove me\nkeep 2\n");
    const data = expectOk(await t.call("edit", { file_path: "del.txt", old_string: "remove me\n", new_string: "" }));
    expect(data.diff).toBe(["--- a/del.txt", "+++ b/del.txt", "@@ -1,3 +1,2 @@", " keep 1", "-remove me", " keep 2"].join("\n"));
    expect(await rawText(t, "del.txt")).toBe("keep 1\nkeep 2\n");
  });

  it("NOT_READ when the session has not read the file", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "abc\n");
    const e = expectError(await t.call("edit", { file_path: "a.txt", old_string: "abc", new_string: "xyz" }), 409, "NOT_READ", "edit");
    expect(e.details.path).toBe("a.txt");
    // Another session's read does not count.
    expectOk(await t.call("read", { file_path: "a.txt" }, "other"));
    expectError(await t.call("edit", { file_path: "a.txt", old_string: "abc", new_string: "xyz" }), 409, "NOT_READ");
    expect(await rawText(t, "a.txt")).toBe("abc\n");
  });

  it("FILE_MODIFIED when the file was changed by a raw PUT after the read", async () => {
    const t = await withFile("a.txt", "abc\n");
    const changed = await upload(t, "a.txt", "abc changed\n");
    const e = expectError(await t.call("edit", { file_path: "a.txt", old_string: "abc", new_string: "xyz" }), 409, "FILE_MODIFIED", "edit");
    expect(e.details.current_etag).toBe(changed);
    expect(await rawText(t, "a.txt")).toBe("abc changed\n");
    expectOk(await t.call("read", { file_path: "a.txt" }));
    expectOk(await t.call("edit", { file_path: "a.txt", old_string: "abc", new_string: "xyz" }));
    expect(await rawText(t, "a.txt")).toBe("xyz changed\n");
  });

  it("FILE_MODIFIED from the conditional write when the file changes between load and save", async () => {
    const t = await withFile("a.txt", "abc\n", await tenantWithOverwriteRace("intruder\n"));
    expectError(await t.call("edit", { file_path: "a.txt", old_string: "abc", new_string: "xyz" }), 409, "FILE_MODIFIED");
    expect(await rawText(t, "a.txt")).toBe("intruder\n");
  });

  it("a CRLF file keeps CRLF after an edit written with LF", async () => {
    const t = await withFile("win.txt", "line one\r\nline two\r\nline three\r\n");
    expectOk(await t.call("edit", { file_path: "win.txt", old_string: "line one\nline two", new_string: "first\nsecond\nsecond and a half" }));
    const raw = await rawGet(t, "win.txt");
    expect(sameBytes(raw.bytes, enc.encode("first\r\nsecond\r\nsecond and a half\r\nline three\r\n"))).toBe(true);
    // And the next read still says crlf, without stray CRs.
    const r = await t.call("read", { file_path: "win.txt" });
    expect(expectOk(r).line_endings).toBe("crlf");
    expect(r.body.output).not.toContain("\r");
  });

  it("a binary file is BINARY_FILE", async () => {
    const t = await withFile("logo.png", pngBytes(200));
    const e = expectError(await t.call("edit", { file_path: "logo.png", old_string: "PNG", new_string: "GIF" }), 415, "BINARY_FILE", "edit");
    expect(e.details).toMatchObject({ path: "logo.png", size: 200, type: "image/png" });
    expect(sameBytes((await rawGet(t, "logo.png")).bytes, pngBytes(200))).toBe(true);
  });

  it("invalid UTF-8 after the first 8 KB is BINARY_FILE too (never rewritten as U+FFFD)", async () => {
    const bytes = new Uint8Array([...enc.encode(`head\n${"a".repeat(9000)}\n`), 0x63, 0x61, 0x66, 0xe9, 0x0a]);
    const t = await newTenant();
    await upload(t, "latin1.txt", bytes);
    expectOk(await t.call("read", { file_path: "latin1.txt" })); // read sniffs the first 8 KB only
    expectError(await t.call("edit", { file_path: "latin1.txt", old_string: "head", new_string: "HEAD" }), 415, "BINARY_FILE");
    expect(sameBytes((await rawGet(t, "latin1.txt")).bytes, bytes)).toBe(true);
  });

  it("keeps a UTF-8 byte order mark", async () => {
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...enc.encode("hello\nworld\n")]);
    const t = await withFile("bom.txt", new TextDecoder("utf-8", { fatal: false, ignoreBOM: true }).decode(bytes));
    expectOk(await t.call("edit", { file_path: "bom.txt", old_string: "world", new_string: "there" }));
    expect(Array.from((await rawGet(t, "bom.txt")).bytes)).toEqual([0xef, 0xbb, 0xbf, ...enc.encode("hello\nthere\n")]);
  });

  it("edits unicode and emoji exactly", async () => {
    const t = await withFile("i18n/ü.txt", "Grüße 👋🏽 from 東京\nnext: ñ\n");
    const data = expectOk(await t.call("edit", { file_path: "i18n/ü.txt", old_string: "👋🏽 from 東京", new_string: "🎉 aus 大阪" }));
    expect(await rawText(t, "i18n/ü.txt")).toBe("Grüße 🎉 aus 大阪\nnext: ñ\n");
    expect(data.diff).toContain("+Grüße 🎉 aus 大阪");
    expect(data.diff).toContain("-Grüße 👋🏽 from 東京");
  });

  it("edits again after its own write or edit without re-reading", async () => {
    const t = await newTenant();
    expectOk(await t.call("write", { file_path: "a.txt", content: "one two three\n" }));
    expectOk(await t.call("edit", { file_path: "a.txt", old_string: "one", new_string: "1" }));
    expectOk(await t.call("edit", { file_path: "a.txt", old_string: "two", new_string: "2" }));
    expectOk(await t.call("multi_edit", { file_path: "a.txt", edits: [{ old_string: "three", new_string: "3" }] }));
    expectOk(await t.call("edit", { file_path: "a.txt", old_string: "1 2 3", new_string: "done" }));
    expect(await rawText(t, "a.txt")).toBe("done\n");
  });

  it("20 concurrent edits of the same read version: exactly one wins, 19 get FILE_MODIFIED", async () => {
    const t = await withFile("counter.ts", "export const value = 0;\n");
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => t.call("edit", { file_path: "counter.ts", old_string: "value = 0", new_string: `value = ${i + 1}` })),
    );
    const codes = results.map((r) => (r.status === 200 ? "ok" : r.body.error.code));
    const winners = results.flatMap((r, i) => (r.status === 200 ? [i] : []));
    expect(winners.length, JSON.stringify(codes)).toBe(1);
    for (const [i, r] of results.entries()) {
      if (i === winners[0]) continue;
      expect({ status: r.status, code: r.body.error?.code }).toEqual({ status: 409, code: "FILE_MODIFIED" });
    }
    const raw = await rawGet(t, "counter.ts");
    expect(new TextDecoder().decode(raw.bytes)).toBe(`export const value = ${winners[0]! + 1};\n`);
    expect(raw.etag).toBe(`"${results[winners[0]!]!.body.data.etag}"`);
  });

  it("control: without the conditional write the same race would lose updates (so the test above can fail)", async () => {
    const r2 = r2Driver(env.FILES);
    const unguarded: StorageDriver = { ...r2, put: (key, body, opts) => r2.put(key, body, opts?.ifMatch !== undefined ? { ...opts, ifMatch: undefined } : opts) };
    const t = await withFile("counter.ts", "export const value = 0;\n", await newTenant(testApp({ storage: unguarded })));
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => t.call("edit", { file_path: "counter.ts", old_string: "value = 0", new_string: `value = ${i + 1}` })));
    expect(results.filter((r) => r.status === 200).length).toBeGreaterThan(1);
  });

  it("a file over 10 MB is FILE_TOO_LARGE", async () => {
    const t = await withFile("big.txt", `${"0123456789abcdef\n".repeat(640 * 1024)}x\n`);
    const e = expectError(await t.call("edit", { file_path: "big.txt", old_string: "x\n", new_string: "y\n" }), 413, "FILE_TOO_LARGE", "edit");
    expect(e.details).toMatchObject({ path: "big.txt", max: 10 * 1024 * 1024 });
  }, 60_000);

  it("a missing file is NOT_FOUND with similar paths; a directory is IS_DIRECTORY", async () => {
    const t = await newTenant();
    await upload(t, "src/index.ts", "x\n");
    const e = expectError(await t.call("edit", { file_path: "src/indx.ts", old_string: "x", new_string: "y" }), 404, "NOT_FOUND", "edit");
    expect(e.details.similar).toContain("src/index.ts");
    expectError(await t.call("edit", { file_path: "src", old_string: "x", new_string: "y" }), 400, "IS_DIRECTORY", "edit");
  });

  it("INVALID_PATH, INVALID_ARGUMENT", async () => {
    const t = await newTenant();
    for (const p of ["../a.txt", "a\u0000", "x/../../y"]) expectError(await t.call("edit", { file_path: p, old_string: "a", new_string: "b" }), 400, "INVALID_PATH", "edit");
    for (const args of [{ file_path: "a.txt", new_string: "b" }, { file_path: "a.txt", old_string: "a" }, { file_path: "a.txt", old_string: "a", new_string: "b", replace_all: "yes" }, { file_path: 1, old_string: "a", new_string: "b" }]) {
      expectError(await t.call("edit", args), 400, "INVALID_ARGUMENT", "edit");
    }
  });

  it("UNAUTHORIZED, NOT_FOUND workspace, PERMISSION_DENIED without the write scope", async () => {
    const t = await withFile("a.txt", "abc\n");
    await expectAuthErrors(t, "edit", { file_path: "a.txt", old_string: "abc", new_string: "xyz" });
    await expectMissingWorkspace(t, "edit", { file_path: "a.txt", old_string: "abc", new_string: "xyz" });
    const readOnly = await keyWithScopes(t, ["read"]);
    expectError(await callAs(t, `Bearer ${readOnly}`, "edit", { file_path: "a.txt", old_string: "abc", new_string: "xyz" }), 403, "PERMISSION_DENIED", "edit");
    expect(await rawText(t, "a.txt")).toBe("abc\n");
  });

  it("a replace_all that would pass 10 MiB is refused with FILE_TOO_LARGE, fast, and nothing is stored", async () => {
    // The reproduction: x → 1,000 × y in a 100 KB file would be ~100 MB.
    const content = ("x".repeat(99) + "\n").repeat(1000);
    const t = await withFile("big.txt", content);
    const before = await rawGet(t, "big.txt");
    const t0 = Date.now();
    const e = expectError(await t.call("edit", { file_path: "big.txt", old_string: "x", new_string: "y".repeat(1000), replace_all: true }), 413, "FILE_TOO_LARGE", "edit");
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(e.details).toMatchObject({ path: "big.txt", size: 99_000 * 1000 + 1000, limit: 10 * 1024 * 1024, replacements: 99_000 });
    expect(e.message).toContain("99,001,000 bytes");
    expect(e.message).toContain("10 MiB");
    const after = await rawGet(t, "big.txt");
    expect(after.etag).toBe(before.etag);
    // A new file over the limit is refused the same way.
    expectError(await t.call("edit", { file_path: "huge.txt", old_string: "", new_string: "z".repeat(10 * 1024 * 1024 + 1) }), 413, "FILE_TOO_LARGE", "edit");
    expect((await rawGet(t, "huge.txt")).status).toBe(404);
  });

  it("NO_MATCH says when old_string kept read's line-number prefixes", async () => {
    const t = await withFile("src/f.ts", SRC);
    // Lines 4 and 5 exactly as read shows them.
    const out = (await t.call("read", { file_path: "src/f.ts", offset: 4, limit: 2 })).body.output as string;
    const pasted = out.split("\n").slice(0, 2).join("\n");
    expect(pasted).toBe("     4\t\tif (x > 0) {\n     5\t\t\treturn a(x);");
    const e = expectError(await t.call("edit", { file_path: "src/f.ts", old_string: pasted, new_string: "\tif (x) {\n\t\treturn 1;" }), 422, "NO_MATCH", "edit");
    // The prefix as read writes it (a tab, shown escaped), the same as details.example_prefix.
    expect(e.message).toContain(`old_string starts with line-number prefixes from read's output (e.g. "     4\\t": spaces, the line number and a tab, as in details.example_prefix); drop that prefix from every line and retry`);
    expect(e.details).toMatchObject({ line_number_prefix: true, example_prefix: "     4\t" });
    expect(await rawText(t, "src/f.ts")).toBe(SRC);
  });

  it("INTERNAL when storage fails", async () => {
    const t = await tenantWithBrokenFile();
    const r = await t.call("edit", { file_path: "boom.txt", old_string: "", new_string: "x" });
    expectError(r, 500, "INTERNAL", "edit");
    expect(JSON.stringify(r.body)).not.toContain("secret-detail-xyz");
  });
});

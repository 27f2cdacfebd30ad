import { describe, expect, it } from "vitest";
import { newTenant, upload, type Tenant } from "../helpers.js";
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


const CONFIG = "host = localhost\nport = 8080\ndebug = true\nname = app\n";

describe("multi_edit", () => {
  it("applies edits in order, each on the result of the previous ones", async () => {
    const t = await withFile("app.conf", CONFIG);
    const r = await t.call("multi_edit", {
      file_path: "app.conf",
      edits: [
        { old_string: "port = 8080", new_string: "port = 9090" },
        // Sees the first edit's result.
        { old_string: "port = 9090", new_string: "port = 9191" },
        { old_string: " = ", new_string: ": ", replace_all: true },
      ],
    });
    const data = expectOk(r);
    expect(r.body.tool).toBe("multi_edit");
    expect(await rawText(t, "app.conf")).toBe("host: localhost\nport: 9191\ndebug: true\nname: app\n");
    expect(data).toMatchObject({ file_path: "app.conf", edits_applied: 3, replacements: 6, created: false });
    expect(r.body.output.split("\n")[0]).toBe("Edited app.conf: 3 edits, 6 replacements.");
    expect(data.diff).toBe(
      ["--- a/app.conf", "+++ b/app.conf", "@@ -1,4 +1,4 @@", "-host = localhost", "-port = 8080", "-debug = true", "-name = app", "+host: localhost", "+port: 9191", "+debug: true", "+name: app"].join("\n"),
    );
    expect((await rawGet(t, "app.conf")).etag).toBe(`"${data.etag}"`);
  });

  it("an edit that only matches after an earlier edit works; one that matched only before fails", async () => {
    const t = await withFile("s.txt", "alpha\n");
    expectOk(await t.call("multi_edit", { file_path: "s.txt", edits: [{ old_string: "alpha", new_string: "beta" }, { old_string: "beta", new_string: "gamma" }] }));
    expect(await rawText(t, "s.txt")).toBe("gamma\n");
    const e = expectError(await t.call("multi_edit", { file_path: "s.txt", edits: [{ old_string: "gamma", new_string: "delta" }, { old_string: "gamma", new_string: "epsilon" }] }), 422, "NO_MATCH");
    expect(e.message.startsWith("edits[1]: ")).toBe(true);
    expect(await rawText(t, "s.txt")).toBe("gamma\n");
  });

  it("is all or nothing: a failing edits[2] leaves the file byte-identical and names edits[2]", async () => {
    const t = await withFile("app.conf", CONFIG);
    const before = await rawGet(t, "app.conf");
    const r = await t.call("multi_edit", {
      file_path: "app.conf",
      edits: [
        { old_string: "host = localhost", new_string: "host = example.com" },
        { old_string: "debug = true", new_string: "debug = false" },
        { old_string: "port = 8081", new_string: "port = 1" },
      ],
    });
    const e = expectError(r, 422, "NO_MATCH", "multi_edit");
    expect(e.message.startsWith("edits[2]: ")).toBe(true);
    expect(e.details.edit).toBe(2);
    expect(e.message).toContain("2: port·=·8080");
    const after = await rawGet(t, "app.conf");
    expect(sameBytes(after.bytes, before.bytes)).toBe(true);
    expect(after.etag).toBe(before.etag);
    // Still editable with the same read (nothing changed).
    expectOk(await t.call("multi_edit", { file_path: "app.conf", edits: [{ old_string: "port = 8080", new_string: "port = 1" }] }));
  });

  it("names the failing edit for NOT_UNIQUE and INVALID_ARGUMENT too", async () => {
    const t = await withFile("d.txt", "a\nb\na\n");
    const before = await rawGet(t, "d.txt");
    const nu = expectError(await t.call("multi_edit", { file_path: "d.txt", edits: [{ old_string: "b", new_string: "c" }, { old_string: "a", new_string: "z" }] }), 422, "NOT_UNIQUE");
    expect(nu.message.startsWith("edits[1]: ")).toBe(true);
    expect(nu.details.edit).toBe(1);
    expect(nu.details.lines).toEqual([1, 3]);
    const same = expectError(await t.call("multi_edit", { file_path: "d.txt", edits: [{ old_string: "b", new_string: "c" }, { old_string: "c", new_string: "c" }] }), 400, "INVALID_ARGUMENT");
    expect(same.message.startsWith("edits[1]: ")).toBe(true);
    const empty = expectError(await t.call("multi_edit", { file_path: "d.txt", edits: [{ old_string: "b", new_string: "c" }, { old_string: "", new_string: "x" }] }), 400, "INVALID_ARGUMENT");
    expect(empty.message.startsWith("edits[1]: ")).toBe(true);
    expect(sameBytes((await rawGet(t, "d.txt")).bytes, before.bytes)).toBe(true);
  });

  it("creates a new file when the first old_string is empty, then applies the rest", async () => {
    const t = await newTenant();
    const r = await t.call("multi_edit", {
      file_path: "new/file.py",
      edits: [
        { old_string: "", new_string: "def f():\n    return OLD\n" },
        { old_string: "OLD", new_string: "42" },
      ],
    });
    const data = expectOk(r);
    expect(data).toMatchObject({ file_path: "new/file.py", created: true, edits_applied: 2, replacements: 1 });
    expect(data.diff).toBe(["--- a/new/file.py", "+++ b/new/file.py", "@@ -0,0 +1,2 @@", "+def f():", "+    return 42"].join("\n"));
    expect(r.body.output.split("\n")[0]).toBe("Created new/file.py: 2 edits, 1 replacement.");
    expect(await rawText(t, "new/file.py")).toBe("def f():\n    return 42\n");
    // Created by this session: editable without a read.
    expectOk(await t.call("multi_edit", { file_path: "new/file.py", edits: [{ old_string: "42", new_string: "43" }] }));
    expect(await rawText(t, "new/file.py")).toBe("def f():\n    return 43\n");
  });

  it("a failing edit after a creating edit creates nothing, and names its index", async () => {
    const t = await newTenant();
    const e = expectError(
      await t.call("multi_edit", { file_path: "n.txt", edits: [{ old_string: "", new_string: "abc\n" }, { old_string: "abc", new_string: "x" }, { old_string: "zzz", new_string: "y" }] }),
      422,
      "NO_MATCH",
    );
    expect(e.message.startsWith("edits[2]: ")).toBe(true);
    expect(e.details.edit).toBe(2);
    expect((await rawGet(t, "n.txt")).status).toBe(404);
  });

  it("an empty first old_string on an existing file is ALREADY_EXISTS", async () => {
    const t = await withFile("e.txt", "x\n");
    const e = expectError(await t.call("multi_edit", { file_path: "e.txt", edits: [{ old_string: "", new_string: "y" }] }), 409, "ALREADY_EXISTS", "multi_edit");
    expect(e.details).toMatchObject({ path: "e.txt", edit: 0 });
    expect(await rawText(t, "e.txt")).toBe("x\n");
  });

  it("creation that loses the race to another creator is ALREADY_EXISTS", async () => {
    const t = await tenantWithCreateRace("theirs\n");
    expectError(await t.call("multi_edit", { file_path: "c.txt", edits: [{ old_string: "", new_string: "mine\n" }] }), 409, "ALREADY_EXISTS");
    expect(await rawText(t, "c.txt")).toBe("theirs\n");
  });

  it("creation below a file is NOT_A_DIRECTORY; at a directory's path IS_DIRECTORY", async () => {
    const t = await newTenant();
    await upload(t, "f.txt", "x\n");
    await upload(t, "dir/a.txt", "x\n");
    expectError(await t.call("multi_edit", { file_path: "f.txt/new", edits: [{ old_string: "", new_string: "y" }] }), 400, "NOT_A_DIRECTORY", "multi_edit");
    expectError(await t.call("multi_edit", { file_path: "dir", edits: [{ old_string: "", new_string: "y" }] }), 400, "IS_DIRECTORY", "multi_edit");
    expectError(await t.call("multi_edit", { file_path: "dir", edits: [{ old_string: "x", new_string: "y" }] }), 400, "IS_DIRECTORY");
  });

  it("NOT_READ without a read in this session", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "abc\n");
    expectError(await t.call("multi_edit", { file_path: "a.txt", edits: [{ old_string: "abc", new_string: "x" }] }), 409, "NOT_READ", "multi_edit");
    expectOk(await t.call("read", { file_path: "a.txt" }, "other-session"));
    expectError(await t.call("multi_edit", { file_path: "a.txt", edits: [{ old_string: "abc", new_string: "x" }] }), 409, "NOT_READ");
    expect(await rawText(t, "a.txt")).toBe("abc\n");
  });

  it("FILE_MODIFIED when the file changed since the read (raw PUT), and from the conditional write", async () => {
    const t = await withFile("a.txt", "abc\n");
    const changed = await upload(t, "a.txt", "abc 2\n");
    const e = expectError(await t.call("multi_edit", { file_path: "a.txt", edits: [{ old_string: "abc", new_string: "x" }] }), 409, "FILE_MODIFIED", "multi_edit");
    expect(e.details.current_etag).toBe(changed);
    expect(await rawText(t, "a.txt")).toBe("abc 2\n");

    const raced = await withFile("b.txt", "abc\n", await tenantWithOverwriteRace("intruder\n"));
    expectError(await raced.call("multi_edit", { file_path: "b.txt", edits: [{ old_string: "abc", new_string: "x" }] }), 409, "FILE_MODIFIED");
    expect(await rawText(raced, "b.txt")).toBe("intruder\n");
  });

  it("keeps CRLF line endings", async () => {
    const t = await withFile("w.txt", "a\r\nb\r\nc\r\n");
    expectOk(await t.call("multi_edit", { file_path: "w.txt", edits: [{ old_string: "a\nb", new_string: "A\nB" }, { old_string: "c\n", new_string: "C\nD\n" }] }));
    expect(sameBytes((await rawGet(t, "w.txt")).bytes, enc.encode("A\r\nB\r\nC\r\nD\r\n"))).toBe(true);
  });

  it("BINARY_FILE for a binary file, FILE_TOO_LARGE over 10 MB, NOT_FOUND with similar paths", async () => {
    const t = await withFile("img.png", pngBytes(100));
    expectError(await t.call("multi_edit", { file_path: "img.png", edits: [{ old_string: "PNG", new_string: "JPG" }] }), 415, "BINARY_FILE", "multi_edit");
    await withFile("big.txt", "0123456789abcdef\n".repeat(640 * 1024 + 1), t);
    expectError(await t.call("multi_edit", { file_path: "big.txt", edits: [{ old_string: "0123", new_string: "x" }] }), 413, "FILE_TOO_LARGE", "multi_edit");
    await upload(t, "src/index.ts", "x\n");
    const nf = expectError(await t.call("multi_edit", { file_path: "src/indx.ts", edits: [{ old_string: "x", new_string: "y" }] }), 404, "NOT_FOUND", "multi_edit");
    expect(nf.details.similar).toContain("src/index.ts");
  }, 60_000);

  it("concurrent multi_edits of one read version: exactly one wins, the rest FILE_MODIFIED", async () => {
    const t = await withFile("m.txt", "a = 0\nb = 0\n");
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => t.call("multi_edit", { file_path: "m.txt", edits: [{ old_string: "a = 0", new_string: `a = ${i + 1}` }, { old_string: "b = 0", new_string: `b = ${i + 1}` }] })),
    );
    const winners = results.flatMap((r, i) => (r.status === 200 ? [i] : []));
    expect(winners.length, JSON.stringify(results.map((r) => r.body.error?.code ?? "ok"))).toBe(1);
    for (const r of results) if (r.status !== 200) expect(r.body.error.code).toBe("FILE_MODIFIED");
    expect(await rawText(t, "m.txt")).toBe(`a = ${winners[0]! + 1}\nb = ${winners[0]! + 1}\n`);
  });

  it("INVALID_PATH and INVALID_ARGUMENT (no edits, too many, malformed)", async () => {
    const t = await withFile("a.txt", "abc\n");
    expectError(await t.call("multi_edit", { file_path: "../a.txt", edits: [{ old_string: "a", new_string: "b" }] }), 400, "INVALID_PATH", "multi_edit");
    const tooMany = Array.from({ length: 101 }, (_, i) => ({ old_string: `${i}`, new_string: `x${i}` }));
    for (const args of [
      { file_path: "a.txt", edits: [] },
      { file_path: "a.txt" },
      { file_path: "a.txt", edits: tooMany },
      { file_path: "a.txt", edits: [{ old_string: "a" }] },
      { file_path: "a.txt", edits: "abc->x" },
      { file_path: "a.txt", edits: [{ old_string: "abc", new_string: "x", replace_all: 1 }] },
    ]) {
      expectError(await t.call("multi_edit", args), 400, "INVALID_ARGUMENT", "multi_edit");
    }
    expect(await rawText(t, "a.txt")).toBe("abc\n");
  });

  it("UNAUTHORIZED, NOT_FOUND workspace, PERMISSION_DENIED without the write scope", async () => {
    const t = await withFile("a.txt", "abc\n");
    const args = { file_path: "a.txt", edits: [{ old_string: "abc", new_string: "x" }] };
    await expectAuthErrors(t, "multi_edit", args);
    await expectMissingWorkspace(t, "multi_edit", args);
    const readOnly = await keyWithScopes(t, ["read", "execute"]);
    expectError(await callAs(t, `Bearer ${readOnly}`, "multi_edit", args), 403, "PERMISSION_DENIED", "multi_edit");
    expect(await rawText(t, "a.txt")).toBe("abc\n");
  });

  it("100 doubling edits: FILE_TOO_LARGE names the first edit that would pass 10 MiB (it stops there: the 100th would need 2^100 copies), and nothing is stored", async () => {
    const content = "x".repeat(100_000); // 100 KB
    const t = await withFile("d.txt", content);
    const before = await rawGet(t, "d.txt");
    const edits = Array.from({ length: 100 }, () => ({ old_string: "x", new_string: "xx", replace_all: true }));
    const e = expectError(await t.call("multi_edit", { file_path: "d.txt", edits }), 413, "FILE_TOO_LARGE", "multi_edit");
    // 100 KB × 2^7 = 12.8 MB > 10 MiB ≥ 6.4 MB: edits[6] is the seventh doubling.
    expect(e.details).toMatchObject({ edit: 6, size: 12_800_000, limit: 10 * 1024 * 1024 });
    expect(e.message.startsWith("edits[6]: this edit would make d.txt 12,800,000 bytes")).toBe(true);
    expect((await rawGet(t, "d.txt")).etag).toBe(before.etag);
  });

  it("the diff of two far-apart edits has two hunks with only the changed lines", async () => {
    const lines = Array.from({ length: 30 }, (_, i) => `row ${i + 1}`).join("\n") + "\n";
    const t = await withFile("rows.txt", lines);
    const data = expectOk(await t.call("multi_edit", { file_path: "rows.txt", edits: [{ old_string: "row 2\n", new_string: "ROW 2\n" }, { old_string: "row 28\n", new_string: "ROW 28\n" }] }));
    expect(data.diff).toBe(
      ["--- a/rows.txt", "+++ b/rows.txt", "@@ -1,5 +1,5 @@", " row 1", "-row 2", "+ROW 2", " row 3", " row 4", " row 5",
        "@@ -25,6 +25,6 @@", " row 25", " row 26", " row 27", "-row 28", "+ROW 28", " row 29", " row 30"].join("\n"),
    );
  });

  it("NO_MATCH names the edit and says when old_string kept read's line-number prefixes", async () => {
    const t = await withFile("app.conf", CONFIG);
    const e = expectError(await t.call("multi_edit", { file_path: "app.conf", edits: [{ old_string: "debug = true", new_string: "debug = false" }, { old_string: "     2\tport = 8080", new_string: "port = 1" }] }), 422, "NO_MATCH", "multi_edit");
    expect(e.message).toMatch(/^edits\[1\]: .*old_string starts with line-number prefixes from read's output \(e\.g\. "     2\\t": spaces, the line number and a tab, as in details\.example_prefix\); drop that prefix from every line and retry/);
    expect(e.details).toMatchObject({ edit: 1, line_number_prefix: true });
    expect(await rawText(t, "app.conf")).toBe(CONFIG);
  });

  it("INTERNAL when storage fails", async () => {
    const t = await tenantWithBrokenFile();
    const r = await t.call("multi_edit", { file_path: "boom.txt", edits: [{ old_string: "", new_string: "x" }] });
    expectError(r, 500, "INTERNAL", "multi_edit");
    expect(JSON.stringify(r.body)).not.toContain("secret-detail-xyz");
  });
});

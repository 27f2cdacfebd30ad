import { describe, expect, it } from "vitest";
import { newTenant, upload } from "../helpers.js";
import {
  callAs,
  callRaw,
  enc,
  expectAuthErrors,
  expectError,
  expectMissingWorkspace,
  expectOk,
  keyWithScopes,
  pngBytes,
  sameBytes,
  tenantWithBrokenFile,
} from "./file-helpers.js";

/** The text lines of a read's output (number prefix removed), without the notes. */
function bodyLines(output: string): { n: number; text: string }[] {
  const out: { n: number; text: string }[] = [];
  for (const l of output.split("\n")) {
    const m = l.match(/^ *(\d+)\t(.*)$/s);
    if (m) out.push({ n: Number(m[1]), text: m[2]! });
  }
  return out;
}

const numbered = (lines: string[], start = 1) => lines.map((l, i) => `${String(start + i).padStart(6)}\t${l}`).join("\n");

describe("read", () => {
  it("returns numbered lines like cat -n and the file's metadata", async () => {
    const t = await newTenant();
    const etag = await upload(t, "src/a.ts", "one\ntwo\nthree\n");
    const r = await t.call("read", { file_path: "/src/a.ts" });
    const data = expectOk(r);
    expect(r.body.tool).toBe("read");
    expect(r.body.title).toBe("src/a.ts");
    expect(r.body.output).toBe("     1\tone\n     2\ttwo\n     3\tthree");
    expect(data).toMatchObject({ file_path: "src/a.ts", etag, size: 14, start_line: 1, lines_returned: 3, total_lines: 3, truncated: false, next_offset: null, line_endings: "lf" });
    expect(new Date(data.modified).getTime()).toBeGreaterThan(Date.now() - 60_000);
    expect(r.body.usage.ms).toBeGreaterThanOrEqual(0);
    expect(r.body.usage.bytes_read).toBeGreaterThan(0);
  });

  it("keeps indentation, tabs and blank lines; numbers are 6 wide, right-aligned", async () => {
    const t = await newTenant();
    const lines = Array.from({ length: 12 }, (_, i) => (i % 3 === 0 ? "" : `\t${" ".repeat(i)}x${i}`));
    await upload(t, "f.py", `${lines.join("\n")}\n`);
    const r = await t.call("read", { file_path: "f.py", offset: 9 });
    expect(r.body.output).toBe(numbered(lines.slice(8), 9));
    expect(r.body.output.split("\n")[1]).toBe("    10\t");
    expect(r.body.output.split("\n")[2]).toBe(`    11\t\t${" ".repeat(10)}x10`);
  });

  it("the same path in any spelling is the same file", async () => {
    const t = await newTenant();
    await upload(t, "src/lib/a.ts", "x\n");
    for (const p of ["src/lib/a.ts", "/src/lib/a.ts", "./src//lib/./a.ts", "src/x/../lib/a.ts"]) {
      expect(expectOk(await t.call("read", { file_path: p })).file_path).toBe("src/lib/a.ts");
    }
  });

  it("pages with offset and limit; next_offset continues exactly where the page ended", async () => {
    const t = await newTenant();
    const lines = Array.from({ length: 25 }, (_, i) => `line ${i + 1}`);
    await upload(t, "p.txt", `${lines.join("\n")}\n`);
    const r = await t.call("read", { file_path: "p.txt", offset: 5, limit: 10 });
    const data = expectOk(r);
    expect(data).toMatchObject({ start_line: 5, lines_returned: 10, total_lines: 25, truncated: true, next_offset: 15 });
    expect(r.body.output).toBe(`${numbered(lines.slice(4, 14), 5)}\n\n[Showing lines 5-14 of 25 (limit of 10 lines reached). Call read with offset=15 to continue.]`);

    // Following next_offset reads every line exactly once.
    const seen: string[] = [];
    let offset: number | null = 1;
    while (offset !== null) {
      const r = await t.call("read", { file_path: "p.txt", offset, limit: 7 });
      seen.push(...bodyLines(r.body.output).map((l) => l.text));
      offset = expectOk(r).next_offset;
    }
    expect(seen).toEqual(lines);

    // The last page, ending exactly at the last line, says so.
    const last = expectOk(await t.call("read", { file_path: "p.txt", offset: 21, limit: 5 }));
    expect(last).toMatchObject({ lines_returned: 5, truncated: false, next_offset: null });
  });

  it("caps the output at 50 KB with a note giving offset=N", async () => {
    const t = await newTenant();
    const lines = Array.from({ length: 2000 }, (_, i) => `${String(i + 1).padStart(5, "0")} ${"a".repeat(94)}`);
    await upload(t, "big.txt", `${lines.join("\n")}\n`);
    const r = await t.call("read", { file_path: "big.txt" });
    const data = expectOk(r);
    const [text, note] = r.body.output.split("\n\n");
    expect(enc.encode(text).length).toBeLessThanOrEqual(50 * 1024);
    expect(enc.encode(text).length).toBeGreaterThan(45 * 1024);
    expect(data.truncated).toBe(true);
    expect(data.lines_returned).toBe(bodyLines(text).length);
    expect(data.next_offset).toBe(data.lines_returned + 1);
    expect(note).toBe(`[Showing lines 1-${data.lines_returned} of 2000 (output reached 50 KB). Call read with offset=${data.next_offset} to continue.]`);
    const next = await t.call("read", { file_path: "big.txt", offset: data.next_offset, limit: 1 });
    expect(bodyLines(next.body.output)).toEqual([{ n: data.next_offset, text: lines[data.next_offset - 1] }]);
  });

  it("the 50 KB cap counts bytes, not characters (multi-byte text)", async () => {
    const t = await newTenant();
    const lines = Array.from({ length: 1000 }, (_, i) => `${i} ${"日本語".repeat(30)}`);
    await upload(t, "cjk.txt", `${lines.join("\n")}\n`);
    const r = await t.call("read", { file_path: "cjk.txt" });
    const data = expectOk(r);
    const text = r.body.output.split("\n\n")[0];
    expect(enc.encode(text).length).toBeLessThanOrEqual(50 * 1024);
    expect(data.truncated).toBe(true);
    expect(r.body.output).toContain(`offset=${data.next_offset}`);
  });

  it("cuts lines over 2000 characters with a marker", async () => {
    const t = await newTenant();
    const long = "x".repeat(5000);
    const longUnicode = "é".repeat(2500);
    await upload(t, "min.js", `short\n${long}\n${"y".repeat(2000)}\n${longUnicode}\n`);
    const r = await t.call("read", { file_path: "min.js" });
    const data = expectOk(r);
    const lines = bodyLines(r.body.output);
    expect(lines[0]!.text).toBe("short");
    expect(lines[1]!.text).toBe(`${"x".repeat(2000)}… [line cut: 5000 characters]`);
    expect(lines[2]!.text).toBe("y".repeat(2000)); // exactly 2000: not cut
    expect(lines[3]!.text).toBe(`${"é".repeat(2000)}… [line cut: 2500 characters]`);
    expect(r.body.output).toContain("[2 lines longer than 2000 characters were cut (the first: line 2)");
    expect(data).toMatchObject({ lines_returned: 4, total_lines: 4, truncated: false });
  });

  it("says how to see the rest of a cut line", async () => {
    const t = await newTenant();
    await upload(t, "dist/my bundle.js", `// head\n${"a".repeat(3000)}\n${"b".repeat(60_000)}\n`);
    const r = await t.call("read", { file_path: "dist/my bundle.js" });
    expect(expectOk(r)).toMatchObject({ lines_returned: 3 });
    expect(r.body.output).toContain("[2 lines longer than 2000 characters were cut (the first: line 2); read shows no more of a line.");
    expect(r.body.output).toContain("grep for text in it");
    expect(r.body.output).toContain("sed -n '2p' '/workspace/dist/my bundle.js' | cut -c2001-4000");
  });

  it("counts only the cut lines it shows: a page that stops at 50 KB before a long line says nothing of it", async () => {
    const t = await newTenant();
    await upload(t, "big.txt", `${"c".repeat(1999)}\n`.repeat(25) + "d".repeat(5000) + "\n");
    const p = await t.call("read", { file_path: "big.txt" });
    expect(expectOk(p)).toMatchObject({ lines_returned: 25, truncated: true, next_offset: 26 });
    expect(p.body.output).not.toContain("longer than 2000 characters");
  });

  it("says when a file is empty, and records the read", async () => {
    const t = await newTenant();
    await upload(t, "empty.txt", "");
    const r = await t.call("read", { file_path: "empty.txt" });
    const data = expectOk(r);
    expect(r.body.output).toBe("(empty.txt is empty: 0 bytes)");
    expect(data).toMatchObject({ size: 0, total_lines: 0, lines_returned: 0, truncated: false, next_offset: null });
    // Recorded: the session may now overwrite it.
    expect(expectOk(await t.call("write", { file_path: "empty.txt", content: "now full\n" })).created).toBe(false);
  });

  it("reads CRLF files without stray carriage returns and reports the line endings", async () => {
    const t = await newTenant();
    await upload(t, "win.txt", "first\r\nsecond\r\n\r\nlast\r\n");
    const r = await t.call("read", { file_path: "win.txt" });
    const data = expectOk(r);
    expect(r.body.output).toBe(numbered(["first", "second", "", "last"]));
    expect(r.body.output).not.toContain("\r");
    expect(data).toMatchObject({ line_endings: "crlf", total_lines: 4 });
    await upload(t, "mixed.txt", "a\r\nb\nc\n");
    expect(expectOk(await t.call("read", { file_path: "mixed.txt" })).line_endings).toBe("mixed");
  });

  it("line_endings of a file whose first line ending is past the first 8 KB: the ending read, not none; a long last line with none is none", async () => {
    const t = await newTenant();
    const long = "x".repeat(20_000);
    for (const [name, text, want] of [["long-lf.txt", `${long}\nb\n`, "lf"], ["long-crlf.txt", `${long}\r\nb\r\n`, "crlf"], ["long-none.txt", long, "none"]] as const) {
      await upload(t, name, text);
      expect(expectOk(await t.call("read", { file_path: name })).line_endings, name).toBe(want);
      if (want !== "none") expect(expectOk(await t.call("read", { file_path: name, offset: 2 })).line_endings, `${name} offset 2`).toBe(want);
    }
  });

  it("reads a file without a trailing newline", async () => {
    const t = await newTenant();
    await upload(t, "n.txt", "alpha\nbeta");
    const r = await t.call("read", { file_path: "n.txt" });
    expect(r.body.output).toBe(numbered(["alpha", "beta"]));
    expect(expectOk(r)).toMatchObject({ total_lines: 2, lines_returned: 2 });
    await upload(t, "one.txt", "just one line");
    expect(expectOk(await t.call("read", { file_path: "one.txt" }))).toMatchObject({ total_lines: 1, line_endings: "none" });
    await upload(t, "nl.txt", "\n");
    const nl = await t.call("read", { file_path: "nl.txt" });
    expect(nl.body.output).toBe("     1\t");
    expect(expectOk(nl).total_lines).toBe(1);
  });

  it("reads multi-byte text intact across the 8 KB sniff and stream chunk boundaries (file > 1 MB)", async () => {
    const t = await newTenant();
    // First line puts a 4-byte emoji across byte 8192; the rest mixes 1- to 4-byte characters
    // at varying offsets so characters straddle whatever chunk size the stream uses.
    const alphabet = ["a", "é", "ß", "日", "本", "😀", "🎉", "Ω", " ", "ж", "𝄞"];
    const lines = [`${"a".repeat(8190)}😀tail`];
    let size = enc.encode(lines[0]!).length + 1;
    let k = 0;
    while (size < 1.3 * 1024 * 1024) {
      let l = "";
      const n = 40 + ((k * 7) % 180);
      for (let i = 0; i < n; i++) l += alphabet[(k + i * i) % alphabet.length];
      lines.push(l);
      size += enc.encode(l).length + 1;
      k++;
    }
    const text = `${lines.join("\n")}\n`;
    expect(enc.encode(text).length).toBeGreaterThan(1024 * 1024);
    await upload(t, "u.txt", text);

    const got: string[] = [];
    let offset: number | null = 1;
    let pages = 0;
    while (offset !== null) {
      const r = await t.call("read", { file_path: "u.txt", offset });
      const data = expectOk(r);
      const page = bodyLines(r.body.output.split("\n\n[")[0]);
      expect(page[0]!.n).toBe(offset);
      got.push(...page.map((l) => l.text));
      offset = data.next_offset;
      pages++;
    }
    expect(pages).toBeGreaterThan(5);
    expect(got.length).toBe(lines.length);
    expect(got.join("\n")).not.toContain("\uFFFD");
    // Line 1 is over 2000 characters, so it is cut; all others are intact.
    expect(got[0]).toBe(`${"a".repeat(2000)}… [line cut: 8196 characters]`);
    expect(got.slice(1)).toEqual(lines.slice(1));
  }, 60_000);

  it("a multi-byte character across the 8 KB sniff boundary is still text", async () => {
    const t = await newTenant();
    for (const cut of [1, 2, 3]) {
      // The emoji starts `cut` bytes before byte 8192.
      await upload(t, `s${cut}.txt`, `${"b".repeat(8192 - cut)}😀\nend\n`);
      const r = await t.call("read", { file_path: `s${cut}.txt`, offset: 2 });
      expect(r.body.output).toBe("     2\tend");
    }
  });

  it("refuses an offset past the end", async () => {
    const t = await newTenant();
    await upload(t, "short.txt", "a\nb\nc\n");
    const e = expectError(await t.call("read", { file_path: "short.txt", offset: 4 }), 400, "INVALID_ARGUMENT", "read");
    expect(e.details.total_lines).toBe(3);
    expect(e.message).toContain("3 lines");
    expectError(await t.call("read", { file_path: "short.txt", offset: 1000 }), 400, "INVALID_ARGUMENT");
  });

  it("refuses a binary file with BINARY_FILE (size and type)", async () => {
    const t = await newTenant();
    await upload(t, "logo.png", pngBytes(300));
    const e = expectError(await t.call("read", { file_path: "logo.png" }), 415, "BINARY_FILE", "read");
    expect(e.details).toMatchObject({ path: "logo.png", size: 300, type: "image/png" });
    expect(e.message).toContain("base64");
    // Invalid UTF-8 without a NUL is binary too.
    await upload(t, "latin1.txt", new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x0a]));
    expect(expectError(await t.call("read", { file_path: "latin1.txt" }), 415, "BINARY_FILE").details.type).toBe("application/octet-stream");
  });

  it("base64 returns the exact bytes and records the read", async () => {
    const t = await newTenant();
    const bytes = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7 + 3) & 0xff);
    bytes.set(pngBytes(16));
    await upload(t, "img.png", bytes);
    const r = await t.call("read", { file_path: "img.png", encoding: "base64" });
    const data = expectOk(r);
    expect(data).toMatchObject({ encoding: "base64", type: "image/png", size: 1000 });
    const back = Uint8Array.from(atob(data.content_base64), (c) => c.charCodeAt(0));
    expect(sameBytes(back, bytes)).toBe(true);
    expect(r.body.output).toBe(data.content_base64);
    // Recorded: the session may overwrite it.
    expect(expectOk(await t.call("write", { file_path: "img.png", content: btoa("new"), encoding: "base64" })).created).toBe(false);
    // Text files can be read as base64 too.
    await upload(t, "t.txt", "héllo\n");
    const tb = expectOk(await t.call("read", { file_path: "t.txt", encoding: "base64" }));
    expect(new TextDecoder().decode(Uint8Array.from(atob(tb.content_base64), (c) => c.charCodeAt(0)))).toBe("héllo\n");
  });

  it("base64 over 64 KB is FILE_TOO_LARGE", async () => {
    const t = await newTenant();
    await upload(t, "ok.bin", pngBytes(64 * 1024));
    expectOk(await t.call("read", { file_path: "ok.bin", encoding: "base64" }));
    await upload(t, "big.bin", pngBytes(64 * 1024 + 1));
    const e = expectError(await t.call("read", { file_path: "big.bin", encoding: "base64" }), 413, "FILE_TOO_LARGE", "read");
    expect(e.details).toMatchObject({ size: 64 * 1024 + 1, max: 64 * 1024 });
    // What the model can do next itself (it cannot send an HTTP GET): look at parts with bash.
    expect(e.message).toContain("look at parts of it with bash");
    expect(e.message).toContain("xxd -s <offset> -l <length> /workspace/big.bin");
  });

  it("a directory is IS_DIRECTORY with a hint to use ls", async () => {
    const t = await newTenant();
    await upload(t, "src/lib/a.ts", "x\n");
    for (const p of ["src", "src/lib/", "/"]) {
      const e = expectError(await t.call("read", { file_path: p }), 400, "IS_DIRECTORY", "read");
      expect(e.message).toMatch(/directory/);
    }
    expect(expectError(await t.call("read", { file_path: "src" }), 400, "IS_DIRECTORY").message).toContain("ls");
  });

  it("a missing file is NOT_FOUND with the closest existing paths", async () => {
    const t = await newTenant();
    await upload(t, "src/index.ts", "x\n");
    await upload(t, "src/other.ts", "x\n");
    await upload(t, "README.md", "x\n");
    const e = expectError(await t.call("read", { file_path: "src/indx.ts" }), 404, "NOT_FOUND", "read");
    expect(e.details.similar[0]).toBe("src/index.ts");
    expect(e.message).toContain("Did you mean: src/index.ts");
    // A missing directory: suggestions come from the nearest existing one.
    const deep = expectError(await t.call("read", { file_path: "src/sub/index.ts" }), 404, "NOT_FOUND");
    expect(deep.details.path).toBe("src/sub/index.ts");
    expect(deep.details.similar).toContain("src/index.ts");
    // A name as long but not a typo of it is not "close": nope.txt is not runs.txt (4 edits in 8).
    await upload(t, "runs.txt", "x\n");
    expect(expectError(await t.call("read", { file_path: "nope.txt" }), 404, "NOT_FOUND").details.similar).toEqual([]);
    expect(expectError(await t.call("read", { file_path: "rnus.txt" }), 404, "NOT_FOUND").details.similar).toEqual(["runs.txt"]);
    // Nothing close: a hint to look.
    const none = expectError(await t.call("read", { file_path: "zzzzzzzzzz/qqqqqqqqqqqqq.bin" }), 404, "NOT_FOUND");
    expect(none.details.similar).toEqual([]);
    expect(none.message).toMatch(/glob|ls/);
    // A path below a file does not exist either.
    expectError(await t.call("read", { file_path: "README.md/x" }), 404, "NOT_FOUND");
  });

  it("refuses paths outside the workspace or malformed with INVALID_PATH", async () => {
    const t = await newTenant();
    await upload(t, "x", "x\n");
    for (const p of ["../x", "/../x", "a/../../x", "a\u0000b", "a\\..\\x", "line\nbreak", "...", "a".repeat(300)]) {
      expectError(await t.call("read", { file_path: p }), 400, "INVALID_PATH", "read");
    }
  });

  it("UNAUTHORIZED without a valid key; NOT_FOUND for a workspace that is not there", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "a\n");
    await expectAuthErrors(t, "read", { file_path: "a.txt" });
    await expectMissingWorkspace(t, "read", { file_path: "a.txt" });
  });

  it("PERMISSION_DENIED for a key without the read scope", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "a\n");
    const writeOnly = await keyWithScopes(t, ["write"]);
    const e = expectError(await callAs(t, `Bearer ${writeOnly}`, "read", { file_path: "a.txt" }), 403, "PERMISSION_DENIED", "read");
    expect(e.details.needed).toBe("read");
    const readOnly = await keyWithScopes(t, ["read"]);
    expectOk(await callAs(t, `Bearer ${readOnly}`, "read", { file_path: "a.txt" }));
  });

  it("INVALID_ARGUMENT for missing, out-of-range or mistyped arguments", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "a\n");
    const bad: unknown[] = [
      {},
      { file_path: "" },
      { file_path: 5 },
      { file_path: "a.txt", limit: 0 },
      { file_path: "a.txt", limit: -1 },
      { file_path: "a.txt", limit: 1.5 },
      { file_path: "a.txt", offset: 0 },
      { file_path: "a.txt", offset: "2" },
      { file_path: "a.txt", encoding: "latin1" },
      [],
      null,
    ];
    for (const args of bad) {
      const e = expectError(await t.call("read", args), 400, "INVALID_ARGUMENT", "read");
      expect(e.message).toContain("Invalid arguments");
    }
    const issue = expectError(await t.call("read", { file_path: "a.txt", limit: 0 }), 400, "INVALID_ARGUMENT").details.issues[0];
    expect(issue.path).toBe("limit");
    // Not JSON at all.
    expectError(await callRaw(t, "read", "{file_path: a.txt"), 400, "INVALID_ARGUMENT");
    // A bad session id.
    expectError(await t.call("read", { file_path: "a.txt" }, "bad session!"), 400, "INVALID_ARGUMENT");
  });

  it("INTERNAL when storage fails, without leaking the cause", async () => {
    const t = await tenantWithBrokenFile();
    const r = await t.call("read", { file_path: "boom.txt" });
    const e = expectError(r, 500, "INTERNAL", "read");
    expect(JSON.stringify(r.body)).not.toContain("secret-detail-xyz");
    expect(e.message).toMatch(/retry/i);
  });

  it("reads a 20 MB file at an offset near the end with the right line numbers", async () => {
    const t = await newTenant();
    const count = 360_000;
    const parts: string[] = [];
    for (let i = 1; i <= count; i++) parts.push(`row ${String(i).padStart(7, "0")} ${"-".repeat(46)}\n`);
    const bytes = enc.encode(parts.join(""));
    expect(bytes.length).toBeGreaterThan(20 * 1024 * 1024);
    await upload(t, "huge.log", bytes);

    const line = (i: number) => `row ${String(i).padStart(7, "0")} ${"-".repeat(46)}`;
    // Near the end: the page reaches EOF, so total_lines is known.
    const end = await t.call("read", { file_path: "huge.log", offset: count - 4 });
    expect(end.body.output).toBe(numbered([count - 4, count - 3, count - 2, count - 1, count].map(line), count - 4));
    expect(expectOk(end)).toMatchObject({ start_line: count - 4, lines_returned: 5, total_lines: count, truncated: false, next_offset: null });

    // A page that ends exactly on the last line is the end as well.
    const exact = expectOk(await t.call("read", { file_path: "huge.log", offset: count - 9, limit: 10 }));
    expect(exact).toMatchObject({ lines_returned: 10, truncated: false, next_offset: null });

    // In the middle: the right lines, and a next_offset.
    const mid = await t.call("read", { file_path: "huge.log", offset: 200_001, limit: 3 });
    expect(mid.body.output.split("\n\n")[0]).toBe(numbered([200_001, 200_002, 200_003].map(line), 200_001));
    expect(expectOk(mid)).toMatchObject({ truncated: true, next_offset: 200_004 });
    expect(mid.body.output).toContain("offset=200004");

    // Past the end.
    expectError(await t.call("read", { file_path: "huge.log", offset: count + 1 }), 400, "INVALID_ARGUMENT");
  }, 120_000);
});

import { describe, expect, it } from "vitest";
import { newTenant, upload } from "../helpers.js";
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
} from "./file-helpers.js";

describe("write", () => {
  it("creates a new file; parent directories are implicit", async () => {
    const t = await newTenant();
    const r = await t.call("write", { file_path: "/deep/er/still/new.ts", content: "export const x = 1;\n" });
    const data = expectOk(r);
    expect(r.body.tool).toBe("write");
    expect(r.body.output).toBe("Created deep/er/still/new.ts (20 bytes).");
    expect(data).toMatchObject({ file_path: "deep/er/still/new.ts", bytes_written: 20, created: true });
    const raw = await rawGet(t, "deep/er/still/new.ts");
    expect(new TextDecoder().decode(raw.bytes)).toBe("export const x = 1;\n");
    expect(raw.etag).toBe(`"${data.etag}"`);
    expect((await t.call("write", { file_path: "one.txt", content: "1" })).body.output).toBe("Created one.txt (1 byte)."); // as ls counts it
    expect(r.body.usage.bytes_written).toBe(20);
    // The parents are directories now.
    expectError(await t.call("read", { file_path: "deep/er" }), 400, "IS_DIRECTORY");
  });

  it("counts bytes, not characters, and accepts empty content", async () => {
    const t = await newTenant();
    expect(expectOk(await t.call("write", { file_path: "u.txt", content: "é😀" })).bytes_written).toBe(6);
    expect(await rawText(t, "u.txt")).toBe("é😀");
    expect(expectOk(await t.call("write", { file_path: "empty", content: "" })).bytes_written).toBe(0);
    expect((await rawGet(t, "empty")).bytes.length).toBe(0);
  });

  it("a path as bash shows it (/workspace/…) is the workspace's own file, for write, read, edit and glob; a relative workspace/ is a directory of that name", async () => {
    const t = await newTenant();
    expect(expectOk(await t.call("write", { file_path: "/workspace/src/app.py", content: "print(1)\n" })).file_path).toBe("src/app.py");
    expect(await rawText(t, "src/app.py")).toBe("print(1)\n");
    expect(expectOk(await t.call("read", { file_path: "/workspace/src/app.py" })).file_path).toBe("src/app.py");
    expectOk(await t.call("edit", { file_path: "/workspace/src/app.py", old_string: "1", new_string: "2" }));
    expect(await rawText(t, "src/app.py")).toBe("print(2)\n");
    expect(expectOk(await t.call("glob", { pattern: "*.py", path: "/workspace/src" })).matches.map((m: { path: string }) => m.path)).toEqual(["src/app.py"]);
    // An absolute glob pattern under /workspace too (glob and find), from the root or from a path.
    for (const args of [{ pattern: "/workspace/src/*.py" }, { pattern: "/workspace/src/*.py", path: "src" }, { pattern: "/workspace/**/app.py", path: "/workspace" }])
      expect(expectOk(await t.call("glob", args)).matches.map((m: { path: string }) => m.path), JSON.stringify(args)).toEqual(["src/app.py"]);
    expect(expectOk(await t.call("find", { pattern: "/workspace/src/*.py" })).matches.map((e: { path: string }) => e.path)).toEqual(["src/app.py"]);
    expect(expectOk(await t.call("write", { file_path: "workspace/notes.txt", content: "x" })).file_path).toBe("workspace/notes.txt");
  });

  it("names are NFC: a file written with an NFD name is read with the NFC name", async () => {
    const t = await newTenant();
    const nfd = "cafe\u0301/re\u0301sume\u0301.txt";
    expectOk(await t.call("write", { file_path: nfd, content: "x" }));
    expect(expectOk(await t.call("read", { file_path: nfd.normalize("NFC") })).file_path).toBe("café/résumé.txt");
  });

  it("overwriting an existing file requires reading it first (NOT_READ)", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "original\n");
    const e = expectError(await t.call("write", { file_path: "a.txt", content: "new\n" }), 409, "NOT_READ", "write");
    expect(e.details.path).toBe("a.txt");
    expect(e.message).toContain("read");
    expect(await rawText(t, "a.txt")).toBe("original\n");
    expectOk(await t.call("read", { file_path: "a.txt" }));
    const data = expectOk(await t.call("write", { file_path: "a.txt", content: "new\n" }));
    expect(data).toMatchObject({ created: false, bytes_written: 4 });
    expect(await rawText(t, "a.txt")).toBe("new\n");
  });

  it("FILE_MODIFIED when the file changed after the read (raw PUT), with the current etag", async () => {
    const t = await newTenant();
    const first = await upload(t, "a.txt", "v1\n");
    expectOk(await t.call("read", { file_path: "a.txt" }));
    const second = await upload(t, "a.txt", "v2 from the app\n");
    const e = expectError(await t.call("write", { file_path: "a.txt", content: "mine\n" }), 409, "FILE_MODIFIED", "write");
    expect(e.details).toMatchObject({ path: "a.txt", current_etag: second, read_etag: first });
    expect(await rawText(t, "a.txt")).toBe("v2 from the app\n");
    // Read again, then it works.
    expectOk(await t.call("read", { file_path: "a.txt" }));
    expectOk(await t.call("write", { file_path: "a.txt", content: "mine\n" }));
    expect(await rawText(t, "a.txt")).toBe("mine\n");
  });

  it("FILE_MODIFIED when another session wrote it after this session's read", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "v1\n");
    expectOk(await t.call("read", { file_path: "a.txt" }, "A"));
    expectOk(await t.call("read", { file_path: "a.txt" }, "B"));
    const b = expectOk(await t.call("write", { file_path: "a.txt", content: "from B\n" }, "B"));
    const e = expectError(await t.call("write", { file_path: "a.txt", content: "from A\n" }, "A"), 409, "FILE_MODIFIED");
    expect(e.details.current_etag).toBe(b.etag);
    expect(await rawText(t, "a.txt")).toBe("from B\n");
  });

  it("FILE_MODIFIED from the conditional write itself when the file changes between the checks and the write", async () => {
    const t = await tenantWithOverwriteRace("intruder\n");
    await upload(t, "a.txt", "v1\n");
    expectOk(await t.call("read", { file_path: "a.txt" }));
    const e = expectError(await t.call("write", { file_path: "a.txt", content: "mine\n" }), 409, "FILE_MODIFIED");
    expect(await rawText(t, "a.txt")).toBe("intruder\n");
    expect(e.details.current_etag).toBe((await rawGet(t, "a.txt")).etag!.replaceAll('"', ""));
  });

  it("NO_CHANGE for identical content; nothing is written", async () => {
    const t = await newTenant();
    const etag = await upload(t, "a.txt", "same\n");
    expectOk(await t.call("read", { file_path: "a.txt" }));
    const e = expectError(await t.call("write", { file_path: "a.txt", content: "same\n" }), 422, "NO_CHANGE", "write");
    expect(e.details).toMatchObject({ path: "a.txt", etag });
    expect((await rawGet(t, "a.txt")).etag).toBe(`"${etag}"`);
    // Same size, different bytes: written.
    expectOk(await t.call("write", { file_path: "a.txt", content: "SAME\n" }));
    expect(await rawText(t, "a.txt")).toBe("SAME\n");
    // Identical bytes in base64 are NO_CHANGE too.
    expectError(await t.call("write", { file_path: "a.txt", content: btoa("SAME\n"), encoding: "base64" }), 422, "NO_CHANGE");
  });

  it("writes binary content from base64, byte for byte", async () => {
    const t = await newTenant();
    const bytes = Uint8Array.from({ length: 5000 }, (_, i) => (i * 131 + 17) & 0xff);
    bytes.set(pngBytes(16));
    let bin = "";
    for (const b of bytes) bin += String.fromCharCode(b);
    const data = expectOk(await t.call("write", { file_path: "img/logo.png", content: btoa(bin), encoding: "base64" }));
    expect(data).toMatchObject({ bytes_written: 5000, created: true });
    const raw = await rawGet(t, "img/logo.png");
    expect(sameBytes(raw.bytes, bytes)).toBe(true);
    // And back through read.
    expectError(await t.call("read", { file_path: "img/logo.png" }), 415, "BINARY_FILE");
    const back = expectOk(await t.call("read", { file_path: "img/logo.png", encoding: "base64" }));
    expect(back.content_base64).toBe(btoa(bin));
  });

  it("invalid base64 is INVALID_ARGUMENT and writes nothing", async () => {
    const t = await newTenant();
    for (const content of ["not base64!", "abcde", "aGk=aGk="]) {
      const e = expectError(await t.call("write", { file_path: "x.bin", content, encoding: "base64" }), 400, "INVALID_ARGUMENT", "write");
      expect(e.message).toContain("base64");
    }
    expect((await rawGet(t, "x.bin")).status).toBe(404);
  });

  it("a path below an existing file is NOT_A_DIRECTORY", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "x\n");
    const e = expectError(await t.call("write", { file_path: "a.txt/b.txt", content: "y" }), 400, "NOT_A_DIRECTORY", "write");
    expect(e.details).toMatchObject({ path: "a.txt/b.txt", file: "a.txt" });
    expectError(await t.call("write", { file_path: "a.txt/deeper/c.txt", content: "y" }), 400, "NOT_A_DIRECTORY");
    expect((await rawGet(t, "a.txt/b.txt")).status).toBe(404);
  });

  it("a path that is a directory is IS_DIRECTORY", async () => {
    const t = await newTenant();
    await upload(t, "src/a.ts", "x\n");
    const e = expectError(await t.call("write", { file_path: "src", content: "y" }), 400, "IS_DIRECTORY", "write");
    expect(e.details.path).toBe("src");
    expectError(await t.call("write", { file_path: "/", content: "y" }), 400, "IS_DIRECTORY");
    expect(await rawText(t, "src/a.ts")).toBe("x\n");
  });

  it("ALREADY_EXISTS when another creator wins between the check and the write", async () => {
    const t = await tenantWithCreateRace("the other creator\n");
    const e = expectError(await t.call("write", { file_path: "new.txt", content: "mine\n" }), 409, "ALREADY_EXISTS", "write");
    expect(e.details.path).toBe("new.txt");
    expect(await rawText(t, "new.txt")).toBe("the other creator\n");
  });

  it("sessions are separate: session A's read does not let session B write", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "v1\n");
    expectOk(await t.call("read", { file_path: "a.txt" }, "session-A"));
    expectError(await t.call("write", { file_path: "a.txt", content: "B\n" }, "session-B"), 409, "NOT_READ");
    expectOk(await t.call("write", { file_path: "a.txt", content: "A\n" }, "session-A"));
    expect(await rawText(t, "a.txt")).toBe("A\n");
    // The default session is a session of its own.
    const res = await t.req(`/v1/workspaces/${t.ws}/tools/write`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ file_path: "a.txt", content: "default\n" }) });
    expect(res.status).toBe(409);
    expect(((await res.json()) as any).error.code).toBe("NOT_READ");
  });

  it("after a write the same session can write and edit again without re-reading", async () => {
    const t = await newTenant();
    expectOk(await t.call("write", { file_path: "a.txt", content: "one\n" }));
    expectOk(await t.call("write", { file_path: "a.txt", content: "two\n" }));
    expectOk(await t.call("edit", { file_path: "a.txt", old_string: "two", new_string: "three" }));
    expect(await rawText(t, "a.txt")).toBe("three\n");
    // Overwriting an uploaded file after reading it, then editing without a re-read.
    await upload(t, "b.txt", "b\n");
    expectOk(await t.call("read", { file_path: "b.txt" }));
    expectOk(await t.call("write", { file_path: "b.txt", content: "bb\n" }));
    expectOk(await t.call("edit", { file_path: "b.txt", old_string: "bb", new_string: "bbb" }));
    expect(await rawText(t, "b.txt")).toBe("bbb\n");
  });

  it("20 concurrent creates of one new path: exactly one wins, the others are refused, the file is the winner's", async () => {
    const t = await newTenant();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => t.call("write", { file_path: "race/new.txt", content: `writer ${i}\n` }, `agent-${i}`)),
    );
    const winners = results.flatMap((r, i) => (r.status === 200 ? [i] : []));
    expect(winners.length, JSON.stringify(results.map((r) => r.body.error?.code ?? "ok"))).toBe(1);
    const w = winners[0]!;
    expect(results[w]!.body.data.created).toBe(true);
    for (const [i, r] of results.entries()) {
      if (i === w) continue;
      expect(r.status).toBe(409);
      expect(["ALREADY_EXISTS", "FILE_MODIFIED"]).toContain(r.body.error.code);
    }
    const raw = await rawGet(t, "race/new.txt");
    expect(new TextDecoder().decode(raw.bytes)).toBe(`writer ${w}\n`);
    expect(raw.etag).toBe(`"${results[w]!.body.data.etag}"`);
  });

  it("20 concurrent creates of one new path in one session: one wins, nothing is overwritten", async () => {
    const t = await newTenant();
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => t.call("write", { file_path: "same/new.txt", content: `call ${i}\n` }, "one-session")));
    const winners = results.flatMap((r, i) => (r.status === 200 ? [i] : []));
    expect(winners.length, JSON.stringify(results.map((r) => r.body.error?.code ?? "ok"))).toBe(1);
    for (const r of results) if (r.status !== 200) expect(["ALREADY_EXISTS", "FILE_MODIFIED"]).toContain(r.body.error.code);
    expect(await rawText(t, "same/new.txt")).toBe(`call ${winners[0]}\n`);
  });

  it("content over 25 MB is FILE_TOO_LARGE", async () => {
    const t = await newTenant();
    const e = expectError(await t.call("write", { file_path: "big.txt", content: "a".repeat(25 * 1024 * 1024 + 1) }), 413, "FILE_TOO_LARGE", "write");
    expect(e.details).toMatchObject({ size: 25 * 1024 * 1024 + 1, max: 25 * 1024 * 1024 });
    expect(e.message).toContain("PUT");
    // What the model can do itself (it cannot send a PUT): parts of at most 25 MB, one write each, joined with bash.
    expect(e.message).toContain("Write it in 2 parts of at most 25 MB, one write call each (big.txt.part1, big.txt.part2)");
    expect(e.message).toContain("cat /workspace/big.txt.part1 /workspace/big.txt.part2 > /workspace/big.txt && rm /workspace/big.txt.part1 /workspace/big.txt.part2");
    expect((await rawGet(t, "big.txt")).status).toBe(404);
  }, 60_000);

  it("INVALID_PATH for paths outside the workspace or malformed", async () => {
    const t = await newTenant();
    for (const p of ["../escape.txt", "a/../../escape.txt", "nul\u0000.txt", "back\\slash"]) {
      expectError(await t.call("write", { file_path: p, content: "x" }), 400, "INVALID_PATH", "write");
    }
  });

  it("INVALID_ARGUMENT for missing or mistyped arguments", async () => {
    const t = await newTenant();
    for (const args of [{ file_path: "a.txt" }, { content: "x" }, { file_path: "a.txt", content: 5 }, { file_path: "a.txt", content: "x", encoding: "hex" }, { file_path: "", content: "x" }]) {
      expectError(await t.call("write", args), 400, "INVALID_ARGUMENT", "write");
    }
  });

  it("UNAUTHORIZED, NOT_FOUND workspace, PERMISSION_DENIED without the write scope", async () => {
    const t = await newTenant();
    await expectAuthErrors(t, "write", { file_path: "a.txt", content: "x" });
    await expectMissingWorkspace(t, "write", { file_path: "a.txt", content: "x" });
    const readOnly = await keyWithScopes(t, ["read"]);
    const e = expectError(await callAs(t, `Bearer ${readOnly}`, "write", { file_path: "ro.txt", content: "x" }), 403, "PERMISSION_DENIED", "write");
    expect(e.details.needed).toBe("write");
    expect((await rawGet(t, "ro.txt")).status).toBe(404);
  });

  it("INTERNAL when storage fails, without leaking the cause", async () => {
    const t = await tenantWithBrokenFile();
    const r = await t.call("write", { file_path: "boom.txt", content: "x" });
    expectError(r, 500, "INTERNAL", "write");
    expect(JSON.stringify(r.body)).not.toContain("secret-detail-xyz");
    expect(enc.encode(JSON.stringify(r.body)).length).toBeLessThan(1000);
  });
});

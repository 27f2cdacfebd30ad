/**
 * The text editor's errors speak of what the model holding it has: view (with view_range), create,
 * str_replace, insert and bash. An error that tells it to pass one of our tools' arguments (read's
 * encoding or offset, edit's empty old_string) or to call a tool it lacks (glob, ls) sends it to
 * something it cannot do. Cases after Anthropic's reference implementation's errors.
 */
import { describe, expect, it } from "vitest";
import { newTenant, upload } from "../../../helpers.js";
import { compat, textOf, type CompatResult } from "./compat-helpers.js";
import { tar } from "../../archive/archives.js";
import { importReq } from "../../archive/helpers.js";

const EDITOR = "str_replace_based_edit_tool";

function failed(r: CompatResult, code: string): string {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body).toMatchObject({ type: "tool_result", is_error: true });
  expect(r.code).toBe(code);
  return textOf(r);
}

/** Words of our own tools that the text editor's model cannot act on. */
const FOREIGN = /\b(glob|ls|read tool|encoding|offset|old_string|new_string)\b/;

describe("text editor errors in the text editor's words", () => {
  it("create over an existing file says create cannot overwrite it and to use str_replace; the file is kept", async () => {
    const t = await newTenant();
    await upload(t, "a.py", "x = 1\n");
    const e = failed(await compat(t, "anthropic", EDITOR, { command: "create", path: "/a.py", file_text: "y = 2\n" }), "ALREADY_EXISTS");
    expect(e).toContain("a.py already exists");
    expect(e).toContain("`create`");
    expect(e).toContain("str_replace");
    expect(e).not.toMatch(FOREIGN);
    expect(e).not.toContain("old_str");
  });

  it("a missing file without similar names: find it by viewing a directory, not with glob or ls", async () => {
    const t = await newTenant();
    await upload(t, "src/main.py", "print(1)\n");
    const e = failed(await compat(t, "anthropic", EDITOR, { command: "view", path: "/nothing/like/it.txt" }), "NOT_FOUND");
    expect(e).toContain("File not found: nothing/like/it.txt");
    expect(e).toContain("view");
    expect(e).not.toMatch(FOREIGN);
  });

  it("a binary file: the text editor shows text only; its bytes through bash, not an encoding argument", async () => {
    const t = await newTenant();
    await upload(t, "logo.bin", new Uint8Array([0, 1, 2, 255, 0, 7]));
    const e = failed(await compat(t, "anthropic", EDITOR, { command: "view", path: "/logo.bin" }), "BINARY_FILE");
    expect(e).toContain("logo.bin is a binary file");
    expect(e).toContain("bash");
    expect(e).not.toMatch(FOREIGN);
  });

  it("an unknown command names the commands the text editor has (not undo_edit, which it lacks), in plain words", async () => {
    const t = await newTenant();
    const e = failed(await compat(t, "anthropic", EDITOR, { command: "delete", path: "/a.py" }), "INVALID_ARGUMENT");
    expect(e).toBe('Error: Unknown command "delete": the text editor\'s commands are view, create, str_replace and insert.');
  });

  it("a view_range past the end names view_range and the file's lines", async () => {
    const t = await newTenant();
    await upload(t, "three.txt", "a\nb\nc\n");
    const e = failed(await compat(t, "anthropic", EDITOR, { command: "view", path: "/three.txt", view_range: [7, 9] }), "INVALID_ARGUMENT");
    expect(e).toContain("view_range [7, 9]");
    expect(e).toContain("3 lines");
    expect(e).not.toMatch(FOREIGN);
  });
});

describe("the text editor's outputs: read's and edit's notes in its words", () => {
  it("view of a file with a cut line says to see the rest with bash, not with grep or read", async () => {
    const t = await newTenant();
    await upload(t, "min.js", `${"a".repeat(2500)}\nok\n`);
    const r = await compat(t, "anthropic", EDITOR, { command: "view", path: "/min.js" });
    expect(r.body).toMatchObject({ type: "tool_result", is_error: false });
    const text = textOf(r);
    expect(text).toContain("[1 line longer than 2000 characters was cut (the first: line 1); view shows no more of a line. To see the rest, print more of it with bash: sed -n '1p' /workspace/min.js | cut -c2001-4000]");
    expect(text).not.toMatch(/\bgrep\b|\bread\b/);
  });

  it("str_replace matched with Unicode normalized says so with old_str and new_str", async () => {
    const t = await newTenant();
    await upload(t, "names.txt", "José\n".normalize("NFD"));
    await compat(t, "anthropic", EDITOR, { command: "view", path: "/names.txt" });
    const r = await compat(t, "anthropic", EDITOR, { command: "str_replace", path: "/names.txt", old_str: "José", new_str: "Ana" });
    expect(r.body).toMatchObject({ type: "tool_result", is_error: false });
    const text = textOf(r);
    expect(text).toContain("[old_str matched only with Unicode normalized (NFC)");
    expect(text).toContain("replaced by new_str as you wrote it");
    expect(text).not.toMatch(FOREIGN);
  });

  it("view of a directory: hidden entries and a cut listing are listed with bash, not with ls's show_hidden or cursor", async () => {
    const t = await newTenant();
    await upload(t, "d/.env", "A=1\n");
    await upload(t, "d/a.txt", "a\n");
    const small = textOf(await compat(t, "anthropic", EDITOR, { command: "view", path: "/d" }));
    expect(small).toContain("a.txt");
    expect(small).toContain('[1 hidden entry (names starting with ".") not shown: view shows no hidden entries; list them with bash: ls -A /workspace/d]');
    expect(small).not.toMatch(/show_hidden|cursor/);
    // More entries than ls shows in one page (1,000).
    const r = await importReq(t, tar(Array.from({ length: 1001 }, (_, i) => ({ name: `many dir/f${i}.txt`, body: "x" }))));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const big = textOf(await compat(t, "anthropic", EDITOR, { command: "view", path: "/many dir" }));
    expect(big).toContain("[Truncated after 1000 entries: view shows no more; list the whole directory with bash: ls -A '/workspace/many dir']");
    expect(big).not.toMatch(/show_hidden|cursor/);
    // The HTTP route's ls keeps its own words.
    expect((await t.call("ls", { path: "many dir" })).body.output).toContain("cursor:");
  });
});

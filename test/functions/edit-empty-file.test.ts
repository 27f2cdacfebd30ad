/**
 * An empty old_string over an existing empty file fills it, as Claude Code's Edit does: the file
 * holds nothing to read first or to lose, and the write is conditional on that empty version. Over
 * a file with content it stays ALREADY_EXISTS (edit, and multi_edit's first edit).
 */
import { describe, expect, it } from "vitest";
import { newTenant, upload } from "../helpers.js";
import { expectError, expectOk, rawText } from "./file-helpers.js";

describe("an empty old_string over an empty file", () => {
  it("edit fills it without a read; once it has content, ALREADY_EXISTS says so", async () => {
    const t = await newTenant();
    await upload(t, "empty.txt", "");
    const r = await t.call("edit", { file_path: "empty.txt", old_string: "", new_string: "first\n" });
    const data = expectOk(r);
    expect(data).toMatchObject({ file_path: "empty.txt", created: false, replacements: 0 });
    expect(r.body.output).toBe(`Filled empty.txt, which was empty.\n${data.diff}`);
    expect(await rawText(t, "empty.txt")).toBe("first\n");
    const e = expectError(await t.call("edit", { file_path: "empty.txt", old_string: "", new_string: "again\n" }), 409, "ALREADY_EXISTS", "edit");
    expect(e.message).toContain("empty.txt already exists and is not empty");
    expect(await rawText(t, "empty.txt")).toBe("first\n");
  });

  it("multi_edit: the first edit fills it, the next edit the text it put there", async () => {
    const t = await newTenant();
    await upload(t, "m.txt", "");
    const r = await t.call("multi_edit", { file_path: "m.txt", edits: [{ old_string: "", new_string: "a b\n" }, { old_string: "b", new_string: "c" }] });
    expect(expectOk(r)).toMatchObject({ created: false, replacements: 1 });
    expect(r.body.output).toMatch(/^Filled m\.txt, which was empty: 2 edits, 1 replacement\./);
    expect(await rawText(t, "m.txt")).toBe("a c\n");
    expect(expectError(await t.call("multi_edit", { file_path: "m.txt", edits: [{ old_string: "", new_string: "x" }] }), 409, "ALREADY_EXISTS").message).toContain("not empty");
  });
});

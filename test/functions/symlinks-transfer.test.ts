/**
 * move and copy carry symlinks (docs/symlinks.md): a link is moved or copied as a link (its target
 * as data, never followed, like mv and cp -P); a directory's links go with it, rebased; the
 * overwrite rules and the approval gate hold for links as for files; a failed call changes nothing.
 */
import { describe, expect, it } from "vitest";
import { newTenant, testApp, testDeps, UNGATED, upload, type Tenant, type TestApp } from "../helpers.js";
import { tar } from "../lib/archive/archives.js";
import { importReq } from "../lib/archive/helpers.js";
import { expectError, expectOk, rawText } from "./file-helpers.js";
import { interceptPuts, snapshot } from "./fs-helpers.js";

/** Links are seeded through the import route (an archive's symlink entries); `gated`: the default approval gate. */
async function seeded(gated = false, app: TestApp = testApp()): Promise<Tenant> {
  const t = await newTenant(app, gated ? {} : UNGATED);
  await upload(t, "real.txt", "real one\n");
  await upload(t, "dir/f.txt", "f\n");
  await upload(t, "dir/sub/g.txt", "g\n");
  await upload(t, "other.txt", "other\n");
  const r = await importReq(t, tar([
    { name: "alias", type: "2", linkname: "real.txt" },
    { name: "out", type: "2", linkname: "/etc/passwd" },
    { name: "above", type: "2", linkname: "../../other-tenant/secret" },
    { name: "dir/l", type: "2", linkname: "f.txt" },
    { name: "dir/sub/up", type: "2", linkname: "../../real.txt" },
    { name: "dir/bin/tool", type: "2", linkname: "../sub/g.txt" },
    { name: "only/a", type: "2", linkname: "x" },
  ]));
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return t;
}

/** The workspace's links (path → target), as ls shows them. */
async function links(t: Tenant): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of expectOk(await t.call("ls", { path: "", recursive: true, show_hidden: true })).entries) if (e.type === "symlink") out[e.path] = e.target;
  return out;
}

const SEEDED = { alias: "real.txt", out: "/etc/passwd", above: "../../other-tenant/secret", "dir/l": "f.txt", "dir/sub/up": "../../real.txt", "dir/bin/tool": "../sub/g.txt", "only/a": "x" };

describe("move and copy carry symlinks", () => {
  it("move of a link moves the link (target unchanged, not followed); the target file stays", async () => {
    const t = await seeded();
    const r = await t.call("move", { from: "alias", to: "moved" });
    const data = expectOk(r);
    expect(data).toMatchObject({ from: "alias", to: "moved", type: "symlink", files: [], count: 0, links: [{ from: "alias", to: "moved", target: "real.txt", replaced: false }] });
    expect(r.body.output).toBe("Moved the symlink alias -> real.txt to moved (as a link: its target is unchanged and was not followed). alias no longer exists.");
    const { alias: _, ...rest } = SEEDED;
    expect(await links(t)).toEqual({ ...rest, moved: "real.txt" });
    expect(await rawText(t, "real.txt")).toBe("real one\n");
    expect(expectOk(await t.call("read", { file_path: "moved" })).file_path).toBe("real.txt");
  });

  it("copy of a link whose target is outside the workspace copies it as data (never followed, not refused); into a directory too", async () => {
    const t = await seeded();
    expect(expectOk(await t.call("copy", { from: "out", to: "out2" })).links).toEqual([{ from: "out", to: "out2", target: "/etc/passwd", replaced: false }]);
    expect(expectOk(await t.call("copy", { from: "above", to: "dir/sub/" })).to).toBe("dir/sub/above");
    expect(await links(t)).toEqual({ ...SEEDED, out2: "/etc/passwd", "dir/sub/above": "../../other-tenant/secret" });
    expect(Object.keys(await snapshot(t)).sort()).toEqual(["dir/f.txt", "dir/sub/g.txt", "other.txt", "real.txt"]);
  });

  it("a directory move carries its links (rebased, targets unchanged) in one call; the output names them", async () => {
    const t = await seeded();
    const r = await t.call("move", { from: "dir", to: "new" });
    const data = expectOk(r);
    expect(data.links).toEqual([
      { from: "dir/bin/tool", to: "new/bin/tool", target: "../sub/g.txt", replaced: false },
      { from: "dir/l", to: "new/l", target: "f.txt", replaced: false },
      { from: "dir/sub/up", to: "new/sub/up", target: "../../real.txt", replaced: false },
    ]);
    expect(r.body.output).toContain("2 files");
    expect(r.body.output).toContain("and 3 symlinks (targets unchanged)");
    expect(r.body.output).toContain("dir/l -> new/l (symlink to f.txt)");
    expect(await links(t)).toEqual({ alias: "real.txt", out: "/etc/passwd", above: "../../other-tenant/secret", "only/a": "x", "new/l": "f.txt", "new/sub/up": "../../real.txt", "new/bin/tool": "../sub/g.txt" });
    expect(await snapshot(t)).toEqual({ "new/f.txt": "f\n", "new/sub/g.txt": "g\n", "other.txt": "other\n", "real.txt": "real one\n" });
    expect(expectOk(await t.call("read", { file_path: "new/bin/tool" })).file_path).toBe("new/sub/g.txt");
  });

  it("a directory copy carries its links; a directory only links make is copied and moved too", async () => {
    const t = await seeded();
    expectOk(await t.call("copy", { from: "dir", to: "copy" }));
    expect(await links(t)).toMatchObject({ ...SEEDED, "copy/l": "f.txt", "copy/sub/up": "../../real.txt", "copy/bin/tool": "../sub/g.txt" });
    expect(await rawText(t, "copy/f.txt")).toBe("f\n");
    const m = expectOk(await t.call("move", { from: "only", to: "only2" }));
    expect(m).toMatchObject({ type: "directory", files: [], links: [{ from: "only/a", to: "only2/a", target: "x", replaced: false }] });
    const l = await links(t);
    expect(l["only2/a"]).toBe("x");
    expect(l["only/a"]).toBeUndefined();
  });

  it("a link over an existing file: ALREADY_EXISTS without overwrite (nothing changes); with overwrite the file is replaced by the link", async () => {
    const t = await seeded();
    const before = await snapshot(t);
    const e = expectError(await t.call("move", { from: "alias", to: "other.txt" }), 409, "ALREADY_EXISTS", "move");
    expect(e.message).toContain("overwrite: true");
    expect(await snapshot(t)).toEqual(before);
    expect(await links(t)).toEqual(SEEDED);
    const r = await t.call("copy", { from: "alias", to: "other.txt", overwrite: true });
    expect(expectOk(r).links).toEqual([{ from: "alias", to: "other.txt", target: "real.txt", replaced: true }]);
    expect(r.body.output).toContain("It replaced what was at other.txt.");
    expect(await links(t)).toEqual({ ...SEEDED, "other.txt": "real.txt" });
    expect(Object.keys(await snapshot(t))).not.toContain("other.txt");
  });

  it("a file over an existing link: ALREADY_EXISTS without overwrite; with overwrite the file replaces the link, and the output says so", async () => {
    const t = await seeded();
    expectError(await t.call("copy", { from: "other.txt", to: "alias" }), 409, "ALREADY_EXISTS", "copy");
    expect(await links(t)).toEqual(SEEDED);
    const r = await t.call("move", { from: "other.txt", to: "alias", overwrite: true });
    expectOk(r);
    expect(r.body.output).toContain("replaced the symlink that stood at alias");
    const { alias: _, ...rest } = SEEDED;
    expect(await links(t)).toEqual(rest);
    expect(await rawText(t, "alias")).toBe("other\n");
    expect(await rawText(t, "real.txt")).toBe("real one\n");
  });

  it("overwrite over an existing link is held by the default gate, and nothing changes", async () => {
    const t = await seeded(true);
    const r = await t.call("move", { from: "out", to: "alias", overwrite: true });
    expect(r.body.error?.code, JSON.stringify(r.body)).toBe("NEEDS_APPROVAL");
    expect(r.body.error.details.reason).toContain("replacing the existing symlink alias");
    expect(await links(t)).toEqual(SEEDED);
  });

  it("refused calls change nothing: a link below a file, a link or a file below a link, a link of a directory onto a directory", async () => {
    const t = await seeded();
    const before = await snapshot(t);
    expect((await t.call("move", { from: "alias", to: "dir/sub/g.txt/" })).body.error.code).toBe("NOT_A_DIRECTORY");
    expect(expectError(await t.call("copy", { from: "other.txt", to: "alias/x.txt" }), 400, "SYMLINK_REFUSED", "copy").details.reason).toBe("is_link");
    expect(expectError(await t.call("copy", { from: "out", to: "dir/l/y" }), 400, "SYMLINK_REFUSED", "copy").details.reason).toBe("is_link");
    await upload(t, "d2/dir/l/x.txt", "x\n"); // merging dir into d2/dir: dir/l would land on the directory d2/dir/l
    expectError(await t.call("copy", { from: "dir", to: "d2", overwrite: true }), 400, "IS_DIRECTORY", "copy");
    expect(await links(t)).toEqual(SEEDED);
    expect(await snapshot(t)).toEqual({ ...before, "d2/dir/l/x.txt": "x\n" });
  });

  it("a directory move whose links cannot be saved fails whole: the copies are removed, every source file and link stays", async () => {
    let fail = false;
    const t = await seeded(false, testApp({ storage: interceptPuts(testDeps().storage, async (key) => {
      if (fail && key.endsWith("/x/modes.json")) throw new Error("storage failure");
    }) }));
    const before = await snapshot(t);
    fail = true;
    const r = await t.call("move", { from: "dir", to: "new" });
    expect(r.body.error?.code, JSON.stringify(r.body)).toBe("INTERNAL");
    expect(r.body.error.message).toContain("every source is still in place");
    fail = false;
    expect(await snapshot(t)).toEqual(before);
    expect(await links(t)).toEqual(SEEDED);
  });
});

describe("move and copy through a link on the way to the source (followed inside the workspace, as read does)", () => {
  /** dir/f.txt, dir/sub/g.txt; directory links inside (`dirlink`, a chain `chain`) and hostile ones (absolute, above the root, a loop). */
  async function withDirLinks(): Promise<Tenant> {
    const t = await newTenant(testApp(), UNGATED);
    await upload(t, "dir/f.txt", "f\n");
    await upload(t, "dir/sub/g.txt", "g\n");
    const r = await importReq(t, tar([
      { name: "dirlink", type: "2", linkname: "dir" },
      { name: "chain", type: "2", linkname: "dirlink/sub" },
      { name: "dir/sub/up", type: "2", linkname: "../f.txt" },
      { name: "abs", type: "2", linkname: "/etc" },
      { name: "above", type: "2", linkname: "../other-workspace" },
      { name: "loop", type: "2", linkname: "loop" },
    ]));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return t;
  }
  const LINKS = { dirlink: "dir", chain: "dirlink/sub", "dir/sub/up": "../f.txt", abs: "/etc", above: "../other-workspace", loop: "loop" };

  it("move dirlink/f.txt moves dir/f.txt; the output and data name the link and the resolved path; the link stays", async () => {
    const t = await withDirLinks();
    const r = await t.call("move", { from: "dirlink/f.txt", to: "moved.txt" });
    expect(expectOk(r)).toMatchObject({ from: "dir/f.txt", to: "moved.txt", type: "file", via_link: { link: "dirlink", target: "dir" } });
    expect(r.body.output).toBe("(dirlink is a symlink to dir: this moved dir/f.txt)\nMoved dir/f.txt to moved.txt (2 bytes). dir/f.txt no longer exists.");
    expect(await snapshot(t)).toEqual({ "moved.txt": "f\n", "dir/sub/g.txt": "g\n" });
    expect(await links(t)).toEqual(LINKS);
  });

  it("copy through a chain of links; a directory and a link reached through one are copied (the link as a link)", async () => {
    const t = await withDirLinks();
    const c = await t.call("copy", { from: "chain/g.txt", to: "g2.txt" });
    expect(expectOk(c)).toMatchObject({ from: "dir/sub/g.txt", via_link: { link: "chain", target: "dirlink/sub" } });
    expect(c.body.output.split("\n")[0]).toBe("(chain is a symlink to dirlink/sub: this copied dir/sub/g.txt)");
    expect(expectOk(await t.call("copy", { from: "dirlink/sub", to: "sub2" }))).toMatchObject({ from: "dir/sub", type: "directory", links: [{ from: "dir/sub/up", to: "sub2/up", target: "../f.txt", replaced: false }] });
    expect(expectOk(await t.call("move", { from: "chain/up", to: "up2" }))).toMatchObject({ from: "dir/sub/up", type: "symlink", links: [{ from: "dir/sub/up", to: "up2", target: "../f.txt", replaced: false }] });
    expect(await snapshot(t)).toEqual({ "dir/f.txt": "f\n", "dir/sub/g.txt": "g\n", "g2.txt": "g\n", "sub2/g.txt": "g\n" });
    const { "dir/sub/up": _, ...rest } = LINKS;
    expect(await links(t)).toEqual({ ...rest, "sub2/up": "../f.txt", up2: "../f.txt" });
  });

  it("a hostile link on the way (absolute, above the root, a loop) is SYMLINK_REFUSED, and nothing is written", async () => {
    const t = await withDirLinks();
    const before = await snapshot(t);
    for (const [tool, from, reason] of [["move", "abs/passwd", "absolute"], ["copy", "abs/hostname", "absolute"], ["move", "above/secret.txt", "above_root"], ["copy", "above/x/y", "above_root"], ["move", "loop/a", "loop"]] as const) {
      const e = expectError(await t.call(tool, { from, to: "stolen" }), 400, "SYMLINK_REFUSED", tool);
      expect(e.details, from).toMatchObject({ path: from, reason });
      expect(e.message).toContain("never follow");
    }
    expect(await snapshot(t)).toEqual(before);
    expect(await links(t)).toEqual(LINKS);
  });

  it("a dangling link on the way: NOT_FOUND names the resolved path", async () => {
    const t = await withDirLinks();
    const e = expectError(await t.call("move", { from: "dirlink/none.txt", to: "x" }), 404, "NOT_FOUND", "move");
    expect(e.message).toContain("dir/none.txt");
  });
});

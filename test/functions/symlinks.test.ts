/**
 * The file tools on symlinks (docs/symlinks.md): read/write/edit (and every tool that opens a
 * file) act on a link's target when it resolves inside the workspace, and say so; a link that
 * leads outside, loops or dangles is refused with SYMLINK_REFUSED and nothing is written.
 * Links are seeded through the import route (an archive's symlink entries).
 */
import { describe, expect, it } from "vitest";
import { newTenant, UNGATED, upload, type Tenant } from "../helpers.js";
import { tar } from "../lib/archive/archives.js";
import { importReq } from "../lib/archive/helpers.js";
import { expectError, expectOk, rawGet, rawText } from "./file-helpers.js";

async function seeded(): Promise<Tenant> {
  const t = await newTenant(undefined, UNGATED); // delete -r of a directory is held by default (docs/approvals.md); here the tools themselves are tested
  await upload(t, "real.txt", "real one\n");
  await upload(t, "src/a.ts", "export const a = 1;\n");
  const r = await importReq(t, tar([
    { name: "alias", type: "2", linkname: "real.txt" },
    { name: "chain", type: "2", linkname: "alias" },
    { name: "dirlink", type: "2", linkname: "src" },
    { name: "nested/up", type: "2", linkname: "../real.txt" },
    { name: "out", type: "2", linkname: "/etc/passwd" },
    { name: "above", type: "2", linkname: "../../other-tenant/secret" },
    { name: "dang", type: "2", linkname: "missing.txt" },
    { name: "loop1", type: "2", linkname: "loop2" },
    { name: "loop2", type: "2", linkname: "loop1" },
  ]));
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return t;
}

describe("file tools through symlinks", () => {
  it("read follows a link inside the workspace (direct, chained, through a directory link, relative with ..) and names link and target", async () => {
    const t = await seeded();
    for (const [path, target] of [["alias", "real.txt"], ["chain", "real.txt"], ["nested/up", "real.txt"], ["dirlink/a.ts", "src/a.ts"]] as const) {
      const r = await t.call("read", { file_path: path });
      const data = expectOk(r);
      expect(data.file_path).toBe(target);
      expect(r.body.output).toContain("is a symlink to");
      expect(r.body.output).toContain(`this acted on ${target}`);
    }
  });

  it("links that lead outside the workspace, loop or dangle are refused by read, write and edit; nothing is written", async () => {
    const t = await seeded();
    const cases = { out: "absolute", above: "above_root", loop1: "loop", dang: "dangling" } as const;
    for (const [path, reason] of Object.entries(cases)) {
      for (const [tool, args] of [["read", {}], ["write", { content: "x" }], ["edit", { old_string: "a", new_string: "b" }]] as const) {
        const e = expectError(await t.call(tool, { file_path: path, ...args }), 400, "SYMLINK_REFUSED", tool);
        expect(e.details.reason, `${tool} ${path}`).toBe(reason);
        expect(e.message).toMatch(/symlink/);
      }
    }
    expect((await rawGet(t, "missing.txt")).status).toBe(404);
    expect(await rawText(t, "real.txt")).toBe("real one\n");
  });

  it("write and edit through a link change its target; a new file below a directory link lands in the directory", async () => {
    const t = await seeded();
    expectOk(await t.call("read", { file_path: "alias" }));
    const w = await t.call("write", { file_path: "alias", content: "via link\n" });
    expect(expectOk(w).file_path).toBe("real.txt");
    expect(w.body.output).toContain("alias is a symlink to real.txt");
    expect(await rawText(t, "real.txt")).toBe("via link\n");
    expectOk(await t.call("read", { file_path: "dirlink/a.ts" }));
    expect(expectOk(await t.call("edit", { file_path: "dirlink/a.ts", old_string: "1", new_string: "2" })).file_path).toBe("src/a.ts");
    expect(await rawText(t, "src/a.ts")).toBe("export const a = 2;\n");
    expect(expectOk(await t.call("write", { file_path: "dirlink/new.ts", content: "n\n" })).file_path).toBe("src/new.ts");
    expect(await rawText(t, "src/new.ts")).toBe("n\n");
  });

  it("ls shows links as name -> target (and directories only links make); ls of a link shows it without following", async () => {
    const t = await seeded();
    const r = await t.call("ls", { path: "/" });
    const data = expectOk(r);
    expect(r.body.output).toContain("alias -> real.txt");
    expect(r.body.output).toContain("out -> /etc/passwd");
    expect(r.body.output).toContain("nested/"); // only the link nested/up is in it
    expect(data.entries).toContainEqual({ name: "dirlink", path: "dirlink", type: "symlink", target: "src" });
    const one = await t.call("ls", { path: "dirlink" });
    expect(expectOk(one).type).toBe("symlink");
    expect(one.body.output).toContain("dirlink -> src");
    expect(expectOk(await t.call("ls", { path: "nested" })).entries).toEqual([{ name: "up", path: "nested/up", type: "symlink", target: "../real.txt" }]);
    const rec = expectOk(await t.call("ls", { path: "", recursive: true }));
    expect(rec.entries.filter((e: any) => e.type === "symlink").map((e: any) => e.path)).toEqual(["above", "alias", "chain", "dang", "dirlink", "loop1", "loop2", "nested/up", "out"]);
  });

  it("recursive ls, the raw recursive listing, glob of directories and find list the directories only links (or only empty-directory markers) make (a recursive ls said '0 directories' for them)", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "a", "a\n");
    // As `mkdir inner; ln -s ../a inner/l; mkdir -p outer/deep; ln -s ../../a outer/deep/l; mkdir -p m/e` leaves them.
    const r = await importReq(t, tar([
      { name: "inner/l", type: "2", linkname: "../a" },
      { name: "outer/deep/l", type: "2", linkname: "../../a" },
      { name: "m/e/", type: "5" },
    ]));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const dirs = ["inner", "m", "m/e", "outer", "outer/deep"];
    const rec = await t.call("ls", { path: "", recursive: true });
    const data = expectOk(rec);
    expect(data.entries.map((e: any) => `${e.type}:${e.path}`)).toEqual(["file:a", "directory:inner", "symlink:inner/l", "directory:m", "directory:m/e", "directory:outer", "directory:outer/deep", "symlink:outer/deep/l"]);
    expect(rec.body.output).toContain("/ (recursive): 5 directories, 1 file, 2 symlinks");
    expect(rec.body.output).toContain("\ninner/\n");
    expect(expectOk(await t.call("ls", { path: "outer", recursive: true })).entries.map((e: any) => e.path)).toEqual(["outer/deep", "outer/deep/l"]);
    const raw = await t.req(`/v1/workspaces/${t.ws}/files/?recursive=true`);
    const listed = ((await raw.json()) as any).entries;
    expect(listed.filter((e: any) => e.type === "directory").map((e: any) => e.path).sort()).toEqual(dirs);
    expect(expectOk(await t.call("glob", { pattern: "**/" })).matches.map((m: any) => m.path)).toEqual(dirs.map((d) => `${d}/`));
    expect(expectOk(await t.call("find", { type: "dir" })).matches.map((m: any) => m.path)).toEqual(dirs.map((d) => `${d}/`));
    // As the root of find and glob, a directory only links make is a directory (was NOT_FOUND): its links are named, not followed.
    expect(expectOk(await t.call("find", { path: "outer" })).matches.map((m: any) => m.path)).toEqual(["outer/deep/"]);
    expect(expectOk(await t.call("glob", { pattern: "**/*", path: "inner" })).skipped.counts).toEqual({ symlink: 1 });
    // And of grep: no match there, its link named as skipped (was NOT_FOUND).
    const g = expectOk(await t.call("grep", { pattern: "real", path: "inner" }));
    expect([g.count, g.skipped.counts]).toEqual([0, { symlink: 1 }]);
  });

  it("glob, find and grep never follow links and name them in the skip report", async () => {
    const t = await seeded();
    for (const [tool, args] of [["glob", { pattern: "**/*" }], ["find", { path: "" }], ["grep", { pattern: "real" }]] as const) {
      const r = await t.call(tool, args);
      const data = expectOk(r);
      expect(data.skipped.counts.symlink, tool).toBe(9);
      expect(r.body.output, tool).toMatch(/9 symlinks, not followed/);
    }
    // A link the search would not have taken anyway (outside the glob, type, pattern or listed directory) was not skipped: no note.
    for (const [tool, args] of [["grep", { pattern: "export", glob: "*.ts" }], ["grep", { pattern: "export", type: "ts" }], ["glob", { pattern: "src/**" }], ["glob", { pattern: "**/*.ts" }], ["find", { pattern: "a.ts" }]] as const) {
      const r = await t.call(tool, args);
      expect(expectOk(r).skipped.total, `${tool} ${JSON.stringify(args)}`).toBe(0);
      expect(r.body.output, `${tool} ${JSON.stringify(args)}`).not.toContain("symlink");
    }
    // One the glob takes is named, with its count.
    const named = await t.call("grep", { pattern: "x", glob: "alias*" });
    expect(expectOk(named).skipped.counts).toEqual({ symlink: 1 });
    expect(named.body.output).toContain("1 symlink, not followed");
    // Matches are the files only: src/a.ts once, never again as dirlink/a.ts.
    const g = expectOk(await t.call("glob", { pattern: "**/a.ts" }));
    expect(g.matches.map((m: any) => m.path)).toEqual(["src/a.ts"]);
  });

  it("delete removes a link (never its target), and a recursive delete the links below the directory", async () => {
    const t = await seeded();
    const r = await t.call("delete", { path: "alias" });
    expect(expectOk(r)).toMatchObject({ type: "symlink", deleted: ["alias"] });
    expect(r.body.output).toContain("alias -> real.txt");
    expect(await rawText(t, "real.txt")).toBe("real one\n");
    expectError(await t.call("delete", { path: "nested" }), 400, "IS_DIRECTORY", "delete");
    expect(expectOk(await t.call("delete", { path: "nested", recursive: true })).deleted).toEqual(["nested/up"]);
    await upload(t, "dir/f.txt", "f\n");
    expect((await importReq(t, tar([{ name: "dir/l", type: "2", linkname: "f.txt" }]))).status).toBe(200);
    expect(expectOk(await t.call("delete", { path: "dir", recursive: true })).deleted).toEqual(["dir/f.txt", "dir/l"]);
    const left = expectOk(await t.call("ls", { path: "" })).entries.map((e: any) => e.path);
    expect(left).not.toContain("alias");
    expect(left).not.toContain("nested");
    expect(left).not.toContain("dir");
  });
});

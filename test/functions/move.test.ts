import { describe, expect, it } from "vitest";
import { MAX_TRANSFER_FILES } from "../../lib/workspace/transfer.js";
import { newTenant, testApp, testDeps, upload, UNGATED } from "../helpers.js";
import { callIn, download, expectError, interceptPuts, seedMany, snapshot, text, twoTenants, uploadAll } from "./fs-helpers.js";

describe("move", () => {
  it("renames a file: the new path has the content, the old one is gone", async () => {
    const t = await newTenant(undefined, UNGATED);
    await uploadAll(t, { "a.txt": "hello", "keep.txt": "k" });
    const r = await t.call("move", { from: "/a.txt", to: "docs/b.txt" });
    expect(r.status).toBe(200);
    expect(r.body.ok).toBe(true);
    expect(r.body.output).toBe("Moved a.txt to docs/b.txt (5 bytes). a.txt no longer exists.");
    expect(r.body.data).toEqual({
      from: "a.txt",
      to: "docs/b.txt",
      type: "file",
      files: [{ from: "a.txt", to: "docs/b.txt", size: 5, etag: expect.any(String), replaced: false }],
      count: 1,
      bytes: 5,
      directories: [],
      overwritten: 0,
    });
    expect(await snapshot(t)).toEqual({ "docs/b.txt": "hello", "keep.txt": "k" });
    const old = await t.call("read", { file_path: "a.txt" });
    expectError(old, "NOT_FOUND", 404);
    const now = await t.call("read", { file_path: "docs/b.txt" });
    expect(now.body.data.etag).toBe(r.body.data.files[0].etag);
  });

  it("carries the session's read record: edit at the new path works without reading again", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "a.txt", "one\ntwo\n");
    expect((await t.call("read", { file_path: "a.txt" })).status).toBe(200);
    expect((await t.call("move", { from: "a.txt", to: "b.txt" })).status).toBe(200);
    const e = await t.call("edit", { file_path: "b.txt", old_string: "two", new_string: "three" });
    expect(e.status, JSON.stringify(e.body)).toBe(200);
    expect(await text(t, "b.txt")).toBe("one\nthree\n");
    // Another session has not read it.
    expectError(await t.call("edit", { file_path: "b.txt", old_string: "one", new_string: "1" }, "other-session"), "NOT_READ", 409);
  });

  it("a file moved without reading can be edited at its new path (the move is the session's own write)", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "a.txt", "x = 1\n");
    expect((await t.call("move", { from: "a.txt", to: "b.txt" })).status).toBe(200);
    const e = await t.call("edit", { file_path: "b.txt", old_string: "x = 1", new_string: "x = 2" });
    expect(e.status, JSON.stringify(e.body)).toBe(200);
  });

  it("a file changed since the session read it stays stale after the move: FILE_MODIFIED until read again", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "a.txt", "v1\n");
    expect((await t.call("read", { file_path: "a.txt" })).status).toBe(200);
    await upload(t, "a.txt", "v2 by someone else\n");
    expect((await t.call("move", { from: "a.txt", to: "b.txt" })).status).toBe(200);
    expectError(await t.call("write", { file_path: "b.txt", content: "overwrite" }), "FILE_MODIFIED", 409);
    expect((await t.call("read", { file_path: "b.txt" })).status).toBe(200);
    expect((await t.call("write", { file_path: "b.txt", content: "overwrite" })).status).toBe(200);
  });

  it("moves into an existing directory, into a path ending in '/', and to the root", async () => {
    const t = await newTenant(undefined, UNGATED);
    await uploadAll(t, { "a.txt": "a", "b.txt": "b", "sub/c.txt": "c", "dir/x": "x" });
    const into = await t.call("move", { from: "a.txt", to: "dir" });
    expect(into.body.data.to).toBe("dir/a.txt");
    const slash = await t.call("move", { from: "b.txt", to: "newdir/" });
    expect(slash.body.data.to).toBe("newdir/b.txt");
    const root = await t.call("move", { from: "sub/c.txt", to: "/" });
    expect(root.body.data.to).toBe("c.txt");
    expect(await snapshot(t)).toEqual({ "dir/a.txt": "a", "dir/x": "x", "newdir/b.txt": "b", "c.txt": "c" });
  });

  it("moves a whole directory: deep, hidden and unicode files, and nothing beside it", async () => {
    const t = await newTenant(undefined, UNGATED);
    const files = { "src/a.ts": "a", "src/.env": "E", "src/x/y/z/deep.ts": "deep", "src/é名.txt": "u", "src/empty": "" };
    await uploadAll(t, { ...files, "src-old/keep.ts": "k", "src.ts": "s" });
    const r = await t.call("move", { from: "src", to: "lib" });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ from: "src", to: "lib", type: "directory", count: 5, bytes: 7, overwritten: 0 });
    expect(r.body.data.files.map((f: any) => [f.from, f.to])).toEqual([
      ["src/.env", "lib/.env"],
      ["src/a.ts", "lib/a.ts"],
      ["src/empty", "lib/empty"],
      ["src/x/y/z/deep.ts", "lib/x/y/z/deep.ts"],
      ["src/é名.txt", "lib/é名.txt"],
    ]);
    expect(r.body.output).toMatch(/^Moved directory src\/ to lib\/: 5 files, 7 bytes\. src\/ no longer exists\.\n  src\/\.env -> lib\/\.env\n/);
    expect(await snapshot(t)).toEqual({ "lib/a.ts": "a", "lib/.env": "E", "lib/x/y/z/deep.ts": "deep", "lib/é名.txt": "u", "lib/empty": "", "src-old/keep.ts": "k", "src.ts": "s" });
    // Every moved file can be edited at its new path without reading.
    expect((await t.call("edit", { file_path: "lib/x/y/z/deep.ts", old_string: "deep", new_string: "deeper" })).status).toBe(200);
  });

  it("moves a binary file byte for byte, and an empty file", async () => {
    const t = await newTenant(undefined, UNGATED);
    const bytes = new Uint8Array(70_000).map((_, i) => (i * 7919 + 13) % 256);
    await upload(t, "img.bin", bytes);
    await upload(t, "empty", "");
    expect((await t.call("move", { from: "img.bin", to: "assets/img.bin" })).status).toBe(200);
    expect(await download(t, "assets/img.bin")).toEqual(bytes);
    expect(await download(t, "img.bin")).toBeNull();
    const e = await t.call("move", { from: "empty", to: "still-empty" });
    expect(e.body.data.bytes).toBe(0);
    expect(await download(t, "still-empty")).toEqual(new Uint8Array(0));
  });

  it("ALREADY_EXISTS for an existing target without overwrite; nothing changes", async () => {
    const t = await newTenant(undefined, UNGATED);
    const files = { "a.txt": "a", "b.txt": "b", "src/x.ts": "x", "lib/src/old.ts": "old", "d/a.txt/inner": "i" };
    await uploadAll(t, files);
    const file = await t.call("move", { from: "a.txt", to: "b.txt" });
    expectError(file, "ALREADY_EXISTS", 409);
    expect(file.body.error.message).toBe("b.txt already exists. Pass overwrite: true to replace it, or choose another target.");
    const dir = await t.call("move", { from: "src", to: "lib" });
    expectError(dir, "ALREADY_EXISTS", 409);
    expect(dir.body.error.message).toBe("lib/src already exists. Pass overwrite: true to replace it (files with the same paths are replaced, other files in it are kept), or choose another target.");
    expectError(await t.call("move", { from: "a.txt", to: "d" }), "ALREADY_EXISTS", 409);
    expect(await snapshot(t)).toEqual(files);
  });

  it("overwrite replaces a file", async () => {
    const t = await newTenant(undefined, UNGATED);
    await uploadAll(t, { "a.txt": "new", "b.txt": "old" });
    const r = await t.call("move", { from: "a.txt", to: "b.txt", overwrite: true });
    expect(r.status).toBe(200);
    expect(r.body.data.overwritten).toBe(1);
    expect(r.body.output).toBe("Moved a.txt to b.txt (3 bytes). It replaced the file that was there. a.txt no longer exists.");
    expect(await snapshot(t)).toEqual({ "b.txt": "new" });
  });

  it("overwrite merges a directory into an existing one", async () => {
    const t = await newTenant(undefined, UNGATED);
    await uploadAll(t, { "src/a.ts": "new a", "src/sub/b.ts": "b", "lib/src/a.ts": "old a", "lib/src/other.ts": "kept" });
    const r = await t.call("move", { from: "src", to: "lib", overwrite: true });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ to: "lib/src", count: 2, overwritten: 1 });
    expect(await snapshot(t)).toEqual({ "lib/src/a.ts": "new a", "lib/src/sub/b.ts": "b", "lib/src/other.ts": "kept" });
  });

  it("overwrite never turns a file into a directory or the reverse; nothing changes", async () => {
    const t = await newTenant(undefined, UNGATED);
    const files = { "a.txt": "a", "d/a.txt/inner": "i", "src/x.ts": "x", "f": "file", "m/y/z.ts": "z", "n/m/y": "file y", "p/q.ts": "q", "o/p/q.ts/r": "dir" };
    await uploadAll(t, files);
    const fileOnDir = await t.call("move", { from: "a.txt", to: "d", overwrite: true });
    expectError(fileOnDir, "IS_DIRECTORY", 400);
    expect(fileOnDir.body.error.message).toBe("d/a.txt is a directory; a file cannot replace it. Give a path inside it, or delete it first.");
    const dirOnFile = await t.call("move", { from: "src", to: "f", overwrite: true });
    expectError(dirOnFile, "NOT_A_DIRECTORY", 400);
    expect(dirOnFile.body.error.message).toBe("f is a file; a directory cannot replace it. Delete it first, or choose another target.");
    // Merging m/ into n/m/: m/y is a directory, n/m/y is a file.
    const merge = await t.call("move", { from: "m", to: "n", overwrite: true });
    expectError(merge, "NOT_A_DIRECTORY", 400);
    expect(merge.body.error.message).toBe("Cannot move m/y/z.ts to n/m/y/z.ts: n/m/y is a file, not a directory. Nothing was changed.");
    // Merging p/ into o/p/: p/q.ts is a file, o/p/q.ts is a directory.
    const merge2 = await t.call("move", { from: "p", to: "o", overwrite: true });
    expectError(merge2, "IS_DIRECTORY", 400);
    expect(await snapshot(t)).toEqual(files);
  });

  it("NOT_A_DIRECTORY when the target lies below a file", async () => {
    const t = await newTenant(undefined, UNGATED);
    await uploadAll(t, { "a.txt": "a", "b.txt": "b" });
    const r = await t.call("move", { from: "a.txt", to: "b.txt/c.txt" });
    expectError(r, "NOT_A_DIRECTORY", 400);
    expect(r.body.error.message).toBe("Cannot move to b.txt/c.txt: b.txt is a file, not a directory.");
    const slash = await t.call("move", { from: "a.txt", to: "b.txt/" });
    expectError(slash, "NOT_A_DIRECTORY", 400);
    expect(await snapshot(t)).toEqual({ "a.txt": "a", "b.txt": "b" });
  });

  it("INVALID_ARGUMENT for a move onto itself or into itself", async () => {
    const t = await newTenant(undefined, UNGATED);
    const files = { "a.txt": "a", "src/sub/x.ts": "x", "q/s/q/f": "f", "é.txt": "e" };
    await uploadAll(t, files);
    const same = await t.call("move", { from: "a.txt", to: "/a.txt" });
    expectError(same, "INVALID_ARGUMENT", 400);
    expect(same.body.error.message).toBe("from and to name the same path (a.txt); nothing to move. Give a different target path.");
    expectError(await t.call("move", { from: "é.txt".normalize("NFD"), to: "é.txt".normalize("NFC") }), "INVALID_ARGUMENT", 400);
    const inside = await t.call("move", { from: "src", to: "src/sub/deeper" });
    expectError(inside, "INVALID_ARGUMENT", 400);
    expect(inside.body.error.message).toBe("Cannot move the directory src into itself (src/sub/deeper). Choose a target outside src/.");
    expectError(await t.call("move", { from: "src", to: "src" }), "INVALID_ARGUMENT", 400);
    expectError(await t.call("move", { from: "src/sub", to: "src/" }), "INVALID_ARGUMENT", 400);
    const onto = await t.call("move", { from: "q/s/q", to: "/", overwrite: true });
    expectError(onto, "INVALID_ARGUMENT", 400);
    expect(onto.body.error.message).toBe("Cannot move q/s/q onto q, which contains it. Choose a target outside q/.");
    expectError(await t.call("move", { from: "a.txt", to: "b", overwrite: "yes" }), "INVALID_ARGUMENT", 400);
    expectError(await t.call("move", { from: "a.txt" }), "INVALID_ARGUMENT", 400);
    expect(await snapshot(t)).toEqual(files);
  });

  it("NOT_FOUND for a missing source, with similar paths", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "src/index.ts", "i");
    const r = await t.call("move", { from: "src/indx.ts", to: "b.ts" });
    expectError(r, "NOT_FOUND", 404);
    expect(r.body.error.message).toBe("Source not found: src/indx.ts. Did you mean: src/index.ts?");
    expect(await snapshot(t)).toEqual({ "src/index.ts": "i" });
  });

  it("INVALID_PATH for the root and for paths that leave the workspace", async () => {
    const t = await newTenant(undefined, UNGATED);
    await uploadAll(t, { "a.txt": "a", "d/b.txt": "b" });
    const root = await t.call("move", { from: "/", to: "backup" });
    expectError(root, "INVALID_PATH", 400);
    expect(root.body.error.message).toBe("The workspace root cannot be moved; give a file or directory inside it, e.g. src.");
    for (const [from, to] of [["../a.txt", "b"], ["a.txt", "../a.txt"], ["a.txt", "d/../../x"], ["d/../..", "x"], ["a.txt", "../../secret/f/a.txt"]]) {
      expectError(await t.call("move", { from, to }), "INVALID_PATH", 400);
    }
    expect(await snapshot(t)).toEqual({ "a.txt": "a", "d/b.txt": "b" });
  });

  it(`FILE_TOO_LARGE for a directory of more than ${MAX_TRANSFER_FILES} files; nothing moves`, async () => {
    const t = await newTenant(undefined, UNGATED);
    await seedMany(t, "big", MAX_TRANSFER_FILES + 1);
    const r = await t.call("move", { from: "big", to: "bigger" });
    expectError(r, "FILE_TOO_LARGE", 413);
    expect(r.body.error.message).toBe(`big holds more than ${MAX_TRANSFER_FILES} files and directories; one move handles at most ${MAX_TRANSFER_FILES}. Move its subdirectories one at a time.`);
    const ls = await t.call("ls", {});
    expect(ls.body.data.entries.map((e: any) => e.path)).toEqual(["big"]);
  }, 30_000);

  it("a move that fails midway loses nothing: the sources stay and the new copies are removed", async () => {
    const app = testApp({ storage: interceptPuts(testDeps().storage, async (key) => {
      if (key.endsWith("/f/dst/c.txt")) throw new Error("storage failure");
    }) });
    const t = await newTenant(app, UNGATED);
    const files = { "src/a.txt": "a", "src/b.txt": "b", "src/c.txt": "c", "src/d.txt": "d", "src/e/f.txt": "f" };
    await uploadAll(t, files);
    const r = await t.call("move", { from: "src", to: "dst" });
    expectError(r, "INTERNAL", 500);
    expect(r.body.error.message).toMatch(/Nothing was moved: .* and every source is still in place\./);
    expect(await snapshot(t)).toEqual(files);
  });

  it("a concurrent creator of a target wins, is not overwritten, and nothing is moved", async () => {
    const base = testDeps().storage;
    const app = testApp({ storage: interceptPuts(base, async (key) => {
      if (key.endsWith("/f/dst/b.txt")) await base.put(key, "theirs", { ifNoneMatch: "*" }).catch(() => {});
    }) });
    const t = await newTenant(app, UNGATED);
    const files = { "src/a.txt": "a", "src/b.txt": "b", "src/c.txt": "c" };
    await uploadAll(t, files);
    const r = await t.call("move", { from: "src", to: "dst" });
    expectError(r, "ALREADY_EXISTS", 409);
    expect(r.body.error.message).toContain("dst/b.txt already exists");
    expect(r.body.error.message).toContain("every source is still in place");
    expect(await snapshot(t)).toEqual({ ...files, "dst/b.txt": "theirs" });
  });

  it("a source changed between its copy and its delete is not moved: its copy is removed, FILE_MODIFIED, the newer version stays", async () => {
    const base = testDeps().storage;
    let change: (() => Promise<void>) | null = null;
    const app = testApp({ storage: { ...base, put: async (key, body, opts) => {
      const r = await base.put(key, body, opts);
      const c = change;
      if (c && key.includes("/f/dst")) {
        change = null;
        await c(); // right after the move's copy: the source changes
      }
      return r;
    } } });
    const t = await newTenant(app, UNGATED);
    await upload(t, "a.txt", "old");
    change = async () => void (await upload(t, "a.txt", "newer"));
    const r = await t.call("move", { from: "a.txt", to: "dst.txt" });
    expectError(r, "FILE_MODIFIED", 409);
    expect(r.body.error.message).toBe("a.txt was changed by another call during the move, so it was not moved: the newer version is still at a.txt and nothing was written to dst.txt. Read it, then move it again.");
    expect(await snapshot(t)).toEqual({ "a.txt": "newer" });

    // A directory: the unchanged files move, the changed one stays, and the same call again moves it.
    await uploadAll(t, { "src/a.txt": "a", "src/b.txt": "b", "src/c.txt": "c" });
    change = async () => void (await upload(t, "src/b.txt", "b newer"));
    const d = await t.call("move", { from: "src", to: "dst" });
    expectError(d, "CONFLICT", 409);
    expect(d.body.error.message).toMatch(/^1 file was changed by another call during the move of src\/ and was not moved \(the newer version stays at the old path\): src\/b\.txt\. The other 2 files were moved to dst\/\. Call move again with the same arguments to move the rest\.$/);
    expect(await snapshot(t)).toEqual({ "a.txt": "newer", "src/b.txt": "b newer", "dst/a.txt": "a", "dst/c.txt": "c" });
    const again = await t.call("move", { from: "src", to: "dst" });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(await snapshot(t)).toEqual({ "a.txt": "newer", "dst/a.txt": "a", "dst/b.txt": "b newer", "dst/c.txt": "c" });
  });

  it("an interrupted directory move is reported by ls and move, and the same move again finishes it", async () => {
    const base = testDeps().storage;
    const crash = { after: -1, copies: 0, dead: false };
    const dead = () => {
      if (crash.dead) throw new Error("the isolate died");
    };
    // After K copies every storage call fails: the move can neither go on nor undo (a crash).
    const app = testApp({ storage: {
      ...base,
      head: async (k) => (dead(), base.head(k)),
      get: async (k, o) => (dead(), base.get(k, o)),
      list: async (o) => (dead(), base.list(o)),
      delete: async (k) => (dead(), base.delete(k)),
      put: async (key, body, opts) => {
        if (crash.after >= 0 && key.includes("/f/lib/") && ++crash.copies > crash.after) crash.dead = true;
        dead();
        return base.put(key, body, opts);
      },
    } });
    const t = await newTenant(app, UNGATED);
    const files = { "src/a.ts": "a", "src/b.ts": "b", "src/c.ts": "c", "src/d/e.ts": "e", "src/f.ts": "f" };
    await uploadAll(t, files);
    crash.after = 3;
    const r = await t.call("move", { from: "src", to: "lib" });
    expect(r.status).toBe(500);
    crash.after = -1;
    crash.dead = false;
    const after = await snapshot(t);
    expect(Object.keys(after).filter((p) => p.startsWith("lib/"))).toHaveLength(3);
    expect(Object.keys(after).filter((p) => p.startsWith("src/"))).toHaveLength(5);
    // Someone changes one of the copies meanwhile: finishing must keep both versions of that file.
    const changed = Object.keys(after).find((p) => p.startsWith("lib/"))!;
    await upload(t, changed, "changed at the target");

    const note = /A move of src\/ to lib\/ started at \S+ did not finish \(it was interrupted, or is still running\): 3 files exist in both, 5 still in src\/\. Call move again with the same arguments \(from: "src", to: "lib"\) to finish it\./;
    for (const path of ["src", "lib", "/"]) {
      const ls = await t.call("ls", { path });
      expect(ls.body.output, path).toMatch(note);
      expect(ls.body.data.unfinished_moves).toHaveLength(1);
    }
    const other = await t.call("move", { from: "src/f.ts", to: "g.ts" });
    expect(other.status).toBe(200);
    expect(other.body.output).toMatch(/\n\nA move of src\/ to lib\/ started at \S+ did not finish/);
    expect(other.body.data.notes).toHaveLength(1);

    const finish = await t.call("move", { from: "src", to: "lib" });
    expect(finish.status, JSON.stringify(finish.body)).toBe(200);
    expect(finish.body.data.finished).toBe(true);
    const src = changed.replace(/^lib\//, "src/");
    expect(finish.body.data.kept).toEqual([src]);
    expect(finish.body.output).toMatch(/^Finished the interrupted move of src\/ to lib\/: 3 files moved by this call, 3 bytes\. 1 file differs between src\/ and lib\/ .* left at both paths: src\/\S+\. Compare them and delete the one you do not want\./);
    const want: Record<string, string> = { "g.ts": "f" };
    for (const [p, c] of Object.entries(files)) if (p !== "src/f.ts") want[p.replace(/^src\//, "lib/")] = c;
    want[changed] = "changed at the target";
    want[src] = (files as Record<string, string>)[src]!;
    expect(await snapshot(t)).toEqual(want);
    // Done: no more notes.
    expect((await t.call("ls", { path: "lib" })).body.data.unfinished_moves).toBeUndefined();
  });

  it("another tenant's workspace is NOT_FOUND and nothing of theirs changes", async () => {
    const { a, b } = await twoTenants({ "secret.txt": "s", "dir/x.txt": "x" });
    const before = await snapshot(a, "secret");
    for (const args of [{ from: "secret.txt", to: "stolen.txt" }, { from: "dir", to: "/", overwrite: true }]) {
      expectError(await callIn(b, "secret", "move", args), "NOT_FOUND", 404);
    }
    // B's own workspace has no such files; paths cannot climb to A's.
    expectError(await b.call("move", { from: "secret.txt", to: "x" }), "NOT_FOUND", 404);
    expectError(await b.call("move", { from: "../../../" + a.tenant + "/w/secret/f/secret.txt", to: "x" }), "INVALID_PATH", 400);
    expect(await snapshot(a, "secret")).toEqual(before);
    expect(await snapshot(b)).toEqual({});
  });

  it("PERMISSION_DENIED for a read-only key", async () => {
    const t = await newTenant(undefined, { scopes: ["read"] });
    expectError(await t.call("move", { from: "a", to: "b" }), "PERMISSION_DENIED", 403);
  });
});

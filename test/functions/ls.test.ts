import { describe, expect, it } from "vitest";
import { newTenant, upload } from "../helpers.js";
import { callIn, expectError, seedMany, snapshot, twoTenants, uploadAll } from "./fs-helpers.js";

const names = (body: any) => body.data.entries.map((e: any) => (e.type === "directory" ? `${e.path}/` : e.path));

describe("ls", () => {
  it("lists the root of an empty workspace as empty, not an error", async () => {
    const t = await newTenant();
    for (const path of [undefined, "/", "", ".", "./"]) {
      const r = await t.call("ls", path === undefined ? {} : { path });
      expect(r.status).toBe(200);
      expect(r.body.ok).toBe(true);
      expect(r.body.output).toBe("The workspace is empty.");
      expect(r.body.data).toEqual({ path: "", type: "directory", entries: [], count: 0, truncated: false, cursor: null, hidden_skipped: 0 });
    }
  });

  it("lists directories first, then files by name, with sizes; hides dot names by default", async () => {
    const t = await newTenant();
    await uploadAll(t, { "b.txt": "bb", "a.txt": "abc", "zdir/x.ts": "x", "adir/deep/y.ts": "yy", ".env": "SECRET=1", ".git/config": "[core]", empty: "" });
    const r = await t.call("ls", {});
    expect(r.status).toBe(200);
    expect(r.body.output).toBe(
      "/: 2 directories, 3 files\nadir/\nzdir/\na.txt (3 bytes)\nb.txt (2 bytes)\nempty (0 bytes)\n" +
        '[2 hidden entries (names starting with ".") not shown; pass show_hidden: true to include them.]',
    );
    expect(r.body.data.entries.map((e: any) => [e.name, e.path, e.type, e.size])).toEqual([
      ["adir", "adir", "directory", undefined],
      ["zdir", "zdir", "directory", undefined],
      ["a.txt", "a.txt", "file", 3],
      ["b.txt", "b.txt", "file", 2],
      ["empty", "empty", "file", 0],
    ]);
    const file = r.body.data.entries[2];
    expect(Object.keys(file).sort()).toEqual(["modified", "name", "path", "size", "type"]);
    expect(new Date(file.modified).toISOString()).toBe(file.modified);
    expect(r.body.data).toMatchObject({ path: "", type: "directory", count: 5, truncated: false, cursor: null, hidden_skipped: 2 });

    const all = await t.call("ls", { show_hidden: true });
    expect(names(all.body)).toEqual([".git/", "adir/", "zdir/", ".env", "a.txt", "b.txt", "empty"]);
    expect(all.body.data.hidden_skipped).toBe(0);
    expect(all.body.output).not.toContain("hidden");
  });

  it("lists a subdirectory, whatever the spelling of its path", async () => {
    const t = await newTenant();
    await uploadAll(t, { "src/lib/a.ts": "a", "src/index.ts": "i", "srcs/other.ts": "o" });
    for (const path of ["src", "/src", "src/", "./src//", "src/lib/.."]) {
      const r = await t.call("ls", { path });
      expect(r.status).toBe(200);
      expect(r.body.output).toBe("src/: 1 directory, 1 file\nlib/\nindex.ts (1 byte)");
      expect(r.body.data.path).toBe("src");
      expect(names(r.body)).toEqual(["src/lib/", "src/index.ts"]);
    }
  });

  it("lists everything below with recursive, each directory before its contents", async () => {
    const t = await newTenant();
    await uploadAll(t, { "a/b/c/d/e.txt": "e", "a/b/f.txt": "ff", "a/z.txt": "z", "top.txt": "t", "a/.cache/x": "x", ".git/HEAD": "ref" });
    const r = await t.call("ls", { recursive: true });
    expect(r.status).toBe(200);
    expect(names(r.body)).toEqual(["a/", "a/b/", "a/b/c/", "a/b/c/d/", "a/b/c/d/e.txt", "a/b/f.txt", "a/z.txt", "top.txt"]);
    expect(r.body.data.entries[3]).toEqual({ name: "d", path: "a/b/c/d", type: "directory" });
    expect(r.body.output).toBe(
      "/ (recursive): 4 directories, 4 files\na/\na/b/\na/b/c/\na/b/c/d/\na/b/c/d/e.txt (1 byte)\na/b/f.txt (2 bytes)\na/z.txt (1 byte)\ntop.txt (1 byte)\n" +
        '[2 hidden entries (names starting with ".") not shown; pass show_hidden: true to include them.]',
    );
    const sub = await t.call("ls", { path: "a/b", recursive: true });
    expect(names(sub.body)).toEqual(["a/b/c/", "a/b/c/d/", "a/b/c/d/e.txt", "a/b/f.txt"]);
    const hidden = await t.call("ls", { recursive: true, show_hidden: true });
    expect(names(hidden.body)).toEqual([".git/", ".git/HEAD", "a/", "a/.cache/", "a/.cache/x", "a/b/", "a/b/c/", "a/b/c/d/", "a/b/c/d/e.txt", "a/b/f.txt", "a/z.txt", "top.txt"]);
    // Listing a hidden directory by name shows its content.
    const git = await t.call("ls", { path: ".git" });
    expect(names(git.body)).toEqual([".git/HEAD"]);
  });

  it("a directory holding only hidden entries says so", async () => {
    const t = await newTenant();
    await upload(t, "d/.keep", "");
    const r = await t.call("ls", { path: "d" });
    expect(r.status).toBe(200);
    expect(r.body.data.entries).toEqual([]);
    expect(r.body.output).toBe('d/ has no entries other than hidden ones.\n[1 hidden entry (names starting with ".") not shown; pass show_hidden: true to include them.]');
  });

  it("a path that is a file lists just that file", async () => {
    const t = await newTenant();
    await upload(t, "src/a.ts", "hello");
    const r = await t.call("ls", { path: "/src/a.ts" });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ path: "src/a.ts", type: "file", count: 1, truncated: false, cursor: null });
    expect(r.body.data.entries).toEqual([{ name: "a.ts", path: "src/a.ts", type: "file", size: 5, modified: expect.any(String) }]);
    expect(r.body.output).toMatch(/^src\/a\.ts is a file \(5 bytes, modified .+\)\. Use read to see its content\.$/);
  });

  it("pages with limit and a cursor until done, without gaps or repeats", async () => {
    const t = await newTenant();
    const files = ["a.txt", "b/1.txt", "b/2.txt", "c.txt", "d/e/f.txt", "é.txt", "g.txt", ".hidden", ".h/x", "z/.y", "zz/k.txt"];
    await uploadAll(t, Object.fromEntries(files.map((f) => [f, f])));
    for (const recursive of [false, true]) {
      const full = await t.call("ls", { recursive });
      const expected = names(full.body);
      expect(full.body.data.truncated).toBe(false);
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const r = await t.call("ls", { recursive, limit: 2, ...(cursor ? { cursor } : {}) });
        expect(r.status).toBe(200);
        pages++;
        expect(r.body.data.count).toBeLessThanOrEqual(2);
        seen.push(...names(r.body));
        cursor = r.body.data.cursor ?? undefined;
        expect(r.body.data.truncated).toBe(cursor !== undefined);
        if (cursor) expect(r.body.output).toContain(`cursor: "${cursor}"`);
        expect(pages).toBeLessThan(20);
      } while (cursor);
      // Pages come in storage order; together they are exactly the full listing.
      expect([...seen].sort()).toEqual([...expected].sort());
      expect(new Set(seen).size).toBe(seen.length);
      expect(pages).toBe(Math.ceil(expected.length / 2));
    }
  });

  it("pages a deep tree one entry at a time", async () => {
    const t = await newTenant();
    await uploadAll(t, { "a/b/c/d.txt": "d", "a/b/e.txt": "e", "a/f.txt": "f" });
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const r = await t.call("ls", { recursive: true, limit: 1, ...(cursor ? { cursor } : {}) });
      expect(r.body.data.count).toBe(1);
      seen.push(...names(r.body));
      cursor = r.body.data.cursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual(["a/", "a/b/", "a/b/c/", "a/b/c/d.txt", "a/b/e.txt", "a/f.txt"]);
  });

  it("skips a large hidden tree within one call", async () => {
    const t = await newTenant();
    await seedMany(t, ".git", 1500);
    await uploadAll(t, { "a.txt": "a", "b.txt": "b", "c.txt": "c" });
    const r = await t.call("ls", { recursive: true, limit: 2 });
    expect(names(r.body)).toEqual(["a.txt", "b.txt"]);
    expect(r.body.data.hidden_skipped).toBe(1500);
    const rest = await t.call("ls", { recursive: true, limit: 2, cursor: r.body.data.cursor });
    expect(names(rest.body)).toEqual(["c.txt"]);
    expect(rest.body.data.truncated).toBe(false);
  }, 30_000);

  it("says truncated exactly: a page that ends with the listing has no cursor", async () => {
    const t = await newTenant();
    await uploadAll(t, { "a.txt": "a", "b.txt": "b", ".c": "c" });
    const r = await t.call("ls", { limit: 2 });
    expect(names(r.body)).toEqual(["a.txt", "b.txt"]);
    expect(r.body.data.truncated).toBe(false);
    expect(r.body.data.cursor).toBeNull();
    const one = await t.call("ls", { limit: 1 });
    expect(one.body.data.truncated).toBe(true);
    expect(one.body.output).toContain("[Truncated after 1 entries. To continue, call ls again with the same path and cursor:");
  });

  it("stops near the output size limit, and the cursor continues", async () => {
    const t = await newTenant();
    const dir = `${"a".repeat(250)}/${"b".repeat(250)}`;
    const paths = Array.from({ length: 130 }, (_, i) => `${dir}/${"c".repeat(200)}${String(i).padStart(3, "0")}`);
    await Promise.all(paths.map((p) => upload(t, p, "x")));
    const first = await t.call("ls", { path: dir });
    expect(first.body.data.truncated).toBe(true);
    expect(first.body.data.count).toBeGreaterThan(90);
    expect(first.body.data.count).toBeLessThan(130);
    expect(first.body.output.length).toBeLessThan(100_000);
    const rest = await t.call("ls", { path: dir, cursor: first.body.data.cursor });
    expect(rest.body.data.truncated).toBe(false);
    expect([...names(first.body), ...names(rest.body)]).toEqual(paths);
  });

  it("handles unicode names; NFD and NFC spellings name the same directory", async () => {
    const t = await newTenant();
    await upload(t, "dir/é名.txt", "x");
    await upload(t, "café/menu.txt", "m");
    const r = await t.call("ls", { path: "dir" });
    expect(r.body.data.entries).toEqual([{ name: "é名.txt", path: "dir/é名.txt", type: "file", size: 1, modified: expect.any(String) }]);
    const nfd = "café".normalize("NFD");
    expect(nfd).not.toBe("café");
    const byNfd = await t.call("ls", { path: nfd });
    expect(byNfd.status).toBe(200);
    expect(byNfd.body.data.path).toBe("café");
    expect(names(byNfd.body)).toEqual(["café/menu.txt"]);
    const file = await t.call("ls", { path: "dir/é名.txt".normalize("NFD") });
    expect(file.body.data.type).toBe("file");
  });

  it("NOT_FOUND for a missing directory, naming similar paths", async () => {
    const t = await newTenant();
    await uploadAll(t, { "src/a.ts": "a", "documentation/x.md": "x" });
    const r = await t.call("ls", { path: "srcs" });
    expectError(r, "NOT_FOUND", 404);
    expect(r.body.error.message).toBe("Directory not found: srcs. Did you mean: src/?");
    expect(r.body.error.details.similar).toEqual(["src/"]);
    const deep = await t.call("ls", { path: "nope/deeper" });
    expectError(deep, "NOT_FOUND", 404);
  });

  it("NOT_A_DIRECTORY for a path below a file", async () => {
    const t = await newTenant();
    await upload(t, "src/a.ts", "a");
    const r = await t.call("ls", { path: "src/a.ts/inner" });
    expectError(r, "NOT_A_DIRECTORY", 400);
    expect(r.body.error.message).toBe("Cannot list src/a.ts/inner: src/a.ts is a file, not a directory. Use read to see src/a.ts, or ls its directory.");
  });

  it("INVALID_PATH for paths that leave the workspace", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "a");
    for (const path of ["..", "../", "../other", "a/../../x", "/..", "a\\b", "a\u0000b"]) {
      const r = await t.call("ls", { path });
      expectError(r, "INVALID_PATH", 400);
    }
  });

  it("INVALID_ARGUMENT for a bad limit or cursor", async () => {
    const t = await newTenant();
    await uploadAll(t, { "a.txt": "a", "b.txt": "b", "d/c.txt": "c", "d/e.txt": "e" });
    for (const limit of [0, -1, 5001, 1.5]) expectError(await t.call("ls", { limit }), "INVALID_ARGUMENT", 400);
    expectError(await t.call("ls", { recursive: "yes" }), "INVALID_ARGUMENT", 400);
    const garbage = await t.call("ls", { cursor: "not a cursor" });
    expectError(garbage, "INVALID_ARGUMENT", 400);
    expect(garbage.body.error.message).toContain("Invalid cursor");
    const forged = await t.call("ls", { cursor: btoa(JSON.stringify({ v: 2 })) });
    expectError(forged, "INVALID_ARGUMENT", 400);
    // A cursor continues only the listing that made it.
    const page = await t.call("ls", { limit: 1 });
    const cursor = page.body.data.cursor;
    expect(cursor).toEqual(expect.any(String));
    expectError(await t.call("ls", { path: "d", cursor }), "INVALID_ARGUMENT", 400);
    expectError(await t.call("ls", { recursive: true, cursor }), "INVALID_ARGUMENT", 400);
    expect((await t.call("ls", { cursor })).status).toBe(200);
  });

  it("another tenant's workspace is NOT_FOUND and reveals nothing", async () => {
    const { a, b } = await twoTenants({ "secret.txt": "s", "dir/x.txt": "x" });
    const before = await snapshot(a, "secret");
    const r = await callIn(b, "secret", "ls", { path: "/" });
    expectError(r, "NOT_FOUND", 404);
    expect(r.body.error.message).toBe("Workspace not found: secret. List your workspaces with GET /v1/workspaces.");
    expect(JSON.stringify(r.body)).not.toContain("secret.txt");
    // B's own workspace of the same name does not see A's files either.
    const own = await b.call("ls", { recursive: true });
    expect(own.body.data.entries).toEqual([]);
    expect(await snapshot(a, "secret")).toEqual(before);
  });

  it("PERMISSION_DENIED for a key without the read scope", async () => {
    const t = await newTenant(undefined, { scopes: ["write"] });
    expectError(await t.call("ls", {}), "PERMISSION_DENIED", 403);
  });
});

import { describe, expect, it } from "vitest";
import { env } from "cloudflare:workers";
import { fileKey } from "../../lib/layout/paths.js";
import { MAX_TRANSFER_FILES } from "../../lib/workspace/transfer.js";
import { newTenant, testApp, testDeps, upload, UNGATED } from "../helpers.js";
import { callIn, download, expectError, interceptPuts, seedMany, snapshot, text, twoTenants, uploadAll } from "./fs-helpers.js";

/** Byte equality without a slow deep-equal over every element. */
function sameBytes(a: Uint8Array | null, b: Uint8Array): boolean {
  if (!a || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

describe("copy", () => {
  it("copies a file; the source stays", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "a.txt", "hello");
    const r = await t.call("copy", { from: "a.txt", to: "/b/c.txt" });
    expect(r.status).toBe(200);
    expect(r.body.ok).toBe(true);
    expect(r.body.output).toBe("Copied a.txt to b/c.txt (5 bytes).");
    expect(r.body.data).toEqual({
      from: "a.txt",
      to: "b/c.txt",
      type: "file",
      files: [{ from: "a.txt", to: "b/c.txt", size: 5, etag: expect.any(String), replaced: false }],
      count: 1,
      bytes: 5,
      directories: [],
      overwritten: 0,
    });
    expect(await snapshot(t)).toEqual({ "a.txt": "hello", "b/c.txt": "hello" });
  });

  it("copies binary content byte for byte, keeping the content type", async () => {
    const t = await newTenant(undefined, UNGATED);
    const bytes = new Uint8Array(300_000).map((_, i) => (i * 31 + (i >> 8)) % 256);
    bytes.set([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff], 0);
    const put = await t.req(`/v1/workspaces/${t.ws}/files/img/logo.png`, { method: "PUT", headers: { "content-length": String(bytes.length), "content-type": "image/png" }, body: bytes });
    expect(put.status).toBe(201);
    const r = await t.call("copy", { from: "img/logo.png", to: "img/logo-copy.png" });
    expect(r.body.data.bytes).toBe(300_000);
    expect(sameBytes(await download(t, "img/logo-copy.png"), bytes)).toBe(true);
    expect(sameBytes(await download(t, "img/logo.png"), bytes)).toBe(true);
    const res = await t.req(`/v1/workspaces/${t.ws}/files/img/logo-copy.png`);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(res.headers.get("content-length")).toBe("300000");
    await res.arrayBuffer();
  });

  it("copies an empty file", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "empty", "");
    const r = await t.call("copy", { from: "empty", to: "empty2" });
    expect(r.status).toBe(200);
    expect(r.body.output).toBe("Copied empty to empty2 (0 bytes).");
    expect(await download(t, "empty2")).toEqual(new Uint8Array(0));
  });

  it("the copy can be edited without reading; the source and the copy are independent", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "a.txt", "same\n");
    expect((await t.call("read", { file_path: "a.txt" })).status).toBe(200);
    expect((await t.call("copy", { from: "a.txt", to: "b.txt" })).status).toBe(200);
    expect((await t.call("edit", { file_path: "b.txt", old_string: "same", new_string: "copy" })).status).toBe(200);
    // The source's own record is untouched: it can be edited too.
    expect((await t.call("edit", { file_path: "a.txt", old_string: "same", new_string: "source" })).status).toBe(200);
    expect(await snapshot(t)).toEqual({ "a.txt": "source\n", "b.txt": "copy\n" });
    expectError(await t.call("edit", { file_path: "b.txt", old_string: "copy", new_string: "x" }, "other-session"), "NOT_READ", 409);
  });

  it("a copy of a source that changed since the session read it must be read first", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "a.txt", "v1\n");
    expect((await t.call("read", { file_path: "a.txt" })).status).toBe(200);
    await upload(t, "a.txt", "v2\n");
    expect((await t.call("copy", { from: "a.txt", to: "b.txt" })).status).toBe(200);
    expectError(await t.call("edit", { file_path: "b.txt", old_string: "v2", new_string: "v3" }), "FILE_MODIFIED", 409);
    expect((await t.call("read", { file_path: "b.txt" })).status).toBe(200);
    expect((await t.call("edit", { file_path: "b.txt", old_string: "v2", new_string: "v3" })).status).toBe(200);
  });

  it("copies a whole directory into an existing directory and to a path ending in '/'", async () => {
    const t = await newTenant(undefined, UNGATED);
    const src = { "src/a.ts": "a", "src/.hidden": "h", "src/x/y/z.ts": "zz", "src/é名.txt": "u" };
    await uploadAll(t, { ...src, "backup/old.txt": "o" });
    const r = await t.call("copy", { from: "src", to: "backup" });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ from: "src", to: "backup/src", type: "directory", count: 4, bytes: 5, overwritten: 0 });
    expect(r.body.output).toMatch(/^Copied directory src\/ to backup\/src\/: 4 files, 5 bytes\.\n  src\/\.hidden -> backup\/src\/\.hidden/);
    const slash = await t.call("copy", { from: "src/x", to: "fresh/" });
    expect(slash.body.data.to).toBe("fresh/x");
    expect(await snapshot(t)).toEqual({
      ...src,
      "backup/old.txt": "o",
      "backup/src/a.ts": "a",
      "backup/src/.hidden": "h",
      "backup/src/x/y/z.ts": "zz",
      "backup/src/é名.txt": "u",
      "fresh/x/y/z.ts": "zz",
    });
  });

  it("NFD and NFC spellings name the same file", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "dir/é名.txt", "x");
    const r = await t.call("copy", { from: "dir/é名.txt".normalize("NFD"), to: "out/é名.txt".normalize("NFD") });
    expect(r.status).toBe(200);
    expect(r.body.data.to).toBe("out/é名.txt".normalize("NFC"));
    expectError(await t.call("copy", { from: "dir/é名.txt".normalize("NFD"), to: "dir/é名.txt" }), "INVALID_ARGUMENT", 400);
    expect(await snapshot(t)).toEqual({ "dir/é名.txt": "x", "out/é名.txt": "x" });
  });

  it("ALREADY_EXISTS without overwrite; overwrite replaces a file and merges a directory", async () => {
    const t = await newTenant(undefined, UNGATED);
    await uploadAll(t, { "a.txt": "new", "b.txt": "old", "src/a.ts": "new a", "src/n.ts": "n", "lib/src/a.ts": "old a", "lib/src/k.ts": "kept" });
    const file = await t.call("copy", { from: "a.txt", to: "b.txt" });
    expectError(file, "ALREADY_EXISTS", 409);
    expect(file.body.error.details).toEqual({ path: "b.txt", type: "file" });
    expectError(await t.call("copy", { from: "src", to: "lib" }), "ALREADY_EXISTS", 409);
    expect(await text(t, "b.txt")).toBe("old");

    const over = await t.call("copy", { from: "a.txt", to: "b.txt", overwrite: true });
    expect(over.body.data.overwritten).toBe(1);
    expect(over.body.output).toBe("Copied a.txt to b.txt (3 bytes). It replaced the file that was there.");
    const merge = await t.call("copy", { from: "src", to: "lib", overwrite: true });
    expect(merge.body.data).toMatchObject({ to: "lib/src", count: 2, overwritten: 1 });
    expect(await snapshot(t)).toEqual({ "a.txt": "new", "b.txt": "new", "src/a.ts": "new a", "src/n.ts": "n", "lib/src/a.ts": "new a", "lib/src/n.ts": "n", "lib/src/k.ts": "kept" });
  });

  it("IS_DIRECTORY and NOT_A_DIRECTORY: a file never replaces a directory, nor the reverse", async () => {
    const t = await newTenant(undefined, UNGATED);
    const files = { "a.txt": "a", "d/a.txt/inner": "i", "src/x.ts": "x", "f": "file", "g.txt": "g" };
    await uploadAll(t, files);
    expectError(await t.call("copy", { from: "a.txt", to: "d", overwrite: true }), "IS_DIRECTORY", 400);
    expectError(await t.call("copy", { from: "src", to: "f", overwrite: true }), "NOT_A_DIRECTORY", 400);
    expectError(await t.call("copy", { from: "a.txt", to: "g.txt/a.txt" }), "NOT_A_DIRECTORY", 400);
    expect(await snapshot(t)).toEqual(files);
  });

  it("INVALID_ARGUMENT for a copy onto itself or into itself", async () => {
    const t = await newTenant(undefined, UNGATED);
    const files = { "a.txt": "a", "src/sub/x.ts": "x" };
    await uploadAll(t, files);
    expectError(await t.call("copy", { from: "a.txt", to: "./a.txt" }), "INVALID_ARGUMENT", 400);
    const inside = await t.call("copy", { from: "src", to: "src/sub" });
    expectError(inside, "INVALID_ARGUMENT", 400);
    expect(inside.body.error.message).toBe("Cannot copy the directory src into itself (src/sub/src). Choose a target outside src/.");
    expectError(await t.call("copy", { from: "src", to: "src/copy" }), "INVALID_ARGUMENT", 400);
    expectError(await t.call("copy", { from: "a.txt", to: "/" }), "INVALID_ARGUMENT", 400);
    expect(await snapshot(t)).toEqual(files);
  });

  it("NOT_FOUND for a missing source", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "src/index.ts", "i");
    const r = await t.call("copy", { from: "src/index.tsx", to: "b.ts" });
    expectError(r, "NOT_FOUND", 404);
    expect(r.body.error.details.similar).toEqual(["src/index.ts"]);
  });

  it("INVALID_PATH for the root and for paths that leave the workspace", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "a.txt", "a");
    const root = await t.call("copy", { from: ".", to: "backup" });
    expectError(root, "INVALID_PATH", 400);
    expect(root.body.error.message).toBe("The workspace root cannot be copied; give a file or directory inside it, e.g. src.");
    for (const [from, to] of [["..", "x"], ["a.txt", "../a.txt"], ["a.txt", "../../other/f/a.txt"], ["a.txt", "x\u0000y"]]) {
      expectError(await t.call("copy", { from, to }), "INVALID_PATH", 400);
    }
    expect(await snapshot(t)).toEqual({ "a.txt": "a" });
  });

  // One seed of MAX + 1 files serves both bounds (1,000 objects written to local R2 take 7-25 s
  // here): over the cap nothing is copied; one file fewer (deleted straight from the bucket) is
  // exactly the cap, and all of it is copied.
  it(`FILE_TOO_LARGE for a directory of more than ${MAX_TRANSFER_FILES} files, nothing copied; exactly ${MAX_TRANSFER_FILES} are copied`, async () => {
    const t = await newTenant(undefined, UNGATED);
    await seedMany(t, "big", MAX_TRANSFER_FILES + 1);
    const r = await t.call("copy", { from: "big", to: "big2" });
    expectError(r, "FILE_TOO_LARGE", 413);
    expect(r.body.error.details).toEqual({ path: "big", max_files: MAX_TRANSFER_FILES });
    expectError(await t.call("ls", { path: "big2" }), "NOT_FOUND", 404);

    await env.FILES.delete(fileKey(t.tenant, t.ws, `big/f${String(MAX_TRANSFER_FILES).padStart(5, "0")}`));
    const ok = await t.call("copy", { from: "big", to: "copy" });
    expect(ok.status).toBe(200);
    expect(ok.body.data.count).toBe(MAX_TRANSFER_FILES);
    const ls = await t.call("ls", { path: "copy", limit: 5000 });
    expect(ls.body.data.count).toBe(MAX_TRANSFER_FILES);
  }, 240_000); // the copy of 1,000 files: ~145 s on the shared 2-core machine at load 9

  it("a copy that fails midway removes the new copies it made", async () => {
    let fail = true;
    const app = testApp({ storage: interceptPuts(testDeps().storage, async (key) => {
      if (fail && key.endsWith("/f/dst/d.txt")) throw new Error("storage failure");
    }) });
    const t = await newTenant(app, UNGATED);
    const files = { "src/a.txt": "a", "src/b.txt": "b", "src/c.txt": "c", "src/d.txt": "d", "src/e.txt": "e", "src/f.txt": "f" };
    await uploadAll(t, files);
    const r = await t.call("copy", { from: "src", to: "dst" });
    expectError(r, "INTERNAL", 500);
    expect(r.body.error.message).toMatch(/^Storage failed during the copy; retry\. Nothing was copied: the \d+ new cop(y|ies) made so far were removed\.$/);
    expect(await snapshot(t)).toEqual(files);
    // The retry starts clean.
    fail = false;
    expect((await t.call("copy", { from: "src", to: "dst" })).status).toBe(200);
  });

  it("another tenant's workspace is NOT_FOUND and nothing of theirs changes", async () => {
    const { a, b } = await twoTenants({ "secret.txt": "s" });
    const before = await snapshot(a, "secret");
    expectError(await callIn(b, "secret", "copy", { from: "secret.txt", to: "leak.txt" }), "NOT_FOUND", 404);
    expectError(await callIn(b, "secret", "copy", { from: "secret.txt", to: "secret.txt", overwrite: true }), "NOT_FOUND", 404);
    expectError(await b.call("copy", { from: "secret.txt", to: "leak.txt" }), "NOT_FOUND", 404);
    expect(await snapshot(a, "secret")).toEqual(before);
    expect(await snapshot(b)).toEqual({});
  });

  it("PERMISSION_DENIED for a read-only key", async () => {
    const t = await newTenant(undefined, { scopes: ["read"] });
    expectError(await t.call("copy", { from: "a", to: "b" }), "PERMISSION_DENIED", 403);
  });
});

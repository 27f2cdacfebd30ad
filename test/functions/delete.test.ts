import { describe, expect, it } from "vitest";
import { MAX_DELETE_FILES } from "../../functions/delete.js";
import { newTenant, upload, UNGATED } from "../helpers.js";
import { callIn, download, expectError, seedMany, snapshot, text, twoTenants, uploadAll } from "./fs-helpers.js";

describe("delete", () => {
  it("deletes a file, and only that file", async () => {
    const t = await newTenant(undefined, UNGATED);
    await uploadAll(t, { "src/a.ts": "aaa", "src/b.ts": "b", "src/a.ts.bak": "old" });
    const r = await t.call("delete", { path: "/src/a.ts" });
    expect(r.status).toBe(200);
    expect(r.body.ok).toBe(true);
    expect(r.body.output).toBe("Deleted src/a.ts (3 bytes).");
    expect(r.body.data).toEqual({ path: "src/a.ts", type: "file", deleted: ["src/a.ts"], count: 1, truncated: false });
    expect(await download(t, "src/a.ts")).toBeNull();
    expect(await snapshot(t)).toEqual({ "src/b.ts": "b", "src/a.ts.bak": "old" });
    expectError(await t.call("read", { file_path: "src/a.ts" }), "NOT_FOUND", 404);
  });

  it("deletes an empty file", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "empty.txt", "");
    const r = await t.call("delete", { path: "empty.txt" });
    expect(r.body.output).toBe("Deleted empty.txt (0 bytes).");
    await upload(t, "one.txt", "1");
    expect((await t.call("delete", { path: "one.txt" })).body.output).toBe("Deleted one.txt (1 byte).");
    expect(await snapshot(t)).toEqual({});
  });

  it("a directory without recursive is IS_DIRECTORY and nothing is deleted", async () => {
    const t = await newTenant(undefined, UNGATED);
    await uploadAll(t, { "dir/a.txt": "a", "dir/sub/b.txt": "b" });
    const r = await t.call("delete", { path: "dir" });
    expectError(r, "IS_DIRECTORY", 400);
    expect(r.body.error.message).toBe("dir is a directory (2 files). To delete it and everything in it, call delete again with recursive: true.");
    expect(r.body.error.details).toEqual({ path: "dir", files: 2 });
    expectError(await t.call("delete", { path: "dir", recursive: false }), "IS_DIRECTORY", 400);
    expect(await snapshot(t)).toEqual({ "dir/a.txt": "a", "dir/sub/b.txt": "b" });
  });

  it("recursive deletes the whole tree, hidden files included, and nothing beside it", async () => {
    const t = await newTenant(undefined, UNGATED);
    await uploadAll(t, {
      "dir/a.txt": "a",
      "dir/.env": "secret",
      "dir/x/y/z/deep.txt": "deep",
      "dir/é名.txt": "u",
      "dir-other/keep.txt": "keep",
      "dir.txt": "keep too",
      "dirx/keep.txt": "keep three",
    });
    const r = await t.call("delete", { path: "dir/", recursive: true });
    expect(r.status).toBe(200);
    expect(r.body.data.type).toBe("directory");
    expect([...r.body.data.deleted].sort()).toEqual(["dir/.env", "dir/a.txt", "dir/x/y/z/deep.txt", "dir/é名.txt"]);
    expect(r.body.data.count).toBe(4);
    expect(r.body.data.truncated).toBe(false);
    expect(r.body.output).toMatch(/^Deleted dir\/ and the 4 files in it:\n  dir\//);
    expect(await snapshot(t)).toEqual({ "dir-other/keep.txt": "keep", "dir.txt": "keep too", "dirx/keep.txt": "keep three" });
    expectError(await t.call("ls", { path: "dir" }), "NOT_FOUND", 404);
  });

  it("recursive on a file deletes just the file", async () => {
    const t = await newTenant(undefined, UNGATED);
    await uploadAll(t, { "a.txt": "a", "b.txt": "b" });
    const r = await t.call("delete", { path: "a.txt", recursive: true });
    expect(r.body.data.deleted).toEqual(["a.txt"]);
    expect(await snapshot(t)).toEqual({ "b.txt": "b" });
  });

  it("refuses the workspace root, however it is spelled", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "a.txt", "a");
    for (const path of ["/", ".", "./", "a/..", "//"]) {
      const r = await t.call("delete", { path, recursive: true });
      expectError(r, "INVALID_PATH", 400);
      expect(r.body.error.message).toContain("The workspace root cannot be deleted");
    }
    expectError(await t.call("delete", { path: "" }), "INVALID_ARGUMENT", 400);
    expect(await snapshot(t)).toEqual({ "a.txt": "a" });
  });

  it("NOT_FOUND for a missing path, with similar paths", async () => {
    const t = await newTenant(undefined, UNGATED);
    await uploadAll(t, { "src/index.ts": "i" });
    const r = await t.call("delete", { path: "src/indx.ts" });
    expectError(r, "NOT_FOUND", 404);
    expect(r.body.error.message).toBe("Path not found: src/indx.ts. Did you mean: src/index.ts?");
    expectError(await t.call("delete", { path: "nothing/here", recursive: true }), "NOT_FOUND", 404);
    // A second delete of the same file is NOT_FOUND too.
    expect((await t.call("delete", { path: "src/index.ts" })).status).toBe(200);
    expectError(await t.call("delete", { path: "src/index.ts" }), "NOT_FOUND", 404);
  });

  it("NFD and NFC spellings delete the same file", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "dir/é名.txt", "x");
    const nfd = "dir/é名.txt".normalize("NFD");
    const r = await t.call("delete", { path: nfd });
    expect(r.status).toBe(200);
    expect(r.body.data.deleted).toEqual(["dir/é名.txt"]);
    expect(await snapshot(t)).toEqual({});
  });

  it("INVALID_PATH for paths that leave the workspace; nothing is deleted", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "a.txt", "a");
    for (const path of ["..", "../a.txt", "x/../../a.txt", "../main/f/a.txt", "a\\..\\..\\b"]) {
      expectError(await t.call("delete", { path, recursive: true }), "INVALID_PATH", 400);
    }
    expect(await snapshot(t)).toEqual({ "a.txt": "a" });
  });

  it("another tenant's workspace is NOT_FOUND and nothing of theirs changes", async () => {
    const { a, b } = await twoTenants({ "secret.txt": "s", "dir/x.txt": "x" });
    const before = await snapshot(a, "secret");
    expect(before).toEqual({ "secret.txt": "s", "dir/x.txt": "x" });
    for (const args of [{ path: "secret.txt" }, { path: "dir", recursive: true }]) {
      const r = await callIn(b, "secret", "delete", args);
      expectError(r, "NOT_FOUND", 404);
      expect(r.body.error.message).toBe("Workspace not found: secret. List your workspaces with GET /v1/workspaces.");
    }
    // Same paths in B's own workspace: nothing there, and A's files stay.
    expectError(await b.call("delete", { path: "secret.txt" }), "NOT_FOUND", 404);
    expect(await snapshot(a, "secret")).toEqual(before);
    expect(await text(a, "secret.txt", "secret")).toBe("s");
  });

  it("PERMISSION_DENIED for a read-only key", async () => {
    const t = await newTenant(undefined, { scopes: ["read"] });
    expectError(await t.call("delete", { path: "a.txt" }), "PERMISSION_DENIED", 403);
  });

  it(`stops after ${MAX_DELETE_FILES} files with truncated, and the next call finishes`, async () => {
    const t = await newTenant(undefined, UNGATED);
    const n = MAX_DELETE_FILES + 3;
    await seedMany(t, "big", n);
    await upload(t, "big-sibling.txt", "stay");
    const first = await t.call("delete", { path: "big", recursive: true });
    expect(first.status).toBe(200);
    expect(first.body.data.count).toBe(MAX_DELETE_FILES);
    expect(first.body.data.deleted.length).toBe(MAX_DELETE_FILES);
    expect(first.body.data.truncated).toBe(true);
    expect(first.body.output).toContain(`[Stopped after ${MAX_DELETE_FILES} files and directories; more remain in big/. Call delete again with the same arguments to continue.]`);
    expect(first.body.output.split("\n").length).toBeLessThan(30);
    const second = await t.call("delete", { path: "big", recursive: true });
    expect(second.body.data.deleted).toEqual(["big/f10000", "big/f10001", "big/f10002"]);
    expect(second.body.data.truncated).toBe(false);
    expect(await snapshot(t)).toEqual({ "big-sibling.txt": "stay" });
  }, 300_000); // 10,003 files: 24-47 s alone, 198 s on a 2-core machine at load 10+
});

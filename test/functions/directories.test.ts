/**
 * Explicit directories (zero-byte markers at "<dir>/", lib/layout/paths.ts) through every tool that
 * sees directories: the raw files route makes and removes them; ls, glob, find, delete, move,
 * copy, read, write, edit and grep treat them as directories and never as files.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { r2Driver } from "../../lib/storage/drivers/r2.js";
import { newTenant, upload, type Tenant, UNGATED } from "../helpers.js";
import { expectError, uploadAll } from "./fs-helpers.js";

const mkdir = (t: Tenant, dir: string, body?: string) =>
  t.req(`/v1/workspaces/${t.ws}/files/${dir}/`, { method: "PUT", headers: { "content-length": String(body?.length ?? 0) }, ...(body ? { body } : {}) });
const rmdir = (t: Tenant, dir: string) => t.req(`/v1/workspaces/${t.ws}/files/${dir}/`, { method: "DELETE" });

/** Every key of the tenant's workspace files, relative to its files prefix. */
async function keys(t: Tenant): Promise<string[]> {
  const prefix = `t/${t.tenant}/w/${t.ws}/f/`;
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const r = await r2Driver(env.FILES).list({ prefix, ...(cursor ? { cursor } : {}) });
    out.push(...r.objects.map((o) => o.key.slice(prefix.length)));
    cursor = r.cursor;
  } while (cursor);
  return out.sort();
}

const lsNames = (d: any) => d.entries.map((e: any) => (e.type === "directory" ? `${e.path}/` : e.path));

async function ok(r: { status: number; body: any }) {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
}

describe("explicit directories: the raw files route", () => {
  it("PUT <dir>/ with an empty body makes a directory (a marker), idempotently; DELETE <dir>/ removes it when empty", async () => {
    const t = await newTenant(undefined, UNGATED);
    let res = await mkdir(t, "a/b");
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ path: "a/b", type: "directory", created: true });
    res = await mkdir(t, "a/b");
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).created).toBe(false);
    expect(await keys(t)).toEqual(["a/b/"]);

    // A non-empty directory is not removed; the error says what to do.
    await upload(t, "a/b/f.txt", "x");
    res = await rmdir(t, "a/b");
    expect(res.status).toBe(400);
    const err = ((await res.json()) as any).error;
    expect(err.code).toBe("IS_DIRECTORY");
    expect(err.message).toMatch(/not empty.*recursive: true/);
    // An implied directory (no marker) is not empty either.
    expect((await rmdir(t, "a")).status).toBe(400);

    expect((await t.req(`/v1/workspaces/${t.ws}/files/a/b/f.txt`, { method: "DELETE" })).status).toBe(200);
    res = await rmdir(t, "a/b");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ deleted: true, path: "a/b", type: "directory" });
    expect(await keys(t)).toEqual([]);
    expect((await rmdir(t, "a/b")).status).toBe(404);
  });

  it("refuses a directory where a file is, below a file, with a body; and a file where a directory is", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "f.txt", "x");
    let res = await mkdir(t, "f.txt");
    expect(res.status).toBe(409);
    expect(((await res.json()) as any).error.code).toBe("ALREADY_EXISTS");
    res = await mkdir(t, "f.txt/sub");
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.code).toBe("NOT_A_DIRECTORY");
    res = await mkdir(t, "d", "not empty");
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.message).toMatch(/empty body/);
    res = await rmdir(t, "f.txt");
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.code).toBe("NOT_A_DIRECTORY");

    expect((await mkdir(t, "d")).status).toBe(201);
    res = await t.req(`/v1/workspaces/${t.ws}/files/d`, { method: "PUT", headers: { "content-length": "1" }, body: "x" });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.code).toBe("IS_DIRECTORY");
    // GET and DELETE of the directory's name without "/" do not treat the marker as a file:
    // GET lists the (empty) directory, with or without "/", and DELETE refuses.
    for (const p of ["d", "d/"]) {
      const list = await t.req(`/v1/workspaces/${t.ws}/files/${p}`);
      expect(list.status, p).toBe(200);
      expect(await list.json(), p).toEqual({ path: "d", entries: [] });
    }
    const refused = await t.req(`/v1/workspaces/${t.ws}/files/d`, { method: "DELETE" });
    expect(refused.status).toBe(400);
    // It says how a directory is deleted, not how it is listed.
    expect(((await refused.json()) as any).error).toMatchObject({ code: "IS_DIRECTORY", message: 'd is a directory. Delete it with DELETE /v1/workspaces/{ws}/files/d/ (the trailing "/") once it is empty, or with the delete tool and recursive: true.' });
    expect(await keys(t)).toEqual(["d/", "f.txt"]);
  });
});

describe("explicit directories in the tools", () => {
  it("ls lists an empty directory, plain and recursive, with paging and hidden ones", async () => {
    const t = await newTenant(undefined, UNGATED);
    await uploadAll(t, { "src/a.ts": "a", "z.txt": "z" });
    for (const d of ["empty", "src/sub", "src/sub/deeper", "deep/er/est", ".hidden"]) expect((await mkdir(t, d)).status).toBe(201);

    expect(lsNames(await ok(await t.call("ls", {})))).toEqual(["deep/", "empty/", "src/", "z.txt"]);
    const empty = await t.call("ls", { path: "empty" });
    expect(empty.body.output).toBe("empty/ is empty.");
    expect(lsNames(await ok(empty))).toEqual([]);
    expect(lsNames(await ok(await t.call("ls", { path: "src" })))).toEqual(["src/sub/", "src/a.ts"]);
    expect(lsNames(await ok(await t.call("ls", { path: "src/sub" })))).toEqual(["src/sub/deeper/"]);

    const all = ["deep/", "deep/er/", "deep/er/est/", "empty/", "src/", "src/a.ts", "src/sub/", "src/sub/deeper/", "z.txt"];
    const rec = await ok(await t.call("ls", { recursive: true }));
    expect(lsNames(rec)).toEqual(all);
    expect(rec.hidden_skipped).toBe(1);
    expect(lsNames(await ok(await t.call("ls", { recursive: true, show_hidden: true })))).toEqual([".hidden/", ...all]);

    // Paged one or two entries at a time: every entry once, in the same order.
    for (const limit of [1, 2, 3]) {
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const d = await ok(await t.call("ls", { recursive: true, limit, ...(cursor ? { cursor } : {}) }));
        seen.push(...lsNames(d));
        cursor = d.cursor ?? undefined;
      } while (cursor);
      expect(seen, `limit ${limit}`).toEqual(all);
    }
  });

  it("glob with a trailing / matches directories (empty ones too); find type dir lists them; neither sees a marker as a file", async () => {
    const t = await newTenant(undefined, UNGATED);
    await uploadAll(t, { "src/a.ts": "a", "src/lib/b.ts": "b" });
    for (const d of ["src/empty", "tests/unit", ".git/refs/tags"]) expect((await mkdir(t, d)).status).toBe(201);

    const dirs = await ok(await t.call("glob", { pattern: "**/" }));
    expect(dirs.matches).toEqual(["src/", "src/empty/", "src/lib/", "tests/", "tests/unit/"].map((path) => ({ path, type: "directory" })));
    expect(dirs.skipped.counts).toEqual({ ignored_dir: 1 }); // .git
    const page = await t.call("glob", { pattern: "**/", limit: 2, offset: 1 });
    expect(await ok(page)).toMatchObject({ matches: [{ path: "src/empty/" }, { path: "src/lib/" }], count: 2, total_found: 5, truncated: true, next_offset: 3 });
    expect(page.body.output).toContain("Found 5 directories matching \"**/\" in the workspace (showing 2-3), by name:");
    expect(page.body.output).toContain("[More directories: call glob again with offset=3.]");
    expect((await ok(await t.call("glob", { pattern: "src/*/" }))).matches.map((m: any) => m.path)).toEqual(["src/empty/", "src/lib/"]);
    expect((await ok(await t.call("glob", { pattern: "*/", path: "tests" }))).matches.map((m: any) => m.path)).toEqual(["tests/unit/"]);
    expect((await ok(await t.call("glob", { pattern: "**/refs/*/", include_hidden: true, include_ignored: true }))).matches.map((m: any) => m.path)).toEqual([".git/refs/tags/"]);
    // Files only without the trailing "/": no marker shows up as a file.
    expect((await ok(await t.call("glob", { pattern: "**/*", sort: "name", include_hidden: true, include_ignored: true }))).matches.map((m: any) => m.path)).toEqual(["src/a.ts", "src/lib/b.ts"]);

    expect((await ok(await t.call("find", { type: "dir" }))).matches.map((m: any) => m.path)).toEqual(["src/", "src/empty/", "src/lib/", "tests/", "tests/unit/"]);
    expect((await ok(await t.call("find", { pattern: "empty" }))).matches).toEqual([{ path: "src/empty/", type: "dir" }]);
    expect((await ok(await t.call("find", { type: "file", include_hidden: true, include_ignored: true }))).matches.map((m: any) => m.path)).toEqual(["src/a.ts", "src/lib/b.ts"]);
    expect((await ok(await t.call("find", { path: "src/empty" }))).matches).toEqual([]);

    // grep searches files only: a marker is neither a match nor an error.
    const g = await ok(await t.call("grep", { pattern: ".*", output_mode: "files_with_matches", include_hidden: true }));
    expect(JSON.stringify(g)).not.toContain("empty");
  });

  it("read, write and edit on a directory give IS_DIRECTORY; a file below an empty directory keeps it", async () => {
    const t = await newTenant(undefined, UNGATED);
    expect((await mkdir(t, "d")).status).toBe(201);
    expectError(await t.call("read", { file_path: "d" }), "IS_DIRECTORY", 400);
    expectError(await t.call("write", { file_path: "d", content: "x" }), "IS_DIRECTORY", 400);
    expectError(await t.call("edit", { file_path: "d", old_string: "", new_string: "x" }), "IS_DIRECTORY", 400);
    expect(await keys(t)).toEqual(["d/"]);

    await ok(await t.call("write", { file_path: "d/f.txt", content: "x" }));
    await ok(await t.call("delete", { path: "d/f.txt" }));
    // The directory had a marker: it stays, empty. An implied one vanishes with its last file.
    expect(lsNames(await ok(await t.call("ls", {})))).toEqual(["d/"]);
    await ok(await t.call("write", { file_path: "implied/f.txt", content: "x" }));
    await ok(await t.call("delete", { path: "implied/f.txt" }));
    expect(lsNames(await ok(await t.call("ls", {})))).toEqual(["d/"]);
  });

  it("delete removes an empty directory without recursive; recursive removes markers below too", async () => {
    const t = await newTenant(undefined, UNGATED);
    expect((await mkdir(t, "e")).status).toBe(201);
    const d = await ok(await t.call("delete", { path: "e" }));
    expect(d).toEqual({ path: "e", type: "directory", deleted: ["e/"], count: 1, truncated: false });
    expect(await keys(t)).toEqual([]);

    await uploadAll(t, { "p/f.txt": "x" });
    for (const dir of ["p", "p/q/r", "p/s"]) expect((await mkdir(t, dir)).status).toBe(201);
    const refused = await t.call("delete", { path: "p" });
    expectError(refused, "IS_DIRECTORY", 400);
    expect(refused.body.error.message).toMatch(/is a directory \(1 file, 2 directories\).*recursive: true/);
    expect(await ok(await t.call("delete", { path: "p/s/" }))).toMatchObject({ deleted: ["p/s/"] });
    expect(await keys(t)).toEqual(["p/", "p/f.txt", "p/q/r/"]);
    const all = await ok(await t.call("delete", { path: "p", recursive: true }));
    expect(all.deleted.sort()).toEqual(["p/", "p/f.txt", "p/q/r/"]);
    expect(await keys(t)).toEqual([]);
    expectError(await t.call("ls", { path: "p" }), "NOT_FOUND", 404);
  });

  it("move and copy carry empty subdirectories; a move removes the source's markers", async () => {
    const t = await newTenant(undefined, UNGATED);
    await uploadAll(t, { "src/a.ts": "a" });
    for (const dir of ["src/empty", "src/x/y"]) expect((await mkdir(t, dir)).status).toBe(201);

    const c = await ok(await t.call("copy", { from: "src", to: "dst" }));
    expect(c.directories).toEqual(["dst/empty", "dst/x/y"]);
    expect(c.files.map((f: any) => f.to)).toEqual(["dst/a.ts"]);
    expect(await keys(t)).toEqual(["dst/a.ts", "dst/empty/", "dst/x/y/", "src/a.ts", "src/empty/", "src/x/y/"]);

    const m = await ok(await t.call("move", { from: "src", to: "moved" }));
    expect(m.directories).toEqual(["moved/empty", "moved/x/y"]);
    expect(await keys(t)).toEqual(["dst/a.ts", "dst/empty/", "dst/x/y/", "moved/a.ts", "moved/empty/", "moved/x/y/"]);
    expect(lsNames(await ok(await t.call("ls", { path: "moved", recursive: true })))).toEqual(["moved/a.ts", "moved/empty/", "moved/x/", "moved/x/y/"]);

    // An empty directory on its own moves and copies too.
    await ok(await t.call("move", { from: "moved/empty", to: "solo" }));
    await ok(await t.call("copy", { from: "solo", to: "solo2" }));
    expect(await keys(t)).toEqual(["dst/a.ts", "dst/empty/", "dst/x/y/", "moved/a.ts", "moved/x/y/", "solo/", "solo2/"]);

    // Merging into a directory: a file may not land on an empty directory there, nor a directory on a file.
    expect((await mkdir(t, "m1/dst/a.ts")).status).toBe(201);
    expectError(await t.call("copy", { from: "dst", to: "m1", overwrite: true }), "IS_DIRECTORY", 400);
    await upload(t, "m2/dst/empty", "a file");
    expectError(await t.call("copy", { from: "dst", to: "m2", overwrite: true }), "NOT_A_DIRECTORY", 400);
    expect(await keys(t)).toEqual(["dst/a.ts", "dst/empty/", "dst/x/y/", "m1/dst/a.ts/", "m2/dst/empty", "moved/a.ts", "moved/x/y/", "solo/", "solo2/"]);
  });
});

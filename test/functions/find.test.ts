import { describe, expect, it } from "vitest";
import { newTenant, upload } from "../helpers.js";
import { err, ok, rawDelete, uploadSpaced } from "../lib/search/helpers.js";

const shown = (d: any) => d.matches.map((m: any) => m.path);

describe("find", { timeout: 30_000 }, () => {
  it("lists files and directories by path; an empty workspace has none", async () => {
    const t = await newTenant();
    const empty = await t.call("find", {});
    expect(ok(empty)).toEqual({ matches: [], count: 0, total_found: 0, truncated: false, next_offset: null, skipped: { total: 0, counts: {}, examples: {} } });
    expect(empty.body.output).toBe("No entries in the workspace.");

    await uploadSpaced(t, { "src/auth/login.ts": "x", "src/auth/Logout.ts": "x", "src/app.ts": "x", "README.md": "x", "docs/auth.md": "x" });
    const all = ok(await t.call("find", {}));
    expect(shown(all)).toEqual(["README.md", "docs/", "docs/auth.md", "src/", "src/app.ts", "src/auth/", "src/auth/Logout.ts", "src/auth/login.ts"]);
    expect(all.matches[1]).toEqual({ path: "docs/", type: "dir" });
    expect(all.matches[0]).toEqual({ path: "README.md", type: "file" });
  });

  it("matches a substring of the name (any case) or a glob; filters by type; pages", async () => {
    const t = await newTenant();
    await uploadSpaced(t, { "src/auth/login.ts": "x", "src/auth/Logout.ts": "x", "src/app.ts": "x", "docs/auth.md": "x", "test/login.test.ts": "x" });
    expect(shown(ok(await t.call("find", { pattern: "auth" })))).toEqual(["docs/auth.md", "src/auth/"]);
    expect(shown(ok(await t.call("find", { pattern: "LOG" })))).toEqual(["src/auth/Logout.ts", "src/auth/login.ts", "test/login.test.ts"]);
    expect(shown(ok(await t.call("find", { pattern: "*.test.ts" })))).toEqual(["test/login.test.ts"]);
    // One of a kind is counted in the singular.
    expect((await t.call("find", { pattern: "*.test.ts" })).body.output).toMatch(/^Found 1 entry matching "\*\.test\.ts" in the workspace:\n/);
    expect((await t.call("find", { pattern: "auth", type: "dir" })).body.output).toMatch(/^Found 1 directory matching/);
    expect((await t.call("find", { pattern: "auth", type: "file" })).body.output).toMatch(/^Found 1 file matching/);
    expect((await t.call("find", { pattern: "LOG" })).body.output).toMatch(/^Found 3 entries matching/);
    expect(shown(ok(await t.call("find", { pattern: "[Ll]og*" })))).toEqual(["src/auth/Logout.ts", "src/auth/login.ts", "test/login.test.ts"]);
    expect(shown(ok(await t.call("find", { pattern: "src/*/login.ts" })))).toEqual(["src/auth/login.ts"]);
    expect(shown(ok(await t.call("find", { pattern: "auth", type: "dir" })))).toEqual(["src/auth/"]);
    expect(shown(ok(await t.call("find", { pattern: "auth", type: "file" })))).toEqual(["docs/auth.md"]);
    expect(shown(ok(await t.call("find", { type: "dir" })))).toEqual(["docs/", "src/", "src/auth/", "test/"]);
    expect(shown(ok(await t.call("find", { path: "src", type: "dir" })))).toEqual(["src/auth/"]);
    expect(shown(ok(await t.call("find", { path: "src", pattern: "*.ts" })))).toEqual(["src/app.ts", "src/auth/Logout.ts", "src/auth/login.ts"]);

    const p = await t.call("find", { max_results: 3 });
    expect(ok(p)).toMatchObject({ count: 3, total_found: 9, truncated: true, next_offset: 3 });
    expect(p.body.output).toContain("call find again with offset=3");
    const p2 = ok(await t.call("find", { max_results: 3, offset: 6 }));
    expect(p2).toMatchObject({ count: 3, truncated: false, next_offset: null });
    expect(shown(p2)).toEqual(["src/auth/login.ts", "test/", "test/login.test.ts"]);
  });

  it("skips hidden and ignored entries with a report; includes them on request", async () => {
    const t = await newTenant();
    await uploadSpaced(t, { ".gitignore": "build/\n", "build/out.js": "x", "src/a.ts": "x", ".env": "x", "node_modules/p/index.js": "x", ".config/x.json": "x" });
    const r = await t.call("find", {});
    const d = ok(r);
    expect(shown(d)).toEqual(["src/", "src/a.ts"]);
    expect(d.skipped.counts).toEqual({ hidden: 3, ignored_dir: 1, gitignore: 1 });
    expect(r.body.output).toContain("[Skipped 5 entries");
    expect(shown(ok(await t.call("find", { pattern: "env" })))).toEqual([]);
    expect(shown(ok(await t.call("find", { pattern: ".env" })))).toEqual([".env"]);
    expect(shown(ok(await t.call("find", { include_hidden: true, type: "dir" })))).toEqual([".config/", "src/"]);
    expect(shown(ok(await t.call("find", { include_ignored: true, type: "dir" })))).toEqual(["build/", "node_modules/", "node_modules/p/", "src/"]);
  });

  it("refuses bad paths and sees changes at once", async () => {
    const t = await newTenant();
    await upload(t, "a.txt", "x");
    err(await t.call("find", { path: "missing" }), 404, "NOT_FOUND");
    err(await t.call("find", { path: "a.txt" }), 400, "NOT_A_DIRECTORY");
    err(await t.call("find", { type: "link" }), 400, "INVALID_ARGUMENT");
    await upload(t, "new/b.txt", "x");
    expect(shown(ok(await t.call("find", { pattern: "b.txt" })))).toEqual(["new/b.txt"]);
    await rawDelete(t, "new/b.txt");
    expect(shown(ok(await t.call("find", { pattern: "b" })))).toEqual([]);
  });
});

import { describe, expect, it } from "vitest";
import { newTenant, upload } from "../helpers.js";
import { err, ok, rawDelete, uploadSpaced } from "../lib/search/helpers.js";

const paths = (d: any) => d.matches.map((m: any) => m.path);

describe("glob", { timeout: 30_000 }, () => {
  it("says an empty workspace has no matches", async () => {
    const t = await newTenant();
    const r = await t.call("glob", { pattern: "**/*" });
    const d = ok(r);
    expect(d).toEqual({ matches: [], count: 0, total_found: 0, truncated: false, next_offset: null, skipped: { total: 0, counts: {}, examples: {} } });
    expect(r.body.output).toBe('No files match "**/*" in the workspace.');
  });

  it("matches *, **, ?, classes and braces relative to path; newest first by default", async () => {
    const t = await newTenant();
    await uploadSpaced(t, { "a.ts": "1", "b.tsx": "22", "src/c.ts": "333", "src/deep/d.ts": "4444", "src/e.js": "5", "x.md": "6", "y.md": "7", "ab.md": "8" });
    expect(paths(ok(await t.call("glob", { pattern: "*.ts" })))).toEqual(["a.ts"]);
    expect(paths(ok(await t.call("glob", { pattern: "**/*.ts" })))).toEqual(["src/deep/d.ts", "src/c.ts", "a.ts"]);
    expect(paths(ok(await t.call("glob", { pattern: "**/*.{ts,tsx}" })))).toEqual(["src/deep/d.ts", "src/c.ts", "b.tsx", "a.ts"]);
    expect(paths(ok(await t.call("glob", { pattern: "?.md" })))).toEqual(["y.md", "x.md"]);
    expect(paths(ok(await t.call("glob", { pattern: "[a-x].md" })))).toEqual(["x.md"]);
    expect(paths(ok(await t.call("glob", { pattern: "src/*" })))).toEqual(["src/e.js", "src/c.ts"]);
    // path: patterns are relative to it; a leading "/" or "./", or the path repeated, is tolerated.
    for (const pattern of ["**/*.ts", "/**/*.ts", "./**/*.ts", "src/**/*.ts"]) {
      expect(paths(ok(await t.call("glob", { pattern, path: "src" }))), pattern).toEqual(["src/deep/d.ts", "src/c.ts"]);
    }
    expect(paths(ok(await t.call("glob", { pattern: "*", path: "/src/deep/" })))).toEqual(["src/deep/d.ts"]);
    const d = ok(await t.call("glob", { pattern: "src/deep/*.ts" }));
    expect(d.matches[0]).toEqual({ path: "src/deep/d.ts", size: 4, modified: expect.any(String) });
    expect(new Date(d.matches[0].modified).toISOString()).toBe(d.matches[0].modified);
  });

  it("sorts by name or size, and pages with limit and offset", async () => {
    const t = await newTenant();
    await uploadSpaced(t, { "c.txt": "c", "a.txt": "aaa", "b.txt": "bb", "d.txt": "dddd", "e.txt": "" });
    expect(paths(ok(await t.call("glob", { pattern: "*.txt", sort: "name" })))).toEqual(["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"]);
    expect(paths(ok(await t.call("glob", { pattern: "*.txt", sort: "size" })))).toEqual(["d.txt", "a.txt", "b.txt", "c.txt", "e.txt"]);
    expect(paths(ok(await t.call("glob", { pattern: "*.txt", sort: "modified" })))).toEqual(["e.txt", "d.txt", "b.txt", "a.txt", "c.txt"]);

    const p1 = await t.call("glob", { pattern: "*.txt", sort: "name", limit: 2 });
    expect(ok(p1)).toMatchObject({ count: 2, total_found: 5, truncated: true, next_offset: 2 });
    expect(paths(p1.body.data)).toEqual(["a.txt", "b.txt"]);
    expect(p1.body.output).toContain("(showing 1-2)");
    expect(p1.body.output).toContain("call glob again with offset=2");
    const p3 = ok(await t.call("glob", { pattern: "*.txt", sort: "name", limit: 2, offset: 4 }));
    expect(p3).toMatchObject({ count: 1, total_found: 5, truncated: false, next_offset: null });
    expect(paths(p3)).toEqual(["e.txt"]);
    const past = await t.call("glob", { pattern: "*.txt", offset: 10 });
    expect(ok(past)).toMatchObject({ count: 0, total_found: 5 });
    expect(past.body.output).toContain("offset 10 is past the end");
  });

  it("skips hidden entries and ignored directories, and says how many and why", async () => {
    const t = await newTenant();
    await uploadSpaced(t, {
      "src/a.ts": "a",
      ".env": "SECRET=1",
      ".github/workflows/ci.yml": "on: push",
      "src/.hidden.ts": "h",
      "node_modules/pkg/index.ts": "n",
      "node_modules/pkg/other.ts": "n",
      "vendor/lib.ts": "v",
      "py/__pycache__/m.ts": "p",
      ".git/HEAD": "ref",
    });
    const r = await t.call("glob", { pattern: "**/*.ts" });
    const d = ok(r);
    expect(paths(d)).toEqual(["src/a.ts"]);
    expect(d.skipped).toEqual({
      total: 7,
      counts: { hidden: 3, ignored_dir: 4 },
      examples: { hidden: [".env", ".github/", "src/.hidden.ts"], ignored_dir: [".git/", "node_modules/", "py/__pycache__/", "vendor/"] },
    });
    expect(r.body.output).toContain("[Skipped 7 entries (not searched): ");
    expect(r.body.output).toContain("include_hidden: true");
    expect(r.body.output).toContain("include_ignored: true");

    expect(paths(ok(await t.call("glob", { pattern: "**/*.ts", include_hidden: true }))).sort()).toEqual(["src/.hidden.ts", "src/a.ts"]);
    expect(paths(ok(await t.call("glob", { pattern: "**/*.ts", include_ignored: true }))).sort()).toEqual(["node_modules/pkg/index.ts", "node_modules/pkg/other.ts", "py/__pycache__/m.ts", "src/a.ts", "vendor/lib.ts"]);
    // A pattern that names a hidden entry includes hidden entries.
    expect(paths(ok(await t.call("glob", { pattern: ".env" })))).toEqual([".env"]);
    expect(paths(ok(await t.call("glob", { pattern: ".github/**" })))).toEqual([".github/workflows/ci.yml"]);
    // An explicit path is searched even when it would be skipped.
    expect(paths(ok(await t.call("glob", { pattern: "**/*.ts", path: "node_modules/pkg" }))).sort()).toEqual(["node_modules/pkg/index.ts", "node_modules/pkg/other.ts"]);

    // No match, but something was skipped: the output says so.
    const none = await t.call("glob", { pattern: "**/lib.ts" });
    expect(ok(none).matches).toEqual([]);
    expect(none.body.output).toContain('No files match "**/lib.ts"');
    expect(none.body.output).toContain("vendor/");
  });

  it("honours .gitignore files, root and nested, with negation", async () => {
    const t = await newTenant();
    await uploadSpaced(t, {
      ".gitignore": "dist/\n*.log\n!keep.log\n",
      "dist/bundle.js": "b",
      "src/app.js": "a",
      "src/debug.log": "l",
      "src/keep.log": "k",
      "pkg/.gitignore": "generated/\n*.tmp\n",
      "pkg/generated/x.js": "g",
      "pkg/y.tmp": "t",
      "pkg/z.js": "z",
      "other/y.tmp": "t",
    });
    const r = await t.call("glob", { pattern: "**/*", sort: "name" });
    const d = ok(r);
    expect(paths(d)).toEqual(["other/y.tmp", "pkg/z.js", "src/app.js", "src/keep.log"]);
    expect(d.skipped.counts).toEqual({ hidden: 2, gitignore: 4 });
    expect(d.skipped.examples.gitignore.sort()).toEqual(["dist/", "pkg/generated/", "pkg/y.tmp", "src/debug.log"]);
    expect(r.body.output).toContain("matched by .gitignore");
    expect(paths(ok(await t.call("glob", { pattern: "**/*.js", include_ignored: true, sort: "name" })))).toEqual(["dist/bundle.js", "pkg/generated/x.js", "pkg/z.js", "src/app.js"]);
    // Rules of .gitignore files above the search path apply too.
    expect(paths(ok(await t.call("glob", { pattern: "*", path: "src", sort: "name" })))).toEqual(["src/app.js", "src/keep.log"]);
  });

  it("hints at ** when a bare pattern only matches deeper", async () => {
    const t = await newTenant();
    await upload(t, "src/a.ts", "a");
    const r = await t.call("glob", { pattern: "*.ts" });
    expect(ok(r).matches).toEqual([]);
    expect(r.body.output).toBe('No files match "*.ts" in the workspace. 1 file matches **/*.ts at any depth: "*.ts" matches only directly in the workspace.');
  });

  it("refuses a missing path or a file as path", async () => {
    const t = await newTenant();
    await upload(t, "src/a.ts", "a");
    err(await t.call("glob", { pattern: "*", path: "nope" }), 404, "NOT_FOUND");
    err(await t.call("glob", { pattern: "*", path: "src/a.ts" }), 400, "NOT_A_DIRECTORY");
    err(await t.call("glob", { pattern: "*", path: "../x" }), 400, "INVALID_PATH");
    err(await t.call("glob", { pattern: "" }), 400, "INVALID_ARGUMENT");
    err(await t.call("glob", { pattern: "*", sort: "age" }), 400, "INVALID_ARGUMENT");
    err(await t.call("glob", { pattern: "*", limit: 0 }), 400, "INVALID_ARGUMENT");
  });

  it("finds unicode names and sees files as soon as they are written or deleted", async () => {
    const t = await newTenant();
    await upload(t, "docs/Café résumé.md", "x");
    expect(paths(ok(await t.call("glob", { pattern: "**/Caf*.md" })))).toEqual(["docs/Café résumé.md"]);
    // NFD input names the same (NFC) file.
    expect(paths(ok(await t.call("glob", { pattern: "docs/*".normalize("NFD") })))).toEqual(["docs/Café résumé.md"]);
    await upload(t, "docs/new.md", "n");
    expect(paths(ok(await t.call("glob", { pattern: "docs/*.md", sort: "name" })))).toEqual(["docs/Café résumé.md", "docs/new.md"]);
    await rawDelete(t, "docs/new.md");
    expect(paths(ok(await t.call("glob", { pattern: "docs/*.md" })))).toEqual(["docs/Café résumé.md"]);
  });
});

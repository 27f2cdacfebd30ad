import { describe, expect, it } from "vitest";
import { GitIgnores, namesHidden, SkipReport, staticSkip } from "../../../lib/search/ignore.js";
import { compareKeys } from "../../../lib/layout/key-order.js";

const none = { includeHidden: false, includeIgnored: false };

describe("skip rules", () => {
  it("skips hidden entries and ignored directories below the root, naming the top-most entry", () => {
    expect(staticSkip("src/a.ts", "", none)).toBeNull();
    expect(staticSkip(".env", "", none)).toEqual({ reason: "hidden", entry: ".env", isDir: false });
    expect(staticSkip("a/.github/workflows/ci.yml", "", none)).toEqual({ reason: "hidden", entry: "a/.github/", isDir: true });
    expect(staticSkip("node_modules/x/.bin/y", "", none)).toEqual({ reason: "ignored_dir", entry: "node_modules/", isDir: true });
    expect(staticSkip("a/b/__pycache__/m.pyc", "", none)).toEqual({ reason: "ignored_dir", entry: "a/b/__pycache__/", isDir: true });
    expect(staticSkip(".git/HEAD", "", none)).toEqual({ reason: "ignored_dir", entry: ".git/", isDir: true });
    // A file named like an ignored directory is not skipped.
    expect(staticSkip("docs/vendor", "", none)).toBeNull();
    // The root itself is never skipped.
    expect(staticSkip("node_modules/pkg/index.js", "node_modules/pkg", none)).toBeNull();
    expect(staticSkip(".github/ci.yml", ".github", none)).toBeNull();
    expect(staticSkip("a/.env", "", { includeHidden: true, includeIgnored: false })).toBeNull();
    expect(staticSkip("vendor/x.go", "", { includeHidden: false, includeIgnored: true })).toBeNull();
    expect(staticSkip(".git/HEAD", "", { includeHidden: false, includeIgnored: true })).toEqual({ reason: "hidden", entry: ".git/", isDir: true });
  });

  it("knows which patterns name hidden entries", () => {
    expect(namesHidden(".env")).toBe(true);
    expect(namesHidden("**/.github/**")).toBe(true);
    expect(namesHidden("**/*.ts")).toBe(false);
    expect(namesHidden("./src/*.ts")).toBe(false);
  });

  it("counts skipped entries once, with examples, and describes them", () => {
    const r = new SkipReport();
    r.add("ignored_dir", "node_modules/");
    r.add("ignored_dir", "node_modules/");
    r.add("hidden", ".env");
    expect(r.toJSON()).toEqual({ total: 2, counts: { ignored_dir: 1, hidden: 1 }, examples: { ignored_dir: ["node_modules/"], hidden: [".env"] } });
    expect(r.describe()).toContain("include_hidden: true");
    expect(r.describe()).toContain("include_ignored: true");
    expect(new SkipReport().describe()).toBe("");
  });

  it("says which skipped entries a flag brings back when others are skipped too (a binary file, a symlink: no flag includes them)", () => {
    const r = new SkipReport();
    r.add("ignored_dir", "node_modules/");
    r.add("gitignore", "dist/");
    expect(r.describe()).toMatch(/Pass include_ignored: true to include them\.\]$/);
    r.add("binary", "src/bin.dat");
    expect(r.describe()).toMatch(/Pass include_ignored: true to include the ignored ones; no flag includes the others\.\]$/);
    r.add("hidden", ".env");
    expect(r.describe()).toMatch(/Pass include_hidden: true and\/or include_ignored: true to include the hidden and ignored ones; no flag includes the others\.\]$/);
    const one = new SkipReport();
    one.add("hidden", ".git/");
    one.add("symlink", "node_modules/mathx");
    expect(one.describe()).toMatch(/Pass include_hidden: true to include the hidden one; no flag includes the others\.\]$/);
    // a caller without include_hidden offers no flag for hidden entries
    expect(one.describe({ hiddenFlag: false })).not.toContain("Pass");
  });

  it("says one of a counted noun in the singular (1 binary file, 1 symlink), more in the plural", () => {
    const r = new SkipReport();
    r.add("binary", "a.png");
    r.add("symlink", "link");
    expect(r.describe()).toContain("1 binary file: a.png");
    expect(r.describe()).toContain("1 symlink, not followed (");
    r.add("binary", "b.png");
    r.add("symlink", "link2");
    expect(r.describe()).toContain("2 binary files: a.png, b.png");
    expect(r.describe()).toContain("2 symlinks, not followed (");
  });
});

describe("GitIgnores", () => {
  it("applies root and nested files with git's precedence", () => {
    const g = new GitIgnores();
    g.add("", "dist/\n*.log\n!keep.log\nbuild\n");
    g.add("pkg", "*.tmp\n!important.log\ngenerated/\n");
    expect(g.ignoredEntry("dist/a.js", "")).toBe("dist/");
    expect(g.ignoredEntry("src/dist/a.js", "")).toBe("src/dist/");
    expect(g.ignoredEntry("a.log", "")).toBe("a.log");
    expect(g.ignoredEntry("x/keep.log", "")).toBeNull();
    expect(g.ignoredEntry("build", "")).toBe("build");
    expect(g.ignoredEntry("pkg/x.tmp", "")).toBe("pkg/x.tmp");
    expect(g.ignoredEntry("x.tmp", "")).toBeNull();
    expect(g.ignoredEntry("pkg/important.log", "")).toBeNull();
    expect(g.ignoredEntry("pkg/other.log", "")).toBe("pkg/other.log");
    expect(g.ignoredEntry("pkg/generated/a.ts", "")).toBe("pkg/generated/");
    expect(g.ignoredEntry("src/index.ts", "")).toBeNull();
  });

  it("never re-includes below an ignored directory; the search root is exempt", () => {
    const g = new GitIgnores();
    g.add("", "out/\n");
    g.add("out", "!*.ts\n");
    expect(g.ignoredEntry("out/a.ts", "")).toBe("out/");
    expect(g.ignoredEntry("out/a.ts", "out")).toBeNull();
  });
});

describe("compareKeys", () => {
  it("orders like UTF-8 bytes (code points), not UTF-16 units", () => {
    const keys = ["b", "a", "\u{1F600}", "\uFFFD", "é", "a/b", "a0"];
    expect([...keys].sort(compareKeys)).toEqual(["a", "a/b", "a0", "b", "é", "\uFFFD", "\u{1F600}"]);
    const bytes = (s: string) => Array.from(new TextEncoder().encode(s));
    const byBytes = [...keys].sort((x, y) => {
      const a = bytes(x);
      const b = bytes(y);
      for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
      return a.length - b.length;
    });
    expect([...keys].sort(compareKeys)).toEqual(byBytes);
  });
});

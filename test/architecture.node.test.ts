/**
 * The shape of the tree (issue #27), checked on every `npm test`:
 * - the layer rules of `.dependency-cruiser.cjs` hold over lib, functions and infra (0 violations),
 *   and each rule is seen failing on a violation planted in a fixture tree in a temp dir;
 * - lib/ has no loose files; no hand-written source file is over 300 lines; no test times code
 *   but through test/support/scaling.ts;
 * - docs/architecture.md is true: its layer table is the config's layers, its tree is the real tree,
 *   and every path it names exists.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, posix } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDirs } from "./support/temp-dirs.js";
import { cruiseViolations, describeViolations, LAYERS, REPO_ROOT, RULES } from "./support/dependency-rules.js";

const MAX_LINES = 300;
const PAGE = "docs/architecture.md";
const tempDir = tempDirs("architecture");

const read = (path: string) => readFileSync(join(REPO_ROOT, path), "utf8");
const exists = (path: string) => statSync(join(REPO_ROOT, path), { throwIfNoEntry: false }) !== undefined;
/** The folders directly under `dir` (a repository path ending in `/`), as `dir/name/`. */
const foldersIn = (dir: string) =>
  readdirSync(join(REPO_ROOT, dir), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => `${dir}${e.name}/`)
    .sort();

describe("the layer rules (.dependency-cruiser.cjs)", () => {
  it("hold over lib, functions and infra: no cycles, no upward imports", { timeout: 180_000 }, async () => {
    const violations = await cruiseViolations(REPO_ROOT, ["lib", "functions", "infra"]);
    const report = `${violations.length} violations (npm run lint:arch prints them too):\n\n${describeViolations(violations)}`;
    expect(violations.length, report).toBe(0);
  });

  /** A fixture tree: repository paths → contents. Each `import` is of a sibling fixture file. */
  type Tree = Record<string, string>;
  const importing = (from: string, to: string, kind = "import") => {
    let spec = posix.relative(posix.dirname(from), to).replace(/\.ts$/, ".js");
    if (!spec.startsWith(".")) spec = `./${spec}`;
    return `${kind} { x as y } from "${spec}";\nexport const x = 1;\nexport type Y = typeof y;\n`;
  };
  /** A tree where `from` imports `to` (and `to` imports nothing). */
  const edge = (from: string, to: string): Tree => ({ [from]: importing(from, to), [to]: "export const x = 1;\n" });

  /** The first real folder of a layer (lib's folders, then functions/ and infra/container/): fixtures use real names. */
  const candidates = [...foldersIn("lib/"), "functions/", "infra/container/"];
  const folderOf = (layer: (typeof LAYERS)[number]) => {
    const folder = candidates.find((f) => new RegExp(layer.path).test(`${f}planted.ts`));
    if (!folder) throw new Error(`layer ${layer.name} (${layer.path}) matches no folder of the tree`);
    return folder;
  };

  const plants: Record<string, Tree> = {
    "no-circular": {
      "lib/workspace/a.ts": importing("lib/workspace/a.ts", "lib/workspace/b.ts", "import type"),
      "lib/workspace/b.ts": importing("lib/workspace/b.ts", "lib/workspace/a.ts", "import type"),
    },
    "runner-is-not-the-api": edge("infra/container/planted.ts", "lib/api/above.ts"),
    "client-stands-alone": edge("lib/client/planted.ts", "lib/workspace/above.ts"),
    "lib-is-not-an-entry": edge("lib/runtime/planted.ts", "functions/above.ts"),
  };
  LAYERS.forEach((low, i) => {
    if (i > 0) plants[`no-upward-from-${low.name}`] = edge(`${folderOf(low)}planted.ts`, `${folderOf(LAYERS[i - 1]!)}above.ts`);
  });

  async function cruiseFixture(tree: Tree) {
    const base = tempDir("fixture");
    for (const [path, text] of Object.entries(tree)) {
      mkdirSync(dirname(join(base, path)), { recursive: true });
      writeFileSync(join(base, path), text);
    }
    const roots = [...new Set(Object.keys(tree).map((p) => p.split("/")[0]!))];
    return cruiseViolations(base, roots);
  }

  it("each have a planted violation below", () => {
    expect(Object.keys(plants).sort()).toEqual(RULES.map((r) => r.name).sort());
  });

  it.each(RULES.map((r) => r.name))("%s fires, alone, on its planted violation", async (rule) => {
    const violations = await cruiseFixture(plants[rule]!);
    expect(violations.length, describeViolations(violations)).toBeGreaterThan(0);
    expect(new Set(violations.map((v) => v.rule))).toEqual(new Set([rule]));
  });

  it("pass a tree that walks down every layer, type imports included", async () => {
    const tree: Tree = {};
    LAYERS.forEach((layer, i) => {
      const from = `${folderOf(layer)}step.ts`;
      const below = LAYERS[i + 1];
      tree[from] = below ? importing(from, `${folderOf(below)}step.ts`, i % 2 ? "import type" : "import") : "export const x = 1;\n";
    });
    const violations = await cruiseFixture(tree);
    expect(violations, describeViolations(violations)).toEqual([]);
  });
});

describe("the tree", () => {
  it("lib/ has folders only (an index.ts at most): a file belongs to its layer's folder", () => {
    const loose = readdirSync(join(REPO_ROOT, "lib"), { withFileTypes: true })
      .filter((e) => !e.isDirectory() && e.name !== "index.ts")
      .map((e) => `lib/${e.name}`);
    expect(loose).toEqual([]);
  });

  it(`no hand-written .ts file in lib, functions, infra, scripts or bench is over ${MAX_LINES} lines`, () => {
    // What git tracks or would track: not what .gitignore leaves out (bench/.data's copied packages, build output).
    const listed = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "lib", "functions", "infra", "scripts", "bench"], { cwd: REPO_ROOT, encoding: "utf8" })
      .split("\0")
      .filter((p) => p.endsWith(".ts") && !p.endsWith(".generated.ts") && existsSync(join(REPO_ROOT, p)));
    const sources = (dir: string): string[] => listed.filter((p) => p.startsWith(`${dir}/`));
    const over = ["lib", "functions", "infra", "scripts", "bench"]
      .flatMap(sources)
      .map((path) => {
        const text = read(path);
        return { path, lines: text.split("\n").length - (text.endsWith("\n") ? 1 : 0) };
      })
      .filter((f) => f.lines > MAX_LINES)
      .sort((a, b) => b.lines - a.lines);
    expect(over.length, `split by responsibility:\n${over.map((f) => `  ${f.lines} ${f.path}`).join("\n")}`).toBe(0);
  });

  it("no test times code with the high-resolution clock but test/support/scaling.ts: a complexity class is asserted there, over rounds", () => {
    const tests = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "test"], { cwd: REPO_ROOT, encoding: "utf8" })
      .split("\0")
      .filter((p) => p.endsWith(".ts") && p !== "test/support/scaling.ts" && existsSync(join(REPO_ROOT, p)));
    expect(tests.length).toBeGreaterThan(100);
    const clock = ["performance", "now("].join(".");
    expect(tests.filter((p) => read(p).includes(clock)), "use expectScaling (test/support/scaling.ts)").toEqual([]);
  });
});

describe(PAGE, () => {
  const page = read(PAGE);
  /** Table rows as cells (`\|` inside a cell is a pipe of the cell's text). */
  const rows = page
    .split("\n")
    .filter((l) => l.startsWith("|"))
    .map((l) =>
      l
        .trim()
        .replace(/^\||\|$/g, "")
        .split(/(?<!\\)\|/)
        .map((c) => c.trim().replaceAll("\\|", "|")),
    );

  it("has a layer table that is the config's layers, top first: name, path pattern, what each may import", () => {
    const names = LAYERS.map((l) => `\`${l.name}\``);
    const layerRows = rows.filter((r) => names.includes(r[0]!));
    expect(layerRows.map((r) => r[0])).toEqual(names);
    LAYERS.forEach((layer, i) => {
      const row = layerRows[i]!;
      expect(row, `the row of ${layer.name} names its path pattern`).toContain(`\`${layer.path}\``);
      const below = LAYERS.slice(i + 1).map((l) => `\`${l.name}\``);
      const mayImport = below.length === 0 ? "itself only" : below.length === 1 ? below[0] : `${below[0]} → ${below.at(-1)}`;
      expect(row.at(-1), `the row of ${layer.name} says what it may import`).toBe(mayImport);
    });
  });

  it("names every rule of the config", () => {
    const missing = RULES.map((r) => r.name.replace(/^no-upward-from-.*/, "no-upward-from-<layer>")).filter((n) => !page.includes(`\`${n}\``));
    expect([...new Set(missing)]).toEqual([]);
  });

  /** The folders of the page's tree (the ```tree block, two spaces per level) as repository paths. */
  const treeFolders = () => {
    const block = /^```tree\n([\s\S]*?)^```/m.exec(page)?.[1] ?? "";
    const stack: string[] = [];
    return block.split("\n").flatMap((line) => {
      const m = /^( *)(\S+\/)(?:\s|$)/.exec(line);
      if (!m) return [];
      const depth = m[1]!.length / 2;
      stack.length = depth;
      stack.push(m[2]!);
      return [stack.join("")];
    });
  };

  it("draws the tree: every folder of lib/ (two levels), functions/ and infra/container/", () => {
    const drawn = treeFolders();
    const real = ["functions/", "infra/container/", ...foldersIn("lib/").flatMap((f) => [f, ...foldersIn(f)])];
    expect(real.filter((f) => !drawn.includes(f))).toEqual([]);
  });

  it("names no folder or file that does not exist", () => {
    const named = page.match(/(?<=`)(?:lib|functions|infra|test|scripts|bench|docs)\/[\w./-]*(?=`)/g) ?? [];
    const missing = [...treeFolders(), ...named].filter((p) => !exists(p));
    expect([...new Set(missing)]).toEqual([]);
  });
});

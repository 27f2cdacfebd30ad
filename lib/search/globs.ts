/**
 * Glob matching for the search tools, the one place every glob is compiled (glob, find,
 * grep's glob and type filters): picomatch's syntax and semantics (*, **, ?, [...], {a,b},
 * extglobs, leading ! negates), dotfiles matched. picomatch only translates the glob into a
 * regex; the regex runs on a linear-time NFA (regex-nfa.ts), never on JavaScript's
 * backtracking engine, so a match costs O(name length × pattern size) for every pattern.
 */
import picomatch from "picomatch/posix";
import { ToolError } from "../shared/errors.js";
import { FILE_TYPES, typeNames } from "./filetypes.js";
import { baseName, SANDBOX_ROOT } from "../layout/paths.js";
import { compileLinear } from "./regex-dfa.js";

export type PathTest = (path: string) => boolean;

/** picomatch's options for every glob here: POSIX paths, dotfiles matched by * and **. */
const OPTIONS = { dot: true, windows: false } as const;

/**
 * A glob as a linear-time test, with picomatch's rules: "" never matches, the glob itself
 * (as a literal string) always does, else its regex decides. Refuses a glob that picomatch
 * refuses or that compiles to a regex construct the linear engine lacks.
 */
export function compileGlob(pattern: string, what: string): (s: string) => boolean {
  let test: (s: string) => boolean;
  try {
    test = compileLinear(picomatch.makeRe(pattern, OPTIONS).source);
  } catch (e) {
    throw new ToolError("INVALID_ARGUMENT", `Invalid ${what} ${JSON.stringify(pattern)}: ${e instanceof Error ? e.message : String(e)}. Use *, **, ?, [abc], {a,b} and a leading ! to negate.`, { pattern });
  }
  return (s) => s !== "" && (s === pattern || test(s));
}



/** A glob pattern made relative: leading "/" and "./" dropped (an absolute "/workspace/" too), and the search root when the pattern repeats it. */
export function relativePattern(pattern: string, root: string): string {
  const trimmed = pattern.trim();
  let p = trimmed.replace(/^(\.\/|\/)+/, "");
  // An absolute pattern under /workspace (the root as bash shows it) is the workspace's, as a path is (normalizePath).
  if (trimmed.startsWith("/") && (p === SANDBOX_ROOT || p.startsWith(`${SANDBOX_ROOT}/`))) p = p.slice(SANDBOX_ROOT.length).replace(/^\/+/, "");
  if (root !== "" && p.startsWith(`${root}/`)) p = p.slice(root.length + 1);
  return p;
}

/**
 * The directory a glob can only match below: its leading segments without glob syntax,
 * e.g. "src/lib" for "src/lib/**\/*.ts" ("" when the first segment has glob syntax).
 */
export function literalDirPrefix(relPattern: string): string {
  const segs = relPattern.split("/");
  const out: string[] = [];
  for (const s of segs.slice(0, -1)) {
    if (s === "" || s === "." || s === ".." || /[*?[\]{}()!|@+\\]/.test(s)) break;
    out.push(s);
  }
  return out.join("/");
}

/** Matches paths below `root` against a glob, relative to the root (glob tool semantics). */
export function globTest(pattern: string, root: string): PathTest {
  const p = relativePattern(pattern, root);
  if (p === "") throw new ToolError("INVALID_ARGUMENT", "pattern is empty. Give a glob such as **/*.ts or src/*.{js,jsx}.");
  const m = compileGlob(p, "glob pattern");
  const cut = root === "" ? 0 : root.length + 1;
  return (path) => m(path.slice(cut));
}

/**
 * grep's `glob` filter, as ripgrep's --glob: a pattern without "/" matches the file name at
 * any depth; with "/" (a leading one included) it matches the path relative to the search root
 * (or the workspace).
 * A leading "!" excludes.
 */
export function fileGlobTest(pattern: string, root: string): PathTest {
  const negate = pattern.startsWith("!");
  const given = negate ? pattern.slice(1) : pattern;
  const p = relativePattern(given, root);
  if (p === "") throw new ToolError("INVALID_ARGUMENT", "glob is empty. Give a pattern such as *.ts or src/**/*.py.");
  const m = compileGlob(p, "glob");
  const cut = root === "" ? 0 : root.length + 1;
  // A "/" as given anchors the pattern, as in ripgrep ("/*.md", or "src/*.ts" searched in src, are not names at any depth).
  const test: PathTest = given.includes("/") ? (path) => m(path.slice(cut)) || m(path) : (path) => m(baseName(path));
  return negate ? (path) => !test(path) : test;
}

/** grep's `type` filter: the file name against the type's globs. */
export function typeTest(type: string): PathTest {
  const globs = FILE_TYPES[type.toLowerCase()];
  if (!globs) throw new ToolError("INVALID_ARGUMENT", `Unknown file type ${JSON.stringify(type)}. Known types: ${typeNames().join(", ")}. Or use glob, e.g. "*.ext".`, { type, known: typeNames() });
  const tests = globs.map((g) => compileGlob(g, "type glob"));
  return (path) => {
    const name = baseName(path);
    return tests.some((t) => t(name));
  };
}

/** Whether a pattern has glob syntax (else find treats it as a substring of the name). */
export const hasGlobSyntax = (p: string): boolean => /[*?[\]{}!]/.test(p);

export function both(a: PathTest | null, b: PathTest | null): PathTest | null {
  if (a && b) return (p) => a(p) && b(p);
  return a ?? b;
}

/** Glob matching for the search tools (picomatch: *, **, ?, [...], {a,b}, leading ! negates). */
import picomatch from "picomatch/posix";
import { ToolError } from "../errors.js";
import { FILE_TYPES, typeNames } from "./filetypes.js";
import { baseName } from "../paths.js";

export type PathTest = (path: string) => boolean;

function compile(pattern: string, what: string): (s: string) => boolean {
  try {
    return picomatch(pattern, { dot: true, windows: false });
  } catch (e) {
    throw new ToolError("INVALID_ARGUMENT", `Invalid ${what} ${JSON.stringify(pattern)}: ${e instanceof Error ? e.message : String(e)}.`, { pattern });
  }
}

/** A glob pattern made relative: leading "/" and "./" dropped, and the search root when the pattern repeats it. */
export function relativePattern(pattern: string, root: string): string {
  let p = pattern.trim().replace(/^(\.\/|\/)+/, "");
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
  const m = compile(p, "glob pattern");
  const cut = root === "" ? 0 : root.length + 1;
  return (path) => m(path.slice(cut));
}

/**
 * grep's `glob` filter, as ripgrep's --glob: a pattern without "/" matches the file name at
 * any depth; with "/" it matches the path relative to the search root (or the workspace).
 * A leading "!" excludes.
 */
export function fileGlobTest(pattern: string, root: string): PathTest {
  const negate = pattern.startsWith("!");
  const p = relativePattern(negate ? pattern.slice(1) : pattern, root);
  if (p === "") throw new ToolError("INVALID_ARGUMENT", "glob is empty. Give a pattern such as *.ts or src/**/*.py.");
  const m = compile(p, "glob");
  const cut = root === "" ? 0 : root.length + 1;
  const test: PathTest = p.includes("/") ? (path) => m(path.slice(cut)) || m(path) : (path) => m(baseName(path));
  return negate ? (path) => !test(path) : test;
}

/** grep's `type` filter: the file name against the type's globs. */
export function typeTest(type: string): PathTest {
  const globs = FILE_TYPES[type.toLowerCase()];
  if (!globs) throw new ToolError("INVALID_ARGUMENT", `Unknown file type ${JSON.stringify(type)}. Known types: ${typeNames().join(", ")}. Or use glob, e.g. "*.ext".`, { type, known: typeNames() });
  const m = picomatch([...globs], { dot: true, windows: false });
  return (path) => m(baseName(path));
}

/** Whether a pattern has glob syntax (else find treats it as a substring of the name). */
export const hasGlobSyntax = (p: string): boolean => /[*?[\]{}!]/.test(p);

export function both(a: PathTest | null, b: PathTest | null): PathTest | null {
  if (a && b) return (p) => a(p) && b(p);
  return a ?? b;
}

/**
 * Random queries of the differential search tests, each with the ripgrep flags that ask the same
 * question: grep's arguments → `rg --json` flags, glob's → `rg --files` flags. Where our documented
 * behaviour differs from ripgrep's defaults, the flags say so (the list of those differences is
 * in grep-vs-ripgrep.node.test.ts).
 */
import type { paths } from "../../../../lib/client/api/tools.generated.js";
import { COMMON, RARE, UNICODE, type Rng } from "./corpus.js";
import { bothSpellings } from "../../../../lib/search/spellings.js";

type ToolBody<T extends "grep" | "glob"> = NonNullable<paths[`/v1/workspaces/{ws}/tools/${T}`]["post"]["requestBody"]>["content"]["application/json"];
/** grep's and glob's arguments, as the client types have them (a cursor to resume is not asked for). */
export type GrepArgs = Omit<ToolBody<"grep">, "resume">;
export type GlobArgs = ToolBody<"glob">;

/** Directories always skipped unless include_ignored (docs/search.md, "Ignore rules and the skip report"). */
const STATIC_IGNORED = [".git", "node_modules", "vendor", "__pycache__"];

/**
 * grep's `type` definitions as its description states them (ripgrep 14's; Debian's ripgrep 13 lacks
 * *.mts, *.cts, *.pyi and *.mdx), given to rg with --type-add.
 */
export const TYPES: Record<string, string[]> = {
  ts: ["*.ts", "*.tsx", "*.mts", "*.cts"],
  py: ["*.py", "*.pyi"],
  md: ["*.md", "*.markdown", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"],
  txt: ["*.txt"],
  json: ["*.json", "*.jsonc", "*.json5", "*.sarif", "composer.lock"],
  js: ["*.js", "*.jsx", "*.mjs", "*.cjs", "*.vue"],
};

const GREP_GLOBS = ["*.ts", "src/*.ts", "/*.md", "*.{ts,tsx}", "src/**/*.ts", "!*.md", "**/*.txt", "docs/*", "*.log", "ünï/**", "*e*", "lib/*.ts", "?ain*", "[a-m]*.txt", ".env"];
const PATHS = ["", "", "", "", "src", "src/lib", "a b", "ünï", ".config"];
const GLOB_PATTERNS = ["**/*.ts", "*.ts", "src/**", "**/*.{js,json}", "src/*/*.ts", "**/x*", "**/*[0-9].*", "**/.env", "**/read me*", "ünï/*", "**/日本*", "**/*.log", "**/node_modules/**", "*", "**"];

const esc = (w: string) => w.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&");

function regex(r: Rng): string {
  const w = () => r.pick([...COMMON, ...RARE, ...UNICODE, `w${r.int(40)}`]);
  const k = r.int(24);
  switch (k) {
    case 0: return `\\b${esc(w())}\\b`;
    case 1: return `^${esc(w())}`;
    case 2: return `${esc(w())}$`;
    case 3: return `^\\s*${esc(w())}`;
    case 4: return `${esc(w())}|${esc(w())}`;
    case 5: return `(${esc(w())}|${esc(w())})\\s+\\S+`;
    case 6: return "[A-Z][a-z]+";
    case 7: return "\\d+\\.\\d+";
    case 8: return "w[0-9]+\\b";
    case 9: return `${esc(w())}.${esc(w())}`;
    case 10: return r.pick(["^$", "^\\s*$", "x*", "^", "$"]);
    case 11: return "[^\\x00-\\x7F]+";
    case 12: return r.pick(["\\p{Greek}+", "\\pL+\\s", "[[:upper:]]{2,}"]);
    case 13: return r.pick([".", "a.b", "..?é", "é.", "\\.\\*"]);
    case 14: return r.pick(["\\w+é", "\\bé", "\\w{6}", "\\W{3}", "\\B\\w\\b"]);
    case 15: return r.pick(["\\S+\\s{2,}", "\\t", " $", "^ +"]);
    case 16: return r.pick(["(?i)straße", "ſ", "k", "Σ", "ς", "ǆ", "(?i)KELVIN"]);
    case 17: return `${esc(w())}[^a-z]`;
    case 18: return `[${esc(r.pick(["(){}", "a-c", "^;", "\\]|"]))}]{2}`;
    case 19: return `(${esc(w())})+`;
    case 20: return `\\b\\w+\\b\\s*=>`;
    case 21: return `${esc(w())}\\s*[;(]`;
    case 22: return `^.{0,3}$`;
    default: return `${esc(w())}\\W+${esc(w())}`;
  }
}

function multilineRegex(r: Rng): string {
  const w = () => esc(r.pick([...COMMON, ...RARE, ...UNICODE]));
  return r.pick([`${w()}\\n`, `${w()}\\s*\\n\\s*${w()}`, `${w()}.{0,40}${w()}`, "\\n\\n", `${w()}$\\n^\\s*\\S`, `^${w()}.*\\n.*${w()}`, `${w()}[^z]{0,5}\\n`]);
}

export function randomGrep(r: Rng): GrepArgs {
  const a: GrepArgs = { pattern: "" };
  const kind = r.next();
  if (kind < 0.3) {
    a.pattern = r.pick([...COMMON, ...RARE, ...UNICODE, "a.b", "x*y", "=> ", "(", "const value", "\\", "$"]);
    a.literal = true;
  } else if (kind < 0.88) a.pattern = regex(r);
  else {
    a.pattern = multilineRegex(r);
    a.multiline = true;
  }
  if (r.next() < 0.25) a.case_insensitive = true;
  a.output_mode = r.pick(["content", "content", "files_with_matches", "count"] as const);
  if (a.output_mode === "content") {
    const c = r.int(4);
    if (c === 1) a.context = 1 + r.int(3);
    if (c === 2) a.before = r.int(3);
    if (c === 3) a.after = r.int(3);
  }
  if (r.next() < 0.4) a.head_limit = 1 + r.int(20);
  if (r.next() < 0.3) a.offset = r.int(12);
  const path = r.pick(PATHS);
  if (path) a.path = path;
  if (r.next() < 0.2) a.glob = r.pick(GREP_GLOBS);
  else if (r.next() < 0.15) a.type = r.pick(Object.keys(TYPES));
  if (r.next() < 0.2) a.include_hidden = true;
  if (r.next() < 0.2) a.include_ignored = true;
  return a;
}

export function randomGlob(r: Rng): GlobArgs {
  const a: GlobArgs = { pattern: r.pick(GLOB_PATTERNS) };
  const path = r.pick(PATHS);
  if (path) a.path = path;
  if (r.next() < 0.5) a.sort = r.pick(["modified", "name", "size"] as const);
  if (r.next() < 0.3) a.limit = 1 + r.int(30);
  if (r.next() < 0.2) a.offset = r.int(20);
  if (r.next() < 0.2) a.include_hidden = true;
  if (r.next() < 0.2) a.include_ignored = true;
  return a;
}

/** A pattern naming a hidden entry includes hidden entries (docs/search.md: "a pattern naming a hidden entry (`.env`) includes hidden entries"). */
const namesHiddenEntry = (glob: string) => glob.split("/").some((s) => s.startsWith(".") && s !== "." && s !== "..");

/** The skip rules as rg flags: .gitignore without a git repository, our static directories, hidden entries. */
export function rgVisibleFlags(hidden: boolean, ignored: boolean): string[] {
  const f = ["--no-ignore-global", "--no-ignore-dot"];
  if (hidden) f.push("--hidden");
  if (ignored) f.push("--no-ignore");
  else f.push("--no-require-git", ...STATIC_IGNORED.flatMap((d) => ["-g", `!${d}/`]));
  return f;
}

/** RE2's classes, which are ASCII (ripgrep's are Unicode), as classes of characters (not of bytes, as (?-u:\w) would be). */
const RE2_CLASSES: Record<string, string> = { w: "[0-9A-Za-z_]", W: "[^0-9A-Za-z_]", d: "[0-9]", D: "[^0-9]", s: "[\\t\\n\\f\\r ]", S: "[^\\t\\n\\f\\r ]", b: "(?-u:\\b)", B: "(?-u:\\B)" };

/**
 * RE2's \w \W \d \D \s \S \b \B are ASCII; ripgrep's are Unicode (docs/search.md, "Where grep
 * and glob differ from ripgrep"): rg is given RE2's. Escapes inside brackets are not rewritten (the
 * queries use none there).
 */
function asciiClasses(pattern: string): string {
  return pattern.replace(/\\(.)/g, (all, c: string) => RE2_CLASSES[c] ?? all);
}

/** rg flags asking what grep `a` asks (rg runs in the search path; paths come back relative to it). */
export function rgGrepFlags(a: GrepArgs): string[] {
  const f: string[] = [];
  // Accented letters are searched in both Unicode spellings (lib/search/spellings.ts): rg gets the pattern grep compiles.
  const spelled = bothSpellings(a.pattern, a.literal ?? false);
  if (a.literal && !spelled) f.push("-F");
  if (a.case_insensitive) f.push("-i");
  if (a.multiline) f.push("-U", "--multiline-dotall");
  if (a.output_mode === "content" || a.output_mode === undefined) {
    f.push("-B", String(a.before ?? a.context ?? 0), "-A", String(a.after ?? a.context ?? 0));
  }
  if (a.type) f.push("--type-clear", a.type, ...TYPES[a.type]!.flatMap((g) => ["--type-add", `${a.type}:${g}`]), "-t", a.type);
  const hidden = (a.include_hidden ?? false) || (a.glob !== undefined && namesHiddenEntry(a.glob));
  // The user's glob first: rg's later globs win, so the static skips stay in force.
  if (a.glob) f.push("-g", a.glob);
  f.push(...rgVisibleFlags(hidden, a.include_ignored ?? false));
  f.push("-e", spelled ? asciiClasses(spelled) : a.literal ? a.pattern : asciiClasses(a.pattern));
  return f;
}

/** rg flags for glob `a`: `rg --files` with the pattern anchored at the search path (glob matches whole relative paths). */
export function rgGlobFlags(a: GlobArgs): string[] {
  const hidden = (a.include_hidden ?? false) || namesHiddenEntry(a.pattern);
  // A pattern that repeats the search path is relative to it ("src/*.ts" in src is "*.ts": lib/search/globs.ts, relativePattern; docs/search.md).
  let p = a.pattern.replace(/^(\.\/|\/)+/, "");
  if (a.path && p.startsWith(`${a.path}/`)) p = p.slice(a.path.length + 1);
  return ["-g", `/${p}`, ...rgVisibleFlags(hidden, a.include_ignored ?? false)];
}

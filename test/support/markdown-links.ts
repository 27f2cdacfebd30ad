/**
 * Relative links of markdown pages, checked the way GitHub renders them: a link's file must exist
 * (relative to the page), and its `#anchor` must be the slug of a heading of that file (or of the
 * page itself for a bare `#anchor`). Pure over strings, so a planted broken link is a test input,
 * not an edited file.
 */
import { posix } from "node:path";

/** GitHub's heading slug: inline markup dropped, lowercase, punctuation other than `-` and `_` dropped, spaces to `-`. */
export function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // a link or image: its text
    .replace(/<[^>]+>/g, "") // inline HTML tags
    .replace(/[`*~]/g, ""); // code spans, emphasis, strike-through
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** The lines of a page outside fenced code blocks. */
function proseLines(markdown: string): string[] {
  const out: string[] = [];
  let fence: string | null = null;
  for (const line of markdown.split("\n")) {
    const m = /^\s*(`{3,}|~{3,})/.exec(line);
    if (m) {
      if (fence === null) fence = m[1]![0]!;
      else if (m[1]![0] === fence) fence = null;
      continue;
    }
    if (fence === null) out.push(line);
  }
  return out;
}

/** Every anchor a page's headings give, GitHub's way: a repeated slug gets `-1`, `-2`, … */
export function headingAnchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of proseLines(markdown)) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const slug = githubSlug(m[1]!);
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

/** The link targets of a page's prose (inline code and fenced code left out). */
export function linkTargets(markdown: string): string[] {
  const targets: string[] = [];
  for (const line of proseLines(markdown)) {
    const prose = line.replace(/(`+)[\s\S]*?\1/g, "``");
    for (const m of prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) targets.push(m[1]!);
  }
  return targets;
}

export interface LinkSite {
  /** The text of a file of the repository, "" for one that exists but is no text page, undefined when it does not exist. */
  read(path: string): string | undefined;
  /** Pages that other branches add and that may be missing here; links to them (and their anchors) are not checked. */
  pending?: ReadonlySet<string>;
}

/** The broken relative links of the page at `page` (a repository path such as "docs/api.md"), each as "link: why". */
export function brokenLinks(page: string, markdown: string, site: LinkSite): string[] {
  const broken: string[] = [];
  for (const target of linkTargets(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
    const hash = target.indexOf("#");
    const file = hash === -1 ? target : target.slice(0, hash);
    const anchor = hash === -1 ? null : decodeURIComponent(target.slice(hash + 1));
    const path = file === "" ? page : posix.normalize(posix.join(posix.dirname(page), decodeURIComponent(file)));
    if (path.startsWith("../")) {
      broken.push(`${target}: points outside the repository`);
      continue;
    }
    if (site.pending?.has(path)) continue;
    const text = file === "" ? markdown : site.read(path.replace(/\/$/, ""));
    if (text === undefined) {
      broken.push(`${target}: ${path} does not exist`);
      continue;
    }
    if (anchor !== null && !headingAnchors(text).has(anchor)) broken.push(`${target}: ${path} has no heading #${anchor}`);
  }
  return broken;
}

/** The repository's own folders a page names code in: `lib/…`, `test/…`, `docs/…`, … */
const CODE_PATH = /(?<![\w./@-])((?:lib|functions|infra|test|scripts|bench|clients|docs)\/[\w.*{},/-]*[\w*}/])/g;

/** `a/{b,c}.ts` as `a/b.ts`, `a/c.ts` (one level of braces, as pages write them). */
const expandBraces = (path: string): string[] => {
  const m = /\{([^{}]*)\}/.exec(path);
  return m ? m[1]!.split(",").flatMap((alt) => expandBraces(path.slice(0, m.index) + alt + path.slice(m.index + m[0].length))) : [path];
};

/** A glob of `*` (within a name) and `**` (across folders) as a regular expression over repository paths. */
const globRegex = (glob: string): RegExp =>
  new RegExp(`^${glob.replace(/[.+?^$()|[\]\\]/g, "\\$&").replace(/\*\*\/?|\*/g, (s) => (s === "*" ? "[^/]*" : ".*"))}$`);

export interface CodeSite {
  /** Every file of the repository, as repository paths (`lib/api/app.ts`). */
  files: readonly string[];
  /** Paths the repository's .gitignore names (what a run writes, such as `bench/results.json`): a page may name them. */
  ignored: ReadonlySet<string>;
}

/**
 * The repository paths a page's prose names (in code spans or not; fenced code left out: it shows
 * a workspace's or a command's files) that name no file or folder of the repository, each as
 * "path: why", with the file of the same name where there is one (a file moved without its pages).
 */
export function missingCodePaths(markdown: string, site: CodeSite): string[] {
  const missing: string[] = [];
  const folders = new Set(site.files.flatMap((f) => f.split("/").slice(0, -1).map((_, i, parts) => `${parts.slice(0, i + 1).join("/")}/`)));
  const files = new Set(site.files);
  const exists = (path: string) =>
    site.ignored.has(path) ||
    (path.includes("*") ? site.files.some((f) => globRegex(path).test(f)) : files.has(path) || folders.has(path.endsWith("/") ? path : `${path}/`));
  for (const line of proseLines(markdown)) {
    for (const m of line.matchAll(CODE_PATH)) {
      for (const path of expandBraces(m[1]!)) {
        if (exists(path)) continue;
        const name = path.slice(path.lastIndexOf("/") + 1);
        const same = name && !name.includes("*") ? site.files.filter((f) => f.endsWith(`/${name}`)) : [];
        missing.push(`${path}: no such file${same.length ? ` (${same.join(", ")} has its name)` : ""}`);
      }
    }
  }
  return [...new Set(missing)];
}

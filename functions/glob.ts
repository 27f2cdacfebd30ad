import { z } from "@hono/zod-openapi";
import { normalizePath } from "../lib/layout/paths.js";
import { globTest, literalDirPrefix, relativePattern } from "../lib/search/globs.js";
import { namesHidden } from "../lib/search/ignore.js";
import { listingStatus, scanTree, type Listed, type Scan } from "../lib/search/listing.js";
import { requireDirectory } from "../lib/search/search-root.js";
import { Budget, IndexStore } from "../lib/search/store.js";
import { byTimeThenPath } from "../lib/search/newest-first.js";
import { statusReporter } from "../lib/contract/progress.js";
import { defineTool } from "../lib/contract/tool.js";
import { pageOf, Paging, SkippedReport } from "../lib/contract/tool-output.js";
import { counted } from "../lib/shared/text.js";

const DEFAULT_LIMIT = 100;

const description = `Find files by name pattern (glob). Returns matching file paths, newest first by default.
- pattern: a glob matched against paths relative to path: * (within a name), ** (any depth), ?, [abc], braces {ts,tsx}. Examples: "**/*.ts", "src/**/*.{js,jsx}", "*.md" (top level only), "**/test_*.py".
- path: the directory to search in (default: the workspace root).
- sort: "modified" (newest first), "name" (by path) or "size" (largest first) (default: "modified").
- limit: files returned (default: ${DEFAULT_LIMIT}); offset: files to skip, for paging (default: 0).
- Skipped by default, and reported with counts so that "no match" is never confused with "ignored": hidden entries (names starting with "."), .git, node_modules, vendor, __pycache__, and whatever .gitignore files in the workspace ignore. include_hidden: true includes hidden entries (a pattern that names one, like ".env" or "**/.github/**", does too); include_ignored: true includes the ignored ones (default: false).
- A pattern ending in "/" matches directories instead of files (e.g. "**/" every directory, "src/*/" the directories directly in src, "**/test/"), empty ones included; they are returned with a trailing "/", sorted by path.
Returns: {matches: [{path, size, modified}] (directories: [{path, type: "directory"}]), count, total_found, truncated, next_offset, skipped: {total, counts, examples}}`;

export default defineTool({
  name: "glob",
  description,
  category: "search",
  permission: "read",
  summary: "Find files whose paths match a glob pattern (e.g. \"**/*.ts\", \"src/**/*.{js,jsx}\"), newest first by default; paged with limit/offset.",
  annotations: { title: "Find files by glob", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  output: z.object({ matches: z.array(z.object({ path: z.string(), size: z.number().int().optional(), modified: z.string().optional(), type: z.literal("directory").optional() })), ...Paging, skipped: SkippedReport }),
  input: z.object({
    pattern: z.string().min(1).max(1000).describe('Glob pattern, e.g. "**/*.ts" or "src/*.{js,jsx}"'),
    path: z.string().optional().describe("Directory to search in (default: the workspace root)"),
    sort: z.enum(["modified", "name", "size"]).optional().describe('"modified" (newest first), "name" or "size" (largest first) (default: "modified")'),
    limit: z.number().int().min(1).max(10_000).optional().describe(`Files to return (default: ${DEFAULT_LIMIT})`),
    offset: z.number().int().min(0).max(1_000_000).optional().describe("Files to skip (default: 0)"),
    include_hidden: z.boolean().optional().describe("Include hidden files and directories (default: false)"),
    include_ignored: z.boolean().optional().describe("Include .git, node_modules, vendor, __pycache__ and .gitignore'd files (default: false)"),
  }),
  async execute(args, ctx) {
    const { ws } = ctx;
    const progress = statusReporter(ctx, listingStatus);
    const root = normalizePath(args.path ?? "");
    // A trailing "/" asks for directories (as in shells: "*/" matches only directories).
    const dirsOnly = /\/\s*$/.test(args.pattern) && args.pattern.trim().replace(/^(\.\/|\/)+/, "") !== "";
    const pattern = dirsOnly ? args.pattern.trim().replace(/\/+$/, "") : args.pattern;
    const test = globTest(pattern, root);
    await requireDirectory(ws, root, "glob");
    const includeHidden = (args.include_hidden ?? false) || namesHidden(relativePattern(pattern, root));
    const budget = new Budget(Infinity);
    // List only below the pattern's literal directory prefix ("src/lib/**" lists src/lib/).
    const lit = literalDirPrefix(relativePattern(pattern, root));
    const listRoot = lit === "" ? root : normalizePath(root === "" ? lit : `${root}/${lit}`);
    const scan = await scanTree(ws, new IndexStore(ws.driver, ws.tenant, ws.id, budget), budget, { root, listRoot, linkFilter: test, includeHidden, includeIgnored: args.include_ignored ?? false, collectDirs: dirsOnly, cache: ctx.deps.listingCache, ...(progress ? { onListed: progress.update } : {}) });
    progress?.finish();
    if (dirsOnly) return directoryMatches(args, root, scan.dirs.filter(test).sort(), scan);
    const found = scan.files.filter((f) => test(f.path));
    const sort = args.sort ?? "modified";
    const byPath = (a: Listed, b: Listed) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
    found.sort(sort === "name" ? byPath : sort === "size" ? (a, b) => b.size - a.size || byPath(a, b) : byTimeThenPath);
    const offset = args.offset ?? 0;
    const { page, end, more, showing, fields } = pageOf(found, offset, args.limit ?? DEFAULT_LIMIT);
    const where = root === "" ? "the workspace" : `${root}/`;

    const lines: string[] = [];
    if (found.length === 0) {
      let hint = "";
      const rel = relativePattern(args.pattern, root);
      if (!rel.includes("/") && !rel.startsWith("**")) {
        const deep = globTest(`**/${rel}`, root);
        const n = scan.files.filter((f) => deep(f.path)).length;
        if (n > 0) hint = ` ${counted(n, "file")} ${n === 1 ? "matches" : "match"} **/${rel} at any depth: "${rel}" matches only directly in ${where}.`;
      }
      lines.push(`No files match ${JSON.stringify(args.pattern)} in ${where}.${hint}`);
    } else if (page.length === 0) {
      lines.push(`offset ${offset} is past the end: ${found.length} files match ${JSON.stringify(args.pattern)} in ${where}.`);
    } else {
      const order = sort === "modified" ? "newest first" : sort === "size" ? "largest first" : "by name";
      lines.push(`Found ${counted(found.length, "file")} matching ${JSON.stringify(args.pattern)} in ${where}${showing}, ${order}:`);
      lines.push(page.map((f) => f.path).join("\n"));
    }
    if (more) lines.push(`[More files: call glob again with offset=${end}.]`);
    if (scan.truncated) lines.push("[Only the first 200,000 files were listed: give a narrower path.]");
    const skip = scan.skipped.describe();
    if (skip) lines.push(skip);
    return {
      title: `glob ${args.pattern}${root ? ` in ${root}` : ""}`,
      output: lines.join("\n\n"),
      data: {
        matches: page.map((f) => ({ path: f.path, size: f.size, modified: new Date(f.modified).toISOString() })),
        ...fields,
        skipped: scan.skipped.toJSON(),
      },
    };
  },
});

/** The answer of a directory pattern (trailing "/"): paths with "/", by path (directories have no size or time to sort by). */
function directoryMatches(args: { pattern: string; limit?: number | undefined; offset?: number | undefined }, root: string, dirs: string[], scan: Scan) {
  const offset = args.offset ?? 0;
  const { page, end, more, showing, fields } = pageOf(dirs, offset, args.limit ?? DEFAULT_LIMIT);
  const where = root === "" ? "the workspace" : `${root}/`;
  const lines: string[] = [];
  if (dirs.length === 0) lines.push(`No directories match ${JSON.stringify(args.pattern)} in ${where}.`);
  else if (page.length === 0) lines.push(`offset ${offset} is past the end: ${dirs.length} directories match ${JSON.stringify(args.pattern)} in ${where}.`);
  else {
    lines.push(`Found ${dirs.length} director${dirs.length === 1 ? "y" : "ies"} matching ${JSON.stringify(args.pattern)} in ${where}${showing}, by name:`);
    lines.push(page.map((d) => `${d}/`).join("\n"));
  }
  if (more) lines.push(`[More directories: call glob again with offset=${end}.]`);
  if (scan.truncated) lines.push("[Only the first 200,000 files were listed: give a narrower path.]");
  const skip = scan.skipped.describe();
  if (skip) lines.push(skip);
  return {
    title: `glob ${args.pattern}${root ? ` in ${root}` : ""}`,
    output: lines.join("\n\n"),
    data: { matches: page.map((d) => ({ path: `${d}/`, type: "directory" as const })), ...fields, skipped: scan.skipped.toJSON() },
  };
}

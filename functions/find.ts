import { z } from "@hono/zod-openapi";
import { baseName, normalizePath } from "../lib/layout/paths.js";
import { compileGlob, hasGlobSyntax, relativePattern } from "../lib/search/globs.js";
import { namesHidden } from "../lib/search/ignore.js";
import { listingStatus, scanTree } from "../lib/search/listing.js";
import { requireDirectory } from "../lib/search/search-root.js";
import { Budget, IndexStore } from "../lib/search/store.js";
import { statusReporter } from "../lib/contract/progress.js";
import { defineTool } from "../lib/contract/tool.js";
import { pageOf, Paging, SkippedReport } from "../lib/contract/tool-output.js";
import { counted } from "../lib/shared/text.js";

const DEFAULT_MAX = 200;

const description = `Find files and directories by name. Returns paths only (directories end with "/"), sorted by path.
- path: the directory to search in (default: the workspace root).
- pattern: a glob matched against each entry's name (e.g. "*.test.ts", "*config*", "[Mm]akefile"; with a "/" it is matched against the path relative to path), or else a case-insensitive substring of the name (e.g. "auth"). Without pattern, every entry is listed.
- type: "file" or "dir" for only one kind (default: both).
- max_results: entries returned (default: ${DEFAULT_MAX}); offset: entries to skip, for paging (default: 0).
- Directories are those with files below them, and empty directories made explicitly (by a command such as mkdir in bash, or the files API).
- Skipped by default, and reported with counts: hidden entries (names starting with "."), .git, node_modules, vendor, __pycache__, and whatever .gitignore files in the workspace ignore. include_hidden / include_ignored include them (default: false); a pattern naming a hidden entry (".env") includes hidden entries.
Returns: {matches: [{path, type}], count, total_found, truncated, next_offset, skipped: {total, counts, examples}}`;

export default defineTool({
  name: "find",
  description,
  category: "search",
  permission: "read",
  summary: "Find files and directories by name: a glob on the name (e.g. \"*.test.ts\") or a case-insensitive substring; paths only, sorted; filter by type file or dir.",
  annotations: { title: "Find by name", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  output: z.object({ matches: z.array(z.object({ path: z.string(), type: z.enum(["file", "dir"]) })), ...Paging, skipped: SkippedReport }),
  input: z.object({
    path: z.string().optional().describe("Directory to search in (default: the workspace root)"),
    pattern: z.string().max(1000).optional().describe('Glob on the name ("*.ts") or a substring of the name ("auth")'),
    type: z.enum(["file", "dir"]).optional().describe('"file" or "dir" (default: both)'),
    max_results: z.number().int().min(1).max(10_000).optional().describe(`Entries to return (default: ${DEFAULT_MAX})`),
    offset: z.number().int().min(0).max(1_000_000).optional().describe("Entries to skip (default: 0)"),
    include_hidden: z.boolean().optional().describe("Include hidden files and directories (default: false)"),
    include_ignored: z.boolean().optional().describe("Include .git, node_modules, vendor, __pycache__ and .gitignore'd entries (default: false)"),
  }),
  async execute(args, ctx) {
    const { ws } = ctx;
    const progress = statusReporter(ctx, listingStatus);
    const root = normalizePath(args.path ?? "");
    await requireDirectory(ws, root, "find");
    const pattern = args.pattern?.trim() ?? "";
    let test: (name: string, rel: string) => boolean = () => true;
    if (pattern !== "") {
      if (hasGlobSyntax(pattern) || pattern.includes("/")) {
        const p = relativePattern(pattern, root);
        const m = compileGlob(p, "pattern");
        test = p.includes("/") ? (_name, rel) => m(rel) : (name) => m(name);
      } else {
        const needle = pattern.toLowerCase();
        test = (name) => name.toLowerCase().includes(needle);
      }
    }
    const includeHidden = (args.include_hidden ?? false) || namesHidden(pattern);
    const budget = new Budget(Infinity);
    const cut = root === "" ? 0 : root.length + 1;
    const scan = await scanTree(ws, new IndexStore(ws.driver, ws.tenant, ws.id, budget), budget, { root, linkFilter: (p) => test(baseName(p), p.slice(cut)), includeHidden, includeIgnored: args.include_ignored ?? false, collectDirs: args.type !== "file", cache: ctx.deps.listingCache, ...(progress ? { onListed: progress.update } : {}) });
    progress?.finish();
    const entries: { path: string; type: "file" | "dir" }[] = [];
    if (args.type !== "dir") for (const f of scan.files) if (test(baseName(f.path), f.path.slice(cut))) entries.push({ path: f.path, type: "file" });
    if (args.type !== "file") for (const d of scan.dirs) if (test(baseName(d), d.slice(cut))) entries.push({ path: d, type: "dir" });
    const shown = (e: { path: string; type: string }) => (e.type === "dir" ? `${e.path}/` : e.path);
    entries.sort((a, b) => (shown(a) < shown(b) ? -1 : shown(a) > shown(b) ? 1 : 0));
    const offset = args.offset ?? 0;
    const { page, end, more, showing, fields } = pageOf(entries, offset, args.max_results ?? DEFAULT_MAX);
    const where = root === "" ? "the workspace" : `${root}/`;
    const what = args.type === "file" ? "files" : args.type === "dir" ? "directories" : "entries";
    const one = args.type === "file" ? "file" : args.type === "dir" ? "directory" : "entry";

    const lines: string[] = [];
    if (entries.length === 0) lines.push(`No ${what}${pattern ? ` matching ${JSON.stringify(pattern)}` : ""} in ${where}.`);
    else if (page.length === 0) lines.push(`offset ${offset} is past the end: ${entries.length} ${what} found.`);
    else {
      lines.push(`Found ${counted(entries.length, one, what)}${pattern ? ` matching ${JSON.stringify(pattern)}` : ""} in ${where}${showing}:`);
      lines.push(page.map(shown).join("\n"));
    }
    if (more) lines.push(`[More: call find again with offset=${end}.]`);
    if (scan.truncated) lines.push("[Only the first 200,000 files were listed: give a narrower path.]");
    const skip = scan.skipped.describe();
    if (skip) lines.push(skip);
    return {
      title: `find ${pattern || "*"}${root ? ` in ${root}` : ""}`,
      output: lines.join("\n\n"),
      data: { matches: page.map((e) => ({ path: shown(e), type: e.type })), ...fields, skipped: scan.skipped.toJSON() },
    };
  },
});

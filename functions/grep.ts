import { z } from "@hono/zod-openapi";
import { normalizePath } from "../lib/layout/paths.js";
import { both, fileGlobTest, typeTest } from "../lib/search/globs.js";
import { CpuBudget } from "../lib/search/cpu-budget.js";
import { DEFAULT_BUDGET, grep, GREP_LISTING, MAX_SCAN_BYTES } from "../lib/search/grep.js";
import type { FileHits, GrepMode } from "../lib/search/grep-types.js";
import { namesHidden } from "../lib/search/ignore.js";
import type { Listed } from "../lib/search/listing.js";
import { onlyLinksMake } from "../lib/search/search-root.js";
import { compileMatcher, type LineMatch, type MatchSpec } from "../lib/search/matcher.js";
import { bothSpellings, decomposableLetters } from "../lib/search/spellings.js";
import { decodeResume, encodeResume, searchFingerprint } from "../lib/search/resume.js";
import { Budget } from "../lib/search/store.js";
import { statusReporter } from "../lib/contract/progress.js";
import { defineTool } from "../lib/contract/tool.js";
import { SkippedReport } from "../lib/contract/tool-output.js";
import { counted } from "../lib/shared/text.js";

const DEFAULT_LIMIT = 100;
const MAX_CONTEXT = 20;
/** Output text stops here; the rest of the page is left for the next offset. */
const MAX_OUTPUT_CHARS = 50_000;

const description = `Search file contents with a regular expression (RE2 syntax, linear time: no pattern can hang the search).
- pattern: the regex, e.g. "log.*Error" or "function\\s+\\w+". No backreferences or lookaround. literal: true searches for the text exactly as given (default: false).
- path: a directory or a single file to search (default: the workspace root).
- glob: only files matching it, e.g. "*.ts", "*.{ts,tsx}", "src/**/*.py"; a pattern without "/" matches the file name at any depth; a leading "!" excludes.
- type: only files of a type, as in ripgrep: ts (*.ts,*.tsx,*.mts,*.cts), js, py (*.py,*.pyi), rust, go, java, md, json, yaml, css, html, c, cpp, sh, ... (unknown types are refused with the list).
- output_mode: "files_with_matches" lists matching files, "content" shows matching lines, "count" gives matching lines per file (default: "files_with_matches"). Files are listed newest first.
- content mode: lines as "line:column:text" under each file's path; context lines as "line-text". context: lines before and after each match (default: 0); before / after set each side (override context). Long lines are cut around the match.
- case_insensitive (default: false). multiline: patterns may span lines and "." matches newlines (default: false).
- head_limit: entries returned, i.e. files, lines or counts (default: ${DEFAULT_LIMIT}); offset: entries to skip, for paging (default: 0).
- Lines end at \\n; CRLF files match as if they had LF endings. Accented letters match in either Unicode spelling (é, or e + U+0301 as macOS may store it). Binary files are skipped; files over ${MAX_SCAN_BYTES / 1024 / 1024} MB are not searched.
- Skipped by default, and reported with counts so that "no match" is never confused with "not searched": hidden entries (names starting with "."), .git, node_modules, vendor, __pycache__, and whatever .gitignore files in the workspace ignore. include_hidden: true / include_ignored: true search them too (default: false). An explicit path is always searched.
- One call has a budget of storage requests and of verification time. When it runs out, the result has complete: false and resume: a value to pass back (with the same other arguments) to continue where it stopped, inside a file if need be.
- An invalid regex gives INVALID_ARGUMENT naming the problem.
Returns: {mode, matches?: [{file, line, column, text, before[], after[]}], files?: string[], counts?: [{file, count}], count, total_found, truncated, next_offset, complete, resume, skipped: {total, counts, examples}, stats}`;

export default defineTool({
  name: "grep",
  description,
  category: "search",
  permission: "read",
  summary: "Search file contents with a regular expression (RE2 syntax, linear time) or literal text; modes: matching lines with context, matching files, or counts per file. Filter files with glob or type.",
  annotations: { title: "Search file contents", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  output: z.object({ mode: z.enum(["content", "files_with_matches", "count"]), pattern: z.string(), path: z.string(), matches: z.array(z.object({ file: z.string(), line: z.number().int(), column: z.number().int(), text: z.string(), before: z.array(z.string()), after: z.array(z.string()), end_line: z.number().int().optional() })).optional(), files: z.array(z.string()).optional(), counts: z.array(z.object({ file: z.string(), count: z.number().int() })).optional(), count: z.number().int(), total_found: z.number().int().nullable(), truncated: z.boolean(), next_offset: z.number().int().nullable(), complete: z.boolean(), resume: z.string().nullable(), skipped: SkippedReport, stats: z.record(z.string(), z.number()) }),
  input: z.object({
    pattern: z.string().min(1).max(10_000).describe("Regular expression (RE2 syntax), or the exact text with literal: true"),
    path: z.string().optional().describe("Directory or file to search (default: the workspace root)"),
    glob: z.string().max(1000).optional().describe('Only files matching this glob, e.g. "*.ts" or "src/**/*.{js,jsx}"'),
    type: z.string().max(32).optional().describe('Only files of this type, e.g. "ts", "py", "go", "md"'),
    output_mode: z.enum(["content", "files_with_matches", "count"]).optional().describe('"content", "files_with_matches" or "count" (default: "files_with_matches")'),
    case_insensitive: z.boolean().optional().describe("Ignore case (default: false)"),
    literal: z.boolean().optional().describe("Treat pattern as literal text, not a regex (default: false)"),
    context: z.number().int().min(0).max(MAX_CONTEXT).optional().describe("Lines of context before and after each match, content mode (default: 0)"),
    before: z.number().int().min(0).max(MAX_CONTEXT).optional().describe("Lines of context before each match (default: context)"),
    after: z.number().int().min(0).max(MAX_CONTEXT).optional().describe("Lines of context after each match (default: context)"),
    multiline: z.boolean().optional().describe('Let matches span lines; "." matches newlines (default: false)'),
    head_limit: z.number().int().min(1).max(2000).optional().describe(`Entries to return (default: ${DEFAULT_LIMIT})`),
    offset: z.number().int().min(0).max(1_000_000).optional().describe("Entries to skip (default: 0)"),
    include_hidden: z.boolean().optional().describe("Search hidden files and directories too (default: false)"),
    include_ignored: z.boolean().optional().describe("Search .git, node_modules, vendor, __pycache__ and .gitignore'd files too (default: false)"),
    resume: z.string().max(8192).optional().describe("Continue a search that stopped with complete: false: the resume value of its result (same other arguments)"),
  }),
  async execute(args, ctx) {
    const { ws, deps, signal } = ctx;
    const progress = statusReporter(ctx, GREP_LISTING);
    const spec = { pattern: args.pattern, literal: args.literal ?? false, caseInsensitive: args.case_insensitive ?? false, multiline: args.multiline ?? false };
    let compiled = compileMatcher(spec); // the pattern as given: its errors name it
    // Accented letters in either Unicode spelling (é, or e + U+0301): one pass, the same storage operations (lib/search/spellings.ts).
    const spelled = bothSpellings(args.pattern, spec.literal);
    if (spelled) compiled = tryCompile({ ...spec, pattern: spelled, literal: false }) ?? compiled;
    const searchedBoth = compiled.spec.pattern !== args.pattern;
    const path = normalizePath(args.path ?? "");
    let rootFile: Listed | null = null;
    if (path !== "") {
      const st = await ws.stat(path);
      if (!st && !(await onlyLinksMake(ws, path))) throw await ws.notFound(path, "Path");
      if (st?.type === "file") rootFile = { path, etag: st.etag, size: st.size, modified: st.modified.getTime() };
    }
    const root = rootFile ? "" : path;
    const filter = rootFile ? null : both(args.glob ? fileGlobTest(args.glob, root) : null, args.type ? typeTest(args.type) : null);
    const mode: GrepMode = args.output_mode ?? "files_with_matches";
    const offset = args.offset ?? 0;
    const limit = args.head_limit ?? DEFAULT_LIMIT;
    const before = args.before ?? args.context ?? 0;
    const after = args.after ?? args.context ?? 0;
    const includeHidden = (args.include_hidden ?? false) || (args.glob !== undefined && namesHidden(args.glob));

    const fingerprint = searchFingerprint({ pattern: args.pattern, path, glob: args.glob, type: args.type, mode, ci: args.case_insensitive, literal: args.literal, multiline: args.multiline, hidden: includeHidden, ignored: args.include_ignored, before, after });
    const resume = args.resume ? decodeResume(args.resume, fingerprint) : null;

    const budget = new Budget(DEFAULT_BUDGET);
    const cpu = new CpuBudget(deps.searchLimits, signal);
    const r = await grep(ws, { root, rootFile, compiled, filter, includeHidden, includeIgnored: args.include_ignored ?? false, mode, before, after, offset, limit, resume, progress, segmentCache: deps.segmentCache, listingCache: deps.listingCache }, budget, cpu);
    progress?.finish();
    // Entries are numbered across calls: a resumed call's hits start at r.base.
    const first = Math.max(offset, r.base);
    const from = first - r.base;
    const to = offset + limit - r.base;

    const where = rootFile ? rootFile.path : root === "" ? "the workspace" : `${root}/`;
    const notes: string[] = [];
    let body: string;
    let pageCount: number;
    const data: Record<string, unknown> = { mode, pattern: args.pattern, path };

    if (mode === "content") {
      const all: (LineMatch & { file: string })[] = r.hits.flatMap((h) => h.matches.map((m) => ({ file: h.file, ...m })));
      const page = all.slice(from, Math.max(from, to));
      const { text, shown } = renderContent(page);
      body = text;
      pageCount = shown;
      data.matches = page.slice(0, shown).map((m) => ({ file: m.file, line: m.line, column: m.column, text: m.text, before: m.before, after: m.after, ...(m.end_line ? { end_line: m.end_line } : {}) }));
    } else {
      const page = r.hits.slice(from, Math.max(from, to));
      pageCount = page.length;
      if (mode === "files_with_matches") {
        body = page.map((h) => h.file).join("\n");
        data.files = page.map((h) => h.file);
      } else {
        body = page.map((h) => `${h.file}:${h.count}`).join("\n");
        data.counts = page.map((h: FileHits) => ({ file: h.file, count: h.count }));
      }
    }
    const shownEnd = first + pageCount;
    const more = r.entries > shownEnd;
    const total = r.complete ? r.entries : null;
    const unit = (n: number) => (mode === "content" ? (n === 1 ? "matching line" : "matching lines") : n === 1 ? "file" : "files");

    let head: string;
    if (r.entries === 0) {
      head = `No matches for ${JSON.stringify(args.pattern)} in ${where}${r.complete ? "" : " so far"}.${args.multiline ? "" : lineBreakHint(args.pattern, args.literal ?? false)}${decomposedHint(args.pattern, searchedBoth)}`;
    } else if (pageCount === 0 && resume && r.entries <= first) {
      head = `No more matches for ${JSON.stringify(args.pattern)} in ${where}${r.complete ? "" : " so far"} (${r.entries} ${unit(r.entries)} found in all).`;
    } else if (pageCount === 0) {
      head = `offset ${offset} is past the end: ${total ?? r.entries} ${unit(total ?? r.entries)} found in ${where}.`;
    } else {
      const totalText = total !== null ? `${total}` : `at least ${r.entries}`;
      const range = first > 0 || more ? ` (showing ${first + 1}-${shownEnd})` : "";
      const lines = r.hits.slice(from, from + pageCount).reduce((n, h) => n + h.count, 0);
      head = `Found ${totalText} ${unit(total ?? r.entries)} in ${where}${range}${mode === "count" ? ` (${lines} matching ${lines === 1 ? "line" : "lines"} in ${pageCount === 1 ? "this file" : "these files"})` : ""}, newest files first:`;
    }
    if (more) notes.push(`[More results: call grep again with offset=${shownEnd}.]`);
    const token = r.resume ? encodeResume(r.resume, fingerprint) : null;
    if (r.exhausted && token) {
      const why =
        r.stoppedBy === "cpu"
          ? `this call used its verification budget (${Math.round(cpu.bytes / 1024 / 1024)} MB verified in ${cpu.ms} ms)`
          : `per-request storage limit; ${counted(r.stats.files_unindexed, "file was", "files were")} not yet in the search index, and what was read is now indexed`;
      const inside = r.resume?.file ? `, ${r.resume.path} from line ${r.resume.file.line + 1}` : "";
      notes.push(`[Search incomplete: ${counted(r.unsearched, "candidate file")} not searched yet${inside} (${why}). Call grep again with the same arguments and resume: ${JSON.stringify(token)} to continue.]`);
    }
    if (r.scanTruncated) notes.push("[Only the first 200,000 files were listed: give a narrower path.]");
    const skipNote = r.skipped.describe();
    if (skipNote) notes.push(skipNote);

    const output = [head, body, ...notes].filter((s) => s !== "").join("\n\n");
    return {
      title: `grep ${args.pattern}${path ? ` in ${path}` : ""}`,
      output,
      data: {
        ...data,
        count: pageCount,
        total_found: total,
        truncated: more || r.exhausted,
        next_offset: more ? shownEnd : null,
        complete: r.complete,
        resume: token,
        skipped: r.skipped.toJSON(),
        stats: { ...r.stats, budget: DEFAULT_BUDGET, bytes_verified: cpu.bytes, verify_ms: cpu.ms },
      },
    };
  },
});

/** Content mode text: matches grouped by file, context merged, "--" between separate groups. */
function renderContent(page: (LineMatch & { file: string })[]): { text: string; shown: number } {
  const parts: string[] = [];
  let size = 0;
  let shown = 0;
  let i = 0;
  while (i < page.length) {
    const file = page[i]!.file;
    let j = i;
    while (j < page.length && page[j]!.file === file) j++;
    const lines = new Map<number, string>();
    let taken = 0;
    let block = "";
    for (let k = i; k < j; k++) {
      const m = page[k]!;
      m.before.forEach((t, n) => {
        const no = m.line - m.before.length + n;
        if (!lines.has(no)) lines.set(no, `${no}-${t}`);
      });
      lines.set(m.line, `${m.line}:${m.column}:${m.text}${m.end_line ? `  [match continues to line ${m.end_line}]` : ""}`);
      const last = m.end_line ?? m.line;
      m.after.forEach((t, n) => {
        const no = last + 1 + n;
        if (!lines.has(no) || lines.get(no)!.startsWith(`${no}-`)) {
          if (!lines.has(no)) lines.set(no, `${no}-${t}`);
        }
      });
      const sorted = [...lines.entries()].sort((a, b) => a[0] - b[0]);
      let prev = -1;
      const out: string[] = [file];
      for (const [no, text] of sorted) {
        if (prev >= 0 && no > prev + 1) out.push("--");
        out.push(text);
        prev = no;
      }
      const candidate = out.join("\n");
      if (size + candidate.length > MAX_OUTPUT_CHARS && shown + taken > 0) break;
      block = candidate;
      taken++;
    }
    if (taken === 0) break;
    parts.push(block);
    size += block.length + 2;
    shown += taken;
    if (taken < j - i) break;
    i = j;
  }
  return { text: parts.join("\n\n"), shown };
}

/**
 * For a search that found nothing: a pattern that names a line break (`\n`, or a newline itself)
 * searched line by line (no multiline) — each line is searched without its line break, so such a
 * pattern finds nothing there, silently in ripgrep's terms (ripgrep refuses it). Says what to pass.
 */
function lineBreakHint(pattern: string, literal: boolean): string {
  const names = pattern.includes("\n") || (!literal && /(^|[^\\])(\\\\)*\\n/.test(pattern));
  return names ? " The pattern names a line break (\\n), and without multiline each line is searched alone, without its line break: to match across lines, pass multiline: true." : "";
}

/**
 * For a search that found nothing with accented letters grep could not search in both spellings
 * (lib/search/spellings.ts: a regex with a character class): says files may store them decomposed,
 * and how to write both. No storage operation: only the pattern is looked at.
 */
function decomposedHint(pattern: string, searchedBoth: boolean): string {
  const letters = decomposableLetters(pattern);
  if (letters.length === 0 || searchedBoth) return "";
  return ` The pattern has accented letters (${letters.slice(0, 5).join(" ")}): a file may store them decomposed (a letter followed by a combining mark, Unicode NFD, as files made on macOS may), which this pattern does not match. Write each as an alternative of both spellings outside a character class, e.g. (?:é|e\\x{301}).`;
}

function tryCompile(spec: MatchSpec) {
  try {
    return compileMatcher(spec);
  } catch {
    return null;
  }
}

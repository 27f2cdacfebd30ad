/**
 * What grep and glob should answer, from ripgrep's answer on the same files after the documented
 * normalizations (the list is in grep-vs-ripgrep.node.test.ts), and the comparison with what
 * they did answer: a description of the first difference, or null.
 */
import { existsSync } from "node:fs";
import type { Corpus } from "./corpus.js";
import { rgFiles, rgSearch, under, type RgFile } from "./ripgrep.js";
import { rgGlobFlags, rgGrepFlags, rgVisibleFlags, type GlobArgs, type GrepArgs } from "./queries.js";

const DEFAULT_LIMIT = 100;
const MAX_OUTPUT_CHARS = 50_000;

/** Newest first, then by path: grep's and glob's order (their descriptions: "newest first"). */
const newestFirst = (times: Map<string, number>) => (a: string, b: string) => times.get(b)! - times.get(a)! || (a < b ? -1 : a > b ? 1 : 0);
const join = (sub: string, rel: string) => (sub ? `${sub}/${rel}` : rel);
const show = (x: unknown) => JSON.stringify(x)?.slice(0, 600);

function firstDiff<T>(what: string, got: T[], want: T[]): string | null {
  for (let i = 0; i < Math.max(got.length, want.length); i++) {
    if (JSON.stringify(got[i]) === JSON.stringify(want[i])) continue;
    const [g, w] = [new Set(got.map((x) => JSON.stringify(x))), new Set(want.map((x) => JSON.stringify(x)))];
    const only = (a: Set<string>, b: Set<string>) => [...a].filter((x) => !b.has(x)).slice(0, 5).join(", ");
    return `${what}[${i}]: got ${show(got[i])}, want ${show(want[i])} (got ${got.length}, want ${want.length}; only got: ${only(g, w)}; only wanted: ${only(w, g)})`;
  }
  return null;
}

interface Entry { file: string; line: number; column: number; endLine: number }

/** One content-mode line as grep renders it; a long line cut "around the match" is checked against the whole and replaced by it. */
function uncut(rendered: string, full: string | undefined): string {
  const m = /^(\d+)([:-])(\d+:)?(.*)$/s.exec(rendered);
  if (!m || full === undefined) return rendered;
  let text = m[4]!;
  const head = /^\[(\d+) chars\] …/.exec(text);
  const tail = /… \[(\d+) more chars\]$/.exec(text);
  if (!head && !tail) return rendered;
  const start = head ? Number(head[1]) : 0;
  text = text.slice(head ? head[0].length : 0, tail ? text.length - tail[0].length : undefined);
  const rest = tail ? Number(tail[1]) : 0;
  if (full.slice(start, start + text.length) !== text || full.length - start - text.length !== rest) return rendered;
  return `${m[1]}${m[2]}${m[3] ?? ""}${full}`;
}

/** grep's content text for a page of line matches, from the lines ripgrep printed (matches and context). */
function render(page: Entry[], files: Map<string, RgFile>, sub: string, before: number, after: number): string {
  const blocks: string[] = [];
  for (let i = 0; i < page.length; ) {
    const file = page[i]!.file;
    const rg = files.get(file.slice(sub ? sub.length + 1 : 0))!;
    const lines = new Map<number, string>();
    for (; i < page.length && page[i]!.file === file; i++) {
      const m = page[i]!;
      for (let n = m.line - before; n <= m.line + after; n++) if (n !== m.line && rg.lines.has(n) && !lines.has(n)) lines.set(n, `${n}-${rg.lines.get(n)}`);
      lines.set(m.line, `${m.line}:${m.column}:${rg.lines.get(m.line)}`);
    }
    const out = [file];
    let prev = -1;
    for (const [n, t] of [...lines].sort((a, b) => a[0] - b[0])) {
      if (prev >= 0 && n > prev + 1) out.push("--");
      out.push(t);
      prev = n;
    }
    blocks.push(out.join("\n"));
  }
  return blocks.join("\n\n");
}

/** The paging fields every mode shares: count, total_found (when complete), next_offset. */
function paging(d: any, total: number, offset: number, shown: number): string | null {
  if (d.total_found !== null && d.total_found !== total) return `total_found: got ${d.total_found}, want ${total}${d.files ? ` (page: ${show(d.files)})` : ""}`;
  if (d.total_found === null && d.complete) return "complete without total_found";
  const next = total > offset + shown ? offset + shown : null;
  if (d.next_offset !== next) return `next_offset: got ${d.next_offset}, want ${next} (total ${total})`;
  return null;
}

export function compareGrep(a: GrepArgs, status: number, body: any, root: string, times: Map<string, number>): string | null {
  const sub = a.path ?? "";
  const cwd = under(root, sub);
  if (!existsSync(cwd)) return status === 404 ? null : `path ${sub} does not exist: want 404, got ${status}`;
  if (status !== 200) return `status ${status}: ${show(body)}`;
  const d = body.data;
  const hidden = (a.include_hidden ?? false) || (a.glob !== undefined && a.glob.split("/").some((s) => s.startsWith(".")));
  // Our glob filters what the skip rules leave; rg's -g overrides them (see the list of differences).
  const visible = new Set(rgFiles(cwd, rgVisibleFlags(hidden, a.include_ignored ?? false)));
  const found = rgSearch(cwd, rgGrepFlags(a), a.multiline ?? false);
  if (sub && a.glob && a.glob.includes("/") && !a.glob.startsWith("!")) {
    // A glob with "/" matches relative to the search path or to the workspace (docs/search.md, "Where
    // grep differs from ripgrep"): rg run in the workspace with the path as argument gives the second.
    for (const [p, f] of rgSearch(root, [...rgGrepFlags(a), "--", sub], a.multiline ?? false)) if (!found.has(p.slice(sub.length + 1))) found.set(p.slice(sub.length + 1), f);
  }
  for (const rel of [...found.keys()]) if (!visible.has(rel)) found.delete(rel);
  const order = [...found.keys()].map((rel) => join(sub, rel)).sort(newestFirst(times));
  const offset = a.offset ?? 0;
  const limit = a.head_limit ?? DEFAULT_LIMIT;
  const mode = a.output_mode ?? "files_with_matches";
  const rgOf = (file: string) => found.get(file.slice(sub ? sub.length + 1 : 0))!;

  if (mode === "files_with_matches") {
    const page = order.slice(offset, offset + limit);
    return firstDiff("files", d.files, page) ?? paging(d, order.length, offset, page.length);
  }
  if (a.multiline) {
    // One find per line (docs/search.md, "Where grep and glob differ from ripgrep"): after a file's first match
    // the next find starts on the next line, so later matches can differ from ripgrep's. The files
    // and each file's first match (line, column, end line) are compared.
    const firsts = order.map((file) => ({ file, ...rgOf(file).matches[0]! }));
    if (mode === "count") return firstDiff("files", d.counts.map((c: any) => c.file), order.slice(offset, offset + limit));
    const got = d.matches.filter((m: any, i: number) => i === 0 || d.matches[i - 1].file !== m.file).map((m: any) => [m.file, m.line, m.column, m.end_line ?? m.line]);
    const want = firsts.filter((f) => d.matches.some((m: any) => m.file === f.file)).map((m) => [m.file, m.line, m.column, m.endLine]);
    const files = [...new Set<string>(d.matches.map((m: any) => m.file))];
    const start = files.length > 0 ? order.indexOf(files[0]!) : offset === 0 ? 0 : order.length;
    if (offset === 0 && start !== 0) return `first file: got ${show(files[0])}, want ${show(order[0])}`;
    return firstDiff("files", files, order.slice(start, start + files.length)) ?? (offset === 0 ? firstDiff("first matches", got, want) : null);
  }
  if (mode === "count") {
    const count = (f: RgFile) => f.matchedLines;
    const page = order.slice(offset, offset + limit).map((file) => ({ file, count: count(rgOf(file)) }));
    return firstDiff("counts", d.counts, page) ?? paging(d, order.length, offset, page.length);
  }
  const all: Entry[] = [];
  for (const file of order) {
    const seen = new Set<number>();
    for (const m of rgOf(file).matches) {
      if (seen.has(m.line)) continue;
      seen.add(m.line);
      all.push({ file, ...m });
    }
  }
  const page = all.slice(offset, offset + limit);
  const shown = d.count as number;
  const paged = paging(d, all.length, offset, shown);
  if (shown !== page.length && body.output.length < MAX_OUTPUT_CHARS * 0.9) return `count: got ${shown}, want ${page.length}`;
  const want = render(page.slice(0, shown), found, sub, a.before ?? a.context ?? 0, a.after ?? a.context ?? 0);
  const paragraphs = (body.output as string).split("\n\n");
  const bodyText = shown === 0 ? "" : paragraphs.slice(1).filter((p) => !/^\[[^]*\]$/.test(p)).join("\n\n");
  const gotLines = bodyText.split("\n");
  const wantLines = want.split("\n");
  let file = "";
  const fixed = gotLines.map((l, i) => {
    if (i === 0 || gotLines[i - 1] === "") file = l;
    const n = /^(\d+)[:-]/.exec(l);
    return n ? uncut(l, rgOf(file)?.lines.get(Number(n[1]))) : l;
  });
  return firstDiff("content lines", fixed, wantLines) ?? paged;
}

export function compareGlob(a: GlobArgs, status: number, body: any, corpus: Corpus, root: string, times: Map<string, number>): string | null {
  const sub = a.path ?? "";
  const cwd = under(root, sub);
  if (!existsSync(cwd)) return status === 404 ? null : `path ${sub} does not exist: want 404, got ${status}`;
  if (status !== 200) return `status ${status}: ${show(body)}`;
  const hidden = (a.include_hidden ?? false) || a.pattern.split("/").some((s) => s.startsWith(".") && s !== "." && s !== "..");
  const visible = new Set(rgFiles(cwd, rgVisibleFlags(hidden, a.include_ignored ?? false)));
  const files = rgFiles(cwd, rgGlobFlags(a)).filter((rel) => visible.has(rel)).map((rel) => join(sub, rel));
  const size = (p: string) => corpus.files.get(p)!.length;
  const byPath = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
  files.sort(a.sort === "name" ? byPath : a.sort === "size" ? (x, y) => size(y) - size(x) || byPath(x, y) : newestFirst(times));
  const offset = a.offset ?? 0;
  const page = files.slice(offset, offset + (a.limit ?? DEFAULT_LIMIT));
  const d = body.data;
  return firstDiff("glob", d.matches.map((m: any) => m.path), page) ?? paging(d, files.length, offset, page.length);
}

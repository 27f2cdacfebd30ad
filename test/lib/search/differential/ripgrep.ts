/**
 * ripgrep as the oracle of the differential search tests: runs `rg` (Debian's ripgrep 13 at
 * /usr/bin/rg; .ci/run installs it) on the corpus written to disk and reads its `--json` answer
 * into per-file matches and printed lines, and `rg --files` into a file list.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";

export interface RgMatch {
  line: number;
  /** 1-based, in code points (ripgrep reports bytes). */
  column: number;
  /** Multiline mode: the line the match ends on. */
  endLine: number;
}

export interface RgFile {
  /** Matches in file order: one per matching line (line mode), one per match (multiline mode). */
  matches: RgMatch[];
  /** Matching lines, as `rg --count` reports them. */
  matchedLines: number;
  /** Every line ripgrep printed (matches and context), without its line end. */
  lines: Map<number, string>;
}

const dec = new TextDecoder();

/** Answers already given: both shapes and the shrinking of a failure ask rg the same questions. */
const answers = new Map<string, string>();

/** Runs rg in `cwd` with `args`; stdout (exit 1 is "nothing found", 2 an error). */
export function rg(cwd: string, args: string[]): string {
  const key = [cwd, ...args].join("\0");
  let out = answers.get(key);
  if (out === undefined) answers.set(key, (out = run(cwd, args)));
  return out;
}

function run(cwd: string, args: string[]): string {
  const r = spawnSync("rg", ["--no-config", ...args], { cwd, encoding: "utf8", maxBuffer: 256 * 1024 * 1024, stdio: ["ignore", "pipe", "pipe"] });
  // Filters that leave no file: rg 13 says so on stderr with exit 2; the answer is "nothing".
  if (r.status === 2 && /No files were searched/.test(r.stderr)) return "";
  if (r.status === 2 || r.error) throw new Error(`rg ${args.join(" ")} failed: ${r.error?.message ?? r.stderr}`);
  return r.stdout;
}

const textOf = (d: { text?: string; bytes?: string }) => (d.text !== undefined ? d.text : dec.decode(Buffer.from(d.bytes!, "base64")));
const withoutEnd = (l: string) => l.replace(/\r?\n$/, "");
const codePoints = (s: string) => Array.from(s).length;

/** `rg --json` over `cwd` with the query's flags: path (as rg prints it, relative to cwd) → what it found. */
export function rgSearch(cwd: string, args: string[], multiline: boolean): Map<string, RgFile> {
  const out = new Map<string, RgFile>();
  const file = (p: string) => {
    let f = out.get(p);
    if (!f) out.set(p, (f = { matches: [], matchedLines: 0, lines: new Map() }));
    return f;
  };
  for (const row of rg(cwd, ["--json", ...args]).split("\n")) {
    if (!row) continue;
    const m = JSON.parse(row) as { type: string; data: any };
    if (m.type !== "match" && m.type !== "context" && m.type !== "end") continue;
    const f = file(textOf(m.data.path));
    if (m.type === "end") {
      f.matchedLines = m.data.stats.matched_lines;
      continue;
    }
    const text = textOf(m.data.lines);
    const bytes = Buffer.from(text);
    const first: number = m.data.line_number;
    const split = text.replace(/\n$/, "").split("\n");
    split.forEach((l, i) => f.lines.set(first + i, withoutEnd(l)));
    if (m.type !== "match") continue;
    // rg 13 reports no submatch for an empty match at the end of a line without a line end ("$" on
    // "abc"): the line matched there.
    let subs = m.data.submatches as { start: number; end: number }[];
    if (subs.length === 0) subs = [{ start: Buffer.byteLength(text.replace(/\n$/, "")), end: Buffer.byteLength(text.replace(/\n$/, "")) }];
    for (const s of multiline ? subs : subs.slice(0, 1)) {
      const before = dec.decode(bytes.subarray(0, s.start));
      const line = first + (before.match(/\n/g)?.length ?? 0);
      const startOfLine = before.lastIndexOf("\n") + 1;
      const inside = dec.decode(bytes.subarray(s.start, s.end)).replace(/\n$/, "");
      out.get(textOf(m.data.path))!.matches.push({ line, column: codePoints(before.slice(startOfLine)) + 1, endLine: line + (inside.match(/\n/g)?.length ?? 0) });
    }
  }
  for (const [p, f] of out) if (f.matches.length === 0) out.delete(p);
  return out;
}

/** `rg --files` over `cwd` with the flags: the paths it lists, relative to cwd. */
export function rgFiles(cwd: string, args: string[]): string[] {
  return rg(cwd, ["--files", ...args]).split("\n").filter((l) => l !== "");
}

export const under = (root: string, sub: string) => (sub === "" ? root : join(root, sub));

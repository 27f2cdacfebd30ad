/**
 * Applying the hunks of one Update File section to a file's text. Pure: text in, text out.
 *
 * Each hunk is found after the previous one: its `@@` anchors first (each a line to find), then
 * its old lines (context and `-` lines). Matching tries, in order: exact, ignoring trailing
 * whitespace, ignoring leading and trailing whitespace, and finally with typographic dashes,
 * quotes and odd spaces read as ASCII and runs of whitespace collapsed (codex's ladder), and
 * Unicode in NFC (é composed or as e + U+0301 look the same: a model cannot tell them apart). A hunk
 * marked `*** End of File` is tried at the end of the file first. A hunk with no old lines adds
 * its lines after its last anchor, or at the end of the file without one.
 *
 * CRLF files stay CRLF (hunks are written with plain newlines); a file's final newline, or its
 * absence, is kept. A hunk that does not match names itself (file, index, patch line, first
 * line) and shows the nearest lines of the file, as edit's NO_MATCH does.
 */
import { nearestLines } from "../../workspace/edit.js";
import { ToolError } from "../../shared/errors.js";
import { lineEnding, visibleWhitespace } from "../../shared/text.js";
import type { Hunk } from "./parse.js";

/** How loosely a hunk matched: 0 exact, 1 trailing whitespace, 2 surrounding whitespace, 3 punctuation, inner whitespace and Unicode normalization. */
export type Fuzz = 0 | 1 | 2 | 3;

const PUNCT: Record<string, string> = {};
for (const c of "\u2010\u2011\u2012\u2013\u2014\u2015\u2212") PUNCT[c] = "-";
for (const c of "\u2018\u2019\u201A\u201B") PUNCT[c] = "'";
for (const c of "\u201C\u201D\u201E\u201F") PUNCT[c] = '"';
for (const c of "\u00A0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200A\u202F\u205F\u3000") PUNCT[c] = " ";
const PUNCT_RE = new RegExp(`[${Object.keys(PUNCT).join("")}]`, "g");

const LEVELS: ((s: string) => string)[] = [
  (s) => s,
  (s) => s.trimEnd(),
  (s) => s.trim(),
  (s) => s.normalize("NFC").replace(PUNCT_RE, (c) => PUNCT[c]!).replace(/\s+/g, " ").trim(),
];

/** The file's lines under each matching level, computed once per level when first needed. */
export class Lines {
  private readonly cache: (string[] | undefined)[] = [];
  constructor(readonly raw: string[]) {}
  at(level: Fuzz): string[] {
    return (this.cache[level] ??= level === 0 ? this.raw : this.raw.map(LEVELS[level]!));
  }
}

/** First index ≥ `from` where `pattern` matches, trying each level in turn; `eof` tries the end first. */
export function seek(lines: Lines, pattern: string[], from: number, eof = false): { at: number; fuzz: Fuzz } | null {
  const n = lines.raw.length;
  if (pattern.length === 0) return { at: from, fuzz: 0 };
  if (pattern.length > n) return null;
  const last = n - pattern.length;
  for (let level = 0 as Fuzz; level < LEVELS.length; level = (level + 1) as Fuzz) {
    const hay = lines.at(level);
    const pat = pattern.map(LEVELS[level]!);
    const matchesAt = (i: number) => pat.every((p, k) => hay[i + k] === p);
    if (eof && last >= from && matchesAt(last)) return { at: last, fuzz: level };
    for (let i = from; i <= last; i++) if (matchesAt(i)) return { at: i, fuzz: level };
  }
  return null;
}

export interface AppliedHunk {
  /** 1-based index of the hunk in its file section. */
  hunk: number;
  /** 1-based line of the original file where its old lines start (or where it added lines). */
  line: number;
  fuzz: Fuzz;
}

interface Replacement {
  start: number;
  remove: number;
  insert: string[];
}

/** Splits text into lines (LF), remembering CRLF and the final newline. */
function splitText(text: string): { lines: string[]; crlf: boolean; finalNewline: boolean } {
  const crlf = lineEnding(text) === "crlf";
  const body = crlf ? text.replaceAll("\r\n", "\n") : text;
  if (body === "") return { lines: [], crlf, finalNewline: false };
  const finalNewline = body.endsWith("\n");
  const lines = body.split("\n");
  if (finalNewline) lines.pop();
  return { lines, crlf, finalNewline };
}

/** Applies the hunks of one file section to `text`. Throws NO_MATCH naming the hunk that does not fit. */
export function applyHunks(text: string, hunks: readonly Hunk[], path: string): { text: string; applied: AppliedHunk[] } {
  const { lines: raw, crlf, finalNewline } = splitText(text);
  const lines = new Lines(raw);
  const replacements: Replacement[] = [];
  const applied: AppliedHunk[] = [];
  let cursor = 0;
  hunks.forEach((h, i) => {
    const label = { path, index: i + 1, count: hunks.length, patchLine: h.line };
    let worst: Fuzz = 0;
    for (const anchor of h.anchors) {
      const found = seek(lines, [anchor], cursor);
      if (!found) throw anchorNotFound(raw, anchor, cursor, label);
      cursor = found.at + 1;
      worst = Math.max(worst, found.fuzz) as Fuzz;
    }
    let old = h.lines.filter((l) => l.op !== "+").map((l) => l.text);
    let neu = h.lines.filter((l) => l.op !== "-").map((l) => l.text);
    if (old.length === 0) {
      const at = h.anchors.length && !h.eof ? cursor : raw.length;
      replacements.push({ start: at, remove: 0, insert: neu });
      applied.push({ hunk: i + 1, line: at + 1, fuzz: worst });
      return;
    }
    let found = seek(lines, old, cursor, h.eof);
    if (!found && old[old.length - 1] === "") {
      // A trailing empty context line may stand for the file's final newline.
      old = old.slice(0, -1);
      if (neu[neu.length - 1] === "") neu = neu.slice(0, -1);
      found = old.length ? seek(lines, old, cursor, h.eof) : null;
    }
    if (!found) {
      const earlier = cursor > 0 ? seek(lines, old, 0, false) : null;
      throw hunkNotFound(raw, old, cursor, label, earlier !== null && earlier.at < cursor ? earlier.at : null);
    }
    // Context lines keep the file's own text (a loose match must not rewrite their whitespace).
    replacements.push({ start: found.at, remove: old.length, insert: found.fuzz === 0 ? neu : keepContext(h.lines, raw, found.at, old.length) });
    applied.push({ hunk: i + 1, line: found.at + 1, fuzz: Math.max(worst, found.fuzz) as Fuzz });
    cursor = found.at + old.length;
  });

  // Pure additions at the end may come before later hunks in the patch: order by position.
  const order = replacements.map((r, i) => ({ r, i })).sort((a, b) => a.r.start - b.r.start || a.i - b.i);
  const out: string[] = [];
  let at = 0;
  for (const { r, i } of order) {
    if (r.start < at) throw new ToolError("INVALID_ARGUMENT", `Hunk ${i + 1} of ${path} overlaps an earlier hunk; merge them into one hunk, or order the hunks as they appear in the file. Nothing was changed.`, { path, hunk: i + 1 });
    out.push(...raw.slice(at, r.start), ...r.insert);
    at = r.start + r.remove;
  }
  out.push(...raw.slice(at));
  let result = out.join("\n");
  if (out.length && (finalNewline || raw.length === 0)) result += "\n";
  return { text: crlf ? result.replaceAll("\n", "\r\n") : result, applied };
}

/** The hunk's new lines, with each context line taken from the file where the hunk matched. */
function keepContext(lines: Hunk["lines"], raw: string[], at: number, oldCount: number): string[] {
  const out: string[] = [];
  let k = 0;
  for (const l of lines) {
    if (l.op === "+") out.push(l.text);
    else if (k < oldCount) {
      if (l.op === " ") out.push(raw[at + k]!);
      k++;
    }
  }
  return out;
}

interface HunkLabel {
  path: string;
  index: number;
  count: number;
  patchLine: number;
}

const nameOf = (l: HunkLabel) => `Hunk ${l.index} of ${l.count} in ${l.path} (patch line ${l.patchLine})`;
const after = (cursor: number) => (cursor > 0 ? ` after line ${cursor}` : "");

function withNearest(raw: string[], target: string, message: string): { message: string; candidates: { line: number; text: string }[] } {
  const candidates = nearestLines(raw.join("\n"), target);
  if (candidates.length) message += ` Nearest lines:\n${candidates.map((c) => `  ${c.line}: ${c.text}`).join("\n")}`;
  return { message, candidates };
}

function anchorNotFound(raw: string[], anchor: string, cursor: number, l: HunkLabel): ToolError {
  const { message, candidates } = withNearest(raw, anchor, `${nameOf(l)}: its anchor '@@ ${visibleWhitespace(anchor.slice(0, 200))}' was not found${after(cursor)}.`);
  return new ToolError("NO_MATCH", `${message}\nRead the file again and copy the anchor line exactly (or drop it); nothing was changed.`, { path: l.path, hunk: l.index, patch_line: l.patchLine, anchor, candidates });
}

function hunkNotFound(raw: string[], old: string[], cursor: number, l: HunkLabel, earlier: number | null): ToolError {
  const first = old.find((s) => s.trim() !== "") ?? old[0] ?? "";
  let head = `${nameOf(l)} does not match the file: its ${old.length} context and '-' line${old.length === 1 ? "" : "s"} were not found${after(cursor)}. Its first line: '${visibleWhitespace(first.slice(0, 200))}'.`;
  if (earlier !== null) head += ` They match at line ${earlier + 1}, before the previous hunk: order the hunks as they appear in the file.`;
  const { message, candidates } = withNearest(raw, first, head);
  return new ToolError("NO_MATCH", `${message}\nRead the file again and copy the context and '-' lines exactly (· is a space, → a tab); nothing was changed.`, {
    path: l.path,
    hunk: l.index,
    patch_line: l.patchLine,
    first_line: first,
    candidates,
  });
}

/**
 * Inserts `insert` after line `after` of `text` (0: before the first line). CRLF files stay CRLF;
 * the final newline, or its absence, is kept. INVALID_ARGUMENT past the last line.
 */
export function insertLines(text: string, after: number, insert: string, path: string): { text: string; lines: number } {
  const { lines, crlf, finalNewline } = splitText(text);
  if (after > lines.length) {
    throw new ToolError("INVALID_ARGUMENT", `insert_line ${after} is past the end of ${path}, which has ${lines.length} line${lines.length === 1 ? "" : "s"}; give 0 (the start) to ${lines.length} (the end).`, { path, total_lines: lines.length });
  }
  const add = insert.replaceAll("\r\n", "\n").split("\n");
  if (add.length > 1 && add[add.length - 1] === "") add.pop();
  const out = [...lines.slice(0, after), ...add, ...lines.slice(after)];
  let result = out.join("\n");
  if (finalNewline || lines.length === 0) result += "\n";
  return { text: crlf ? result.replaceAll("\n", "\r\n") : result, lines: add.length };
}

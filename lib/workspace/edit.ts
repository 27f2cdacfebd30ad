/**
 * String replacement as the edit tools do it: exact matches, CRLF files kept CRLF,
 * helpful failures (nearest lines, every duplicate's line number, line-number prefixes
 * pasted from read), and a bound on the result checked before the result is built.
 */
import { ToolError } from "../shared/errors.js";
import { lineEnding, utf8, visibleWhitespace } from "../shared/text.js";
import { MAX_EDIT_BYTES } from "./text-file.js";
import { canonicalMatches } from "./canonical-match.js";

export { shortDiff } from "../shared/diff.js";

export interface EditSpec {
  old_string: string;
  new_string: string;
  replace_all?: boolean;
}

/** Most match lines NOT_UNIQUE lists. */
const MAX_LISTED_MATCHES = 50;

/** UTF-16 units encoded at a time by utf8Length. */
const UTF8_CHUNK = 8192;

/**
 * UTF-8 bytes of a string, without holding its encoding (a lone surrogate counts as U+FFFD: 3 bytes,
 * as TextEncoder writes it): encoded a chunk at a time into one small buffer, natively (a loop over
 * its chars cost ~50 µs of a 16 KB edit in workerd; this, a few).
 */
export function utf8Length(s: string): number {
  const scratch = new Uint8Array(Math.min(s.length, UTF8_CHUNK) * 3);
  let n = 0;
  for (let i = 0; i < s.length; ) {
    let end = Math.min(s.length, i + UTF8_CHUNK);
    // Never split a surrogate pair: its halves alone would count 3 bytes each, the pair is 4.
    if (end < s.length && (s.charCodeAt(end - 1) & 0xfc00) === 0xd800) end--;
    n += utf8.encodeInto(s.slice(i, end), scratch).written;
    i = end;
  }
  return n;
}

const countOf = (s: string, ch: string): number => {
  let n = 0;
  for (let i = s.indexOf(ch); i !== -1; i = s.indexOf(ch, i + 1)) n++;
  return n;
};

const fmt = (n: number) => n.toLocaleString("en-US");
const mib = (n: number) => `${(n / 1024 / 1024).toFixed(n % (1024 * 1024) === 0 ? 0 : 1)} MiB`;

/**
 * The one size rule of the edit tools (edit, multi_edit, and any tool that builds a file from
 * edits): a result over `max` UTF-8 bytes is refused with FILE_TOO_LARGE before it is built.
 */
export function assertEditSize(bytes: number, path: string, opts: { label?: string; max?: number; why?: string; details?: Record<string, unknown> } = {}): void {
  const max = opts.max ?? MAX_EDIT_BYTES;
  if (bytes <= max) return;
  throw new ToolError(
    "FILE_TOO_LARGE",
    `${opts.label ?? ""}this edit would make ${path} ${fmt(bytes)} bytes${opts.why ?? ""}, over the ${mib(max)} (${fmt(max)} bytes) limit of the edit tools; nothing was written. ` +
      `Make a smaller change (fewer replacements, or a shorter new_string), or produce the file with bash.`,
    { path, size: bytes, limit: max, ...opts.details },
  );
}

/** Match positions of `needle`, without overlap: the count, and the first `keep` of them. */
function scan(text: string, needle: string, keep: number): { count: number; first: number[] } {
  const first: number[] = [];
  let count = 0;
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) {
    if (count < keep) first.push(i);
    count++;
  }
  return { count, first };
}

/** 1-based line numbers of ascending positions, in one pass. */
function linesOf(text: string, sorted: number[]): number[] {
  const out: number[] = [];
  let line = 1;
  let at = 0;
  for (const p of sorted) {
    for (let i = text.indexOf("\n", at); i !== -1 && i < p; i = text.indexOf("\n", i + 1)) {
      line++;
      at = i + 1;
    }
    out.push(line);
  }
  return out;
}

/**
 * Applies one edit to `text`. In a CRLF file, old and new strings written with LF match
 * and are written back with CRLF. `label` names the edit in errors (multi_edit). The size of
 * the result (UTF-8 bytes, CRLF expansion included) is checked against `maxBytes` before
 * the result is built.
 */
export function applyEdit(text: string, edit: EditSpec, path: string, label = "", maxBytes = MAX_EDIT_BYTES): EditResult {
  if (edit.old_string === edit.new_string) {
    throw new ToolError("INVALID_ARGUMENT", `${label}old_string and new_string are identical; nothing would change.`);
  }
  if (edit.old_string === "") {
    throw new ToolError("INVALID_ARGUMENT", `${label}old_string is empty: an empty old_string only creates a new file. To change ${path}, give the text to replace.`);
  }
  const crlf = lineEnding(text) === "crlf";
  const body = crlf ? text.replaceAll("\r\n", "\n") : text;
  const oldS = crlf ? edit.old_string.replaceAll("\r\n", "\n") : edit.old_string;
  const newS = crlf ? edit.new_string.replaceAll("\r\n", "\n") : edit.new_string;
  if (oldS === newS) {
    throw new ToolError("INVALID_ARGUMENT", `${label}old_string and new_string differ only in line endings; ${path} keeps its CRLF line endings, so nothing would change.`);
  }
  const found = scan(body, oldS, edit.replace_all ? 1 : MAX_LISTED_MATCHES);
  if (found.count === 0) {
    // Not there byte for byte: there as canonically equivalent text (é composed in one, decomposed in the other)?
    const spans = canonicalMatches(body, oldS);
    if (!spans) throw noMatch(body, oldS, path, label);
    return replaceSpans(body, spans, newS, crlf, edit, path, label, maxBytes);
  }
  if (found.count > 1 && !edit.replace_all) throw notUnique(body, found.count, found.first, path, label);
  const count = edit.replace_all ? found.count : 1;
  // The size of the result, before building it: each match changes it by the same amount.
  const perMatch = utf8Length(newS) - utf8Length(oldS) + (crlf ? countOf(newS, "\n") - countOf(oldS, "\n") : 0);
  const bytes = utf8Length(body) + (crlf ? countOf(body, "\n") : 0) + count * perMatch;
  const why = count > 1 ? ` (${fmt(count)} replacements of ${perMatch >= 0 ? "+" : ""}${fmt(perMatch)} bytes each)` : "";
  assertEditSize(bytes, path, { label, max: maxBytes, why, details: { replacements: count } });
  // A string replacement pattern would read `$&` and `$1` in new_string: escape `$`.
  const replaced = edit.replace_all ? body.replaceAll(oldS, newS.replaceAll("$", "$$$$")) : body.slice(0, found.first[0]) + newS + body.slice(found.first[0]! + oldS.length);
  return { text: crlf ? replaced.replaceAll("\n", "\r\n") : replaced, count, bytes };
}

export interface EditResult {
  text: string;
  count: number;
  bytes: number;
  /** Set when old_string matched only once both it and the file were in Unicode NFC. */
  unicodeNormalized?: true;
}

/** The note the edit tools add to their output when old_string matched as canonically equivalent text. */
export const UNICODE_MATCH_NOTE =
  "[old_string matched only with Unicode normalized (NFC): the file and old_string spell some accented letters differently (composed, or as a letter plus a combining mark), which look the same. The matched text was replaced by new_string as you wrote it; the rest of the file keeps its spelling.]";

function notUnique(body: string, count: number, first: number[], path: string, label: string): ToolError {
  const lines = linesOf(body, first.slice(0, MAX_LISTED_MATCHES));
  const more = count > lines.length ? ` and ${count - lines.length} more` : "";
  return new ToolError("NOT_UNIQUE", `${label}old_string occurs ${count} times in ${path} (lines ${lines.join(", ")}${more}). Add surrounding lines to make it unique, or set replace_all: true.`, { path, count, lines });
}

/** applyEdit's replacement at spans of `body` found by canonicalMatches: the same rules (unique unless replace_all, the size bound). */
function replaceSpans(body: string, spans: { start: number; end: number }[], newS: string, crlf: boolean, edit: EditSpec, path: string, label: string, maxBytes: number): EditResult {
  if (spans.length > 1 && !edit.replace_all) throw notUnique(body, spans.length, spans.map((s) => s.start), path, label);
  const nl = (s: string) => (crlf ? countOf(s, "\n") : 0);
  let bytes = utf8Length(body) + nl(body);
  for (const s of spans) bytes += utf8Length(newS) + nl(newS) - utf8Length(body.slice(s.start, s.end)) - nl(body.slice(s.start, s.end));
  const why = spans.length > 1 ? ` (${fmt(spans.length)} replacements)` : "";
  assertEditSize(bytes, path, { label, max: maxBytes, why, details: { replacements: spans.length } });
  const parts: string[] = [];
  let at = 0;
  for (const s of spans) {
    parts.push(body.slice(at, s.start), newS);
    at = s.end;
  }
  parts.push(body.slice(at));
  const replaced = parts.join("");
  return { text: crlf ? replaced.replaceAll("\n", "\r\n") : replaced, count: spans.length, bytes, unicodeNormalized: true };
}

/** read's line-number prefix (`     12\t`), or its `→` rendering, at the start of a line. */
const LINE_PREFIX = /^ *\d+(?:\t|→)/;

/**
 * When every line of old_string starts with a line-number prefix and the text without them
 * is in the file: the first prefix (for the message). Else null.
 */
function pastedLinePrefix(body: string, oldS: string): string | null {
  const lines = oldS.split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  if (!lines.every((l) => LINE_PREFIX.test(l))) return null;
  const stripped = lines.map((l) => l.replace(LINE_PREFIX, "")).join("\n");
  if (stripped.trim() === "" || !body.includes(stripped)) return null;
  return lines[0]!.match(LINE_PREFIX)![0];
}

function noMatch(body: string, oldS: string, path: string, label: string): ToolError {
  const prefix = pastedLinePrefix(body, oldS);
  if (prefix) {
    return new ToolError(
      "NO_MATCH",
      `${label}old_string was not found in ${path}: old_string starts with line-number prefixes from read's output (e.g. ${JSON.stringify(prefix)}: ${prefix.endsWith("\t") ? "spaces, the line number and a tab" : "spaces, the line number and →"}, as in details.example_prefix); drop that prefix from every line and retry. The text after the prefixes is in the file.`,
      { path, candidates: [], whitespace_only: false, line_number_prefix: true, example_prefix: prefix },
    );
  }
  const first = oldS.split("\n").find((l) => l.trim() !== "") ?? oldS;
  const candidates = nearestLines(body, first);
  const whitespaceOnly = collapse(body).includes(collapse(oldS)) && collapse(oldS) !== "";
  let message = `${label}old_string was not found in ${path}.`;
  if (whitespaceOnly) message += " It matches if whitespace is ignored: copy the indentation and line breaks exactly (· is a space, → a tab).";
  if (candidates.length) message += ` Nearest lines:\n${candidates.map((c) => `  ${c.line}: ${c.text}`).join("\n")}\nYour first line: ${visibleWhitespace(first.slice(0, 300))}`;
  else message += " Read the file again and copy the text exactly.";
  return new ToolError("NO_MATCH", message, { path, candidates, whitespace_only: whitespaceOnly, line_number_prefix: false });
}

const collapse = (s: string) => s.replace(/\s+/g, " ").trim();

/**
 * The lines of `body` most like `target` (whitespace collapsed, bigram similarity of at least 0.5),
 * best first, at most `max`, rendered with visible whitespace (· a space, → a tab): what NO_MATCH
 * shows. The one "nearest lines" rule of the edit tools and apply_patch.
 */
export function nearestLines(body: string, target: string, max = 3): { line: number; text: string }[] {
  const lines = body.split("\n", 50_000);
  const want = collapse(target);
  const scored: { line: number; text: string; score: number }[] = [];
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    const c = collapse(l);
    if (!c) continue;
    const score = c === want ? 1 : similarity(c, want);
    if (score >= 0.5) scored.push({ line: i + 1, text: l, score });
  }
  scored.sort((a, b) => b.score - a.score || a.line - b.line);
  return scored.slice(0, max).map((s) => ({ line: s.line, text: visibleWhitespace(s.text.slice(0, 300)) }));
}

/** Similarity in [0,1] from common bigrams (Dice coefficient), cheap enough for every line. */
function similarity(a: string, b: string): number {
  if (a.length < 2 || b.length < 2) return a === b ? 1 : 0;
  const grams = new Map<string, number>();
  for (let i = 0; i < a.length - 1; i++) {
    const g = a.slice(i, i + 2);
    grams.set(g, (grams.get(g) ?? 0) + 1);
  }
  let common = 0;
  for (let i = 0; i < b.length - 1; i++) {
    const g = b.slice(i, i + 2);
    const n = grams.get(g) ?? 0;
    if (n > 0) {
      common++;
      grams.set(g, n - 1);
    }
  }
  return (2 * common) / (a.length - 1 + b.length - 1);
}

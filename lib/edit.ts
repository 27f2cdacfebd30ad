/**
 * String replacement as the edit tools do it: exact matches, CRLF files kept CRLF,
 * helpful failures (nearest lines, every duplicate's line number), and a short diff.
 */
import { ToolError } from "./errors.js";
import { lineEnding, visibleWhitespace } from "./text.js";

export interface EditSpec {
  old_string: string;
  new_string: string;
  replace_all?: boolean;
}

const lineOf = (text: string, index: number): number => {
  let n = 1;
  for (let i = text.indexOf("\n"); i !== -1 && i < index; i = text.indexOf("\n", i + 1)) n++;
  return n;
};

function positions(text: string, needle: string): number[] {
  const out: number[] = [];
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) out.push(i);
  return out;
}

/**
 * Applies one edit to `text`. In a CRLF file, old and new strings written with LF match
 * and are written back with CRLF. `label` names the edit in errors (multi_edit).
 */
export function applyEdit(text: string, edit: EditSpec, path: string, label = ""): { text: string; count: number } {
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
  const found = positions(body, oldS);
  if (found.length === 0) throw noMatch(body, oldS, path, label);
  if (found.length > 1 && !edit.replace_all) {
    const lines = found.map((i) => lineOf(body, i));
    throw new ToolError("NOT_UNIQUE", `${label}old_string occurs ${found.length} times in ${path} (lines ${lines.join(", ")}). Add surrounding lines to make it unique, or set replace_all: true.`, { path, count: found.length, lines });
  }
  const replaced = edit.replace_all ? body.split(oldS).join(newS) : body.slice(0, found[0]) + newS + body.slice(found[0]! + oldS.length);
  return { text: crlf ? replaced.replaceAll("\n", "\r\n") : replaced, count: edit.replace_all ? found.length : 1 };
}

function noMatch(body: string, oldS: string, path: string, label: string): ToolError {
  const collapse = (s: string) => s.replace(/\s+/g, " ").trim();
  const lines = body.split("\n");
  const first = oldS.split("\n").find((l) => l.trim() !== "") ?? oldS;
  const target = collapse(first);
  const scored: { line: number; text: string; score: number }[] = [];
  for (let i = 0; i < lines.length && i < 50_000; i++) {
    const l = lines[i]!;
    const c = collapse(l);
    if (!c) continue;
    const score = c === target ? 1 : similarity(c, target);
    if (score >= 0.5) scored.push({ line: i + 1, text: l, score });
  }
  scored.sort((a, b) => b.score - a.score || a.line - b.line);
  const candidates = scored.slice(0, 3).map((s) => ({ line: s.line, text: visibleWhitespace(s.text.slice(0, 300)) }));
  const whitespaceOnly = collapse(body).includes(collapse(oldS)) && collapse(oldS) !== "";
  let message = `${label}old_string was not found in ${path}.`;
  if (whitespaceOnly) message += " It matches if whitespace is ignored: copy the indentation and line breaks exactly (· is a space, → a tab).";
  if (candidates.length) message += ` Nearest lines:\n${candidates.map((c) => `  ${c.line}: ${c.text}`).join("\n")}\nYour first line: ${visibleWhitespace(first.slice(0, 300))}`;
  else message += " Read the file again and copy the text exactly.";
  return new ToolError("NO_MATCH", message, { path, candidates, whitespace_only: whitespaceOnly });
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

/** Lines of a text for diffing: no phantom empty line after a final newline; a missing one is marked. */
function diffLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.replaceAll("\r\n", "\n").split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  else lines[lines.length - 1] += "\n\\ No newline at end of file";
  return lines;
}

/**
 * A unified diff of the changed region (common leading and trailing lines trimmed),
 * with `context` lines around it, cut at maxLines.
 */
export function shortDiff(path: string, before: string, after: string, context = 3, maxLines = 80): string {
  const a = diffLines(before);
  const b = diffLines(after);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length - 1;
  let endB = b.length - 1;
  while (endA >= start && endB >= start && a[endA] === b[endB]) {
    endA--;
    endB--;
  }
  const from = Math.max(0, start - context);
  const toA = Math.min(a.length - 1, endA + context);
  const toB = Math.min(b.length - 1, endB + context);
  // An empty range is numbered by the line before it (as in `diff -u`).
  const range = (to: number) => {
    const n = to - from + 1;
    return `${n === 0 ? from : from + 1},${n}`;
  };
  const out = [`--- a/${path}`, `+++ b/${path}`, `@@ -${range(toA)} +${range(toB)} @@`];
  for (let i = from; i < start; i++) out.push(` ${a[i]}`);
  for (let i = start; i <= endA; i++) out.push(`-${a[i]}`);
  for (let i = start; i <= endB; i++) out.push(`+${b[i]}`);
  for (let i = endA + 1; i <= toA; i++) out.push(` ${a[i]}`);
  const flat = out.join("\n").split("\n");
  if (flat.length > maxLines) return [...flat.slice(0, maxLines), `... (${flat.length - maxLines} more diff lines)`].join("\n");
  return flat.join("\n");
}

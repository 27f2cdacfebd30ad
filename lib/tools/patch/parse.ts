/**
 * The V4A patch format (OpenAI's apply_patch, codex): a `*** Begin Patch` … `*** End Patch`
 * envelope of file sections, parsed into operations. Pure: no I/O, no paths resolved here.
 *
 *   *** Add File: <path>        then `+` lines: the new file's content
 *   *** Delete File: <path>
 *   *** Update File: <path>     then an optional `*** Move to: <path>`, then hunks:
 *     @@ <anchor>               zero or more anchors (a line to find first: class, function), nested ones allowed
 *      <context> / -<old> / +<new>
 *     *** End of File           the hunk's lines end the file
 *
 * Lenient where models are known to drift (as codex is): whitespace around the markers, a
 * heredoc wrapper (`<<'EOF'` … `EOF`), CRLF line breaks, blank lines between hunks, an empty
 * line inside a hunk read as an empty context line, and unified-diff hunk headers
 * (`@@ -12,3 +12,4 @@ text`) read as an anchor on the text after them.
 */
import { ToolError } from "../../shared/errors.js";

export type HunkLine = { op: " " | "-" | "+"; text: string };

export interface Hunk {
  /** Lines to find, in order, before the hunk's own lines (from `@@ <anchor>`). */
  anchors: string[];
  lines: HunkLine[];
  /** `*** End of File`: the hunk's old lines end the file. */
  eof: boolean;
  /** 1-based line of the patch where the hunk starts (for errors). */
  line: number;
}

export type FileOp =
  | { type: "add"; path: string; content: string; line: number }
  | { type: "delete"; path: string; line: number }
  | { type: "update"; path: string; moveTo?: string; hunks: Hunk[]; line: number };

export const BEGIN = "*** Begin Patch";
export const END = "*** End Patch";
const ADD = "*** Add File: ";
const DELETE = "*** Delete File: ";
const UPDATE = "*** Update File: ";
const MOVE = "*** Move to: ";
const EOF_MARK = "*** End of File";
/** A unified-diff hunk header, which some models write instead of `@@`. */
const UNIFIED_HEADER = /^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?/;

const FORMAT_HINT =
  "A patch is '*** Begin Patch', then file sections ('*** Add File: <path>' with + lines, '*** Delete File: <path>', '*** Update File: <path>' with @@ hunks of ' ', '-', '+' lines), then '*** End Patch'.";

const invalid = (message: string, line?: number) =>
  new ToolError("INVALID_ARGUMENT", `${line !== undefined ? `Invalid patch at line ${line}: ` : "Invalid patch: "}${message} ${FORMAT_HINT}`, line !== undefined ? { line } : {});

/** The patch's lines without the envelope, and the patch line number of the first of them. */
function envelope(patch: string): { body: string[]; first: number } {
  let lines = patch.split(/\r?\n/);
  let first = 1;
  // Blank lines around the patch (and a heredoc wrapper some models add) are not part of it.
  while (lines.length && lines[0]!.trim() === "") (lines.shift(), first++);
  while (lines.length && lines[lines.length - 1]!.trim() === "") lines.pop();
  if (lines.length >= 2 && /^<<\s*(['"]?)EOF\1$/.test(lines[0]!.trim()) && lines[lines.length - 1]!.trim().endsWith("EOF")) {
    lines = lines.slice(1, -1);
    first++;
  }
  if (lines.length === 0 || lines[0]!.trim() !== BEGIN) throw invalid(`the first line must be '${BEGIN}'.`, lines.length ? first : undefined);
  if (lines.length < 2 || lines[lines.length - 1]!.trim() !== END) throw invalid(`the last line must be '${END}'.`);
  return { body: lines.slice(1, -1), first: first + 1 };
}

const headerOf = (line: string): { kind: "add" | "delete" | "update"; path: string } | null => {
  const t = line.trim();
  for (const [kind, marker] of [["add", ADD], ["delete", DELETE], ["update", UPDATE]] as const) {
    if (t.startsWith(marker)) return { kind, path: t.slice(marker.length).trim() };
  }
  return null;
};

/**
 * A line that ends an Update File section: the next file header, written at the start of the line
 * (a line starting with a space is a context line, whatever follows: ' *** x' is file content).
 */
const endsSection = (line: string): boolean => line.startsWith("*") && headerOf(line) !== null;

/** Parses a whole patch (with its envelope) into file operations, in order. */
export function parsePatch(patch: string): FileOp[] {
  const { body, first } = envelope(patch);
  const ops: FileOp[] = [];
  let i = 0;
  while (i < body.length) {
    const lineNo = first + i;
    if (body[i]!.trim() === "") {
      i++;
      continue;
    }
    const header = headerOf(body[i]!);
    if (!header) throw invalid(`expected a file header, got '${body[i]!.slice(0, 200)}'.`, lineNo);
    if (header.path === "") throw invalid("the file header has no path.", lineNo);
    i++;
    if (header.kind === "delete") {
      ops.push({ type: "delete", path: header.path, line: lineNo });
      continue;
    }
    if (header.kind === "add") {
      const content: string[] = [];
      while (i < body.length) {
        const l = body[i]!;
        if (l.startsWith("+")) content.push(l.slice(1));
        else if (l.trim() === "" && nextNonBlankStartsWithPlus(body, i)) content.push("");
        else break;
        i++;
      }
      ops.push({ type: "add", path: header.path, content: content.length ? `${content.join("\n")}\n` : "", line: lineNo });
      continue;
    }
    let moveTo: string | undefined;
    if (i < body.length && body[i]!.trim().startsWith(MOVE)) {
      moveTo = body[i]!.trim().slice(MOVE.length).trim();
      if (!moveTo) throw invalid("'*** Move to:' has no path.", first + i);
      i++;
    }
    let end = i;
    while (end < body.length && !endsSection(body[end]!)) end++;
    const hunks = parseHunks(body.slice(i, end), first + i);
    if (hunks.length === 0 && moveTo === undefined) throw invalid(`the Update File section of ${header.path} has no hunks.`, lineNo);
    ops.push({ type: "update", path: header.path, ...(moveTo !== undefined ? { moveTo } : {}), hunks, line: lineNo });
    i = end;
  }
  if (ops.length === 0) throw invalid("the patch has no file sections.");
  return ops;
}

function nextNonBlankStartsWithPlus(lines: string[], from: number): boolean {
  for (let j = from; j < lines.length; j++) if (lines[j]!.trim() !== "") return lines[j]!.startsWith("+");
  return false;
}

/**
 * The hunks of an Update File section (or of an OpenAI update_file diff). `first` is the patch
 * line number of lines[0]. Blank lines between hunks are skipped; inside a hunk an empty line is
 * an empty context line.
 */
export function parseHunks(lines: string[], first: number): Hunk[] {
  const hunks: Hunk[] = [];
  // Empty lines are ambiguous (an empty context line, or a separator): kept, and dropped at the end of a hunk.
  const blank = new Set<HunkLine>();
  let cur: Hunk | null = null;
  const meaningful = (h: Hunk) => h.lines.some((l) => !blank.has(l));
  const close = (h: Hunk) => {
    while (h.lines.length && blank.has(h.lines[h.lines.length - 1]!)) h.lines.pop();
    if (h.lines.length === 0) throw invalid(`the hunk${h.anchors.length ? ` at '@@ ${h.anchors[h.anchors.length - 1]}'` : ""} has no lines.`, h.line);
    hunks.push(h);
  };
  for (let k = 0; k < lines.length; k++) {
    const raw = lines[k]!;
    const lineNo = first + k;
    // Markers are read at the start of the line: ' @@ x' and ' *** End of File' are context lines.
    const t = raw.trimEnd();
    if (t.startsWith("@@")) {
      if (cur && meaningful(cur)) {
        close(cur);
        cur = null;
      }
      const unified = t.match(UNIFIED_HEADER);
      const anchor = unified ? t.slice(unified[0].length).trim() : t === "@@" ? "" : t.startsWith("@@ ") ? raw.slice(raw.indexOf("@@") + 3) : null;
      if (anchor === null) throw invalid(`'${t.slice(0, 200)}' is not a hunk header; write '@@' or '@@ <a line of the file to find first>'.`, lineNo);
      if (cur) cur.lines = [];
      else cur = { anchors: [], lines: [], eof: false, line: lineNo };
      if (anchor.trim() !== "") cur.anchors.push(anchor);
      continue;
    }
    if (t === EOF_MARK) {
      if (!cur || !meaningful(cur)) throw invalid("'*** End of File' must follow a hunk's lines.", lineNo);
      cur.eof = true;
      close(cur);
      cur = null;
      continue;
    }
    if (t.trim() === "" && raw[0] !== " ") {
      if (!cur) continue; // blank lines between hunks
      const l: HunkLine = { op: " ", text: "" };
      blank.add(l);
      cur.lines.push(l);
      continue;
    }
    const op = raw[0];
    if (op !== " " && op !== "-" && op !== "+") {
      throw invalid(`unexpected line '${raw.slice(0, 200)}' in an Update File section: every line of a hunk starts with ' ' (context), '-' (removed) or '+' (added).`, lineNo);
    }
    if (!cur) {
      if (hunks.length && hunks[hunks.length - 1]!.eof) throw invalid("a hunk after '*** End of File' must start with '@@'.", lineNo);
      cur = { anchors: [], lines: [], eof: false, line: lineNo };
    }
    cur.lines.push({ op, text: raw.slice(1) });
  }
  if (cur && (meaningful(cur) || cur.anchors.length)) close(cur);
  return hunks;
}

/** One operation of OpenAI's apply_patch tool (the Responses API's apply_patch_call). */
export interface PatchOperation {
  type: "create_file" | "update_file" | "delete_file";
  path: string;
  diff?: string;
}

/**
 * An apply_patch_call operation as a V4A patch of exactly one file section. Refuses anything
 * that would make the patch touch another file (a path with a line break, a diff with a file header).
 */
export function operationToPatch(op: PatchOperation): string {
  if (/[\r\n]/.test(op.path) || op.path.trim() === "") throw new ToolError("INVALID_ARGUMENT", "operation.path must be one non-empty line, e.g. src/app.ts.");
  const diffLines = (op.diff ?? "").split(/\r?\n/);
  while (diffLines.length && diffLines[diffLines.length - 1] === "") diffLines.pop();
  const stray = diffLines.findIndex((l) => l.startsWith("*** ") && l.trimEnd() !== EOF_MARK);
  if (stray !== -1) throw new ToolError("INVALID_ARGUMENT", `Line ${stray + 1} of operation.diff is a patch marker ('${diffLines[stray]!.slice(0, 100)}'); an operation's diff holds only the lines of its own file.`, { line: stray + 1 });
  switch (op.type) {
    case "delete_file":
      return `${BEGIN}\n${DELETE}${op.path}\n${END}`;
    case "create_file": {
      const bad = diffLines.findIndex((l) => !l.startsWith("+") && l !== "");
      if (bad !== -1) throw new ToolError("INVALID_ARGUMENT", `Line ${bad + 1} of the create_file diff does not start with '+': every line of a new file is written as '+<text>'.`, { line: bad + 1 });
      return [BEGIN, `${ADD}${op.path}`, ...diffLines.map((l) => (l === "" ? "+" : l)), END].join("\n");
    }
    case "update_file":
      if (diffLines.length === 0) throw new ToolError("INVALID_ARGUMENT", "The update_file diff is empty: give @@ hunks of ' ', '-' and '+' lines.");
      return [BEGIN, `${UPDATE}${op.path}`, ...diffLines, END].join("\n");
  }
}

/**
 * Anthropic's client tools, answered by our tools: the text editor (`str_replace_based_edit_tool`,
 * text_editor_20250728; `str_replace_editor` of older versions) and bash (bash_20250124).
 *
 *   view        → read (a file; view_range [start, end | -1] → offset, limit), or ls (a directory)
 *   create      → edit with an empty old_string: create-only, as Anthropic's reference refuses to overwrite
 *   str_replace → edit (old_str, new_str)
 *   insert      → insert (insert_line, insert_text; new_str accepted, as older docs name it)
 *   bash        → bash with keep_env: a persistent shell per X-Session-Id (cwd, exported variables and
 *                 functions carry over, replayed by the runner: lib/exec/shell-session.ts), in the session's
 *                 live sandbox when it holds one; the route's X-Toolshed-Keep-Alive is bash's keep_alive
 *                 (true: the live sandbox, started when there is none; false: a fresh sandbox, the live one
 *                 left alone); restart → bash with restart: true, which forgets the session's shell and ends its live sandbox
 *
 * The adapter maps fields and words; every rule (paths, read-before-write, conditional writes,
 * scopes, metering) is the tool's own.
 */
import { z } from "@hono/zod-openapi";
import { ToolError } from "../../shared/errors.js";
import { formatZodError } from "../../contract/errors.js";
import { bashPath } from "../../layout/bash-path.js";
import { requireField, type CompatAnswer, type RunTool } from "./types.js";

export const ANTHROPIC_TOOLS = ["str_replace_based_edit_tool", "str_replace_editor", "bash"] as const;
export type AnthropicTool = (typeof ANTHROPIC_TOOLS)[number];

/** Most lines one view shows (read's byte bound, 50 KB, usually comes first; its note says how to go on). */
const VIEW_ALL_LINES = 100_000;

const EditorInput = z.object({
  command: z.enum(["view", "create", "str_replace", "insert", "undo_edit"]),
  path: z.string().min(1),
  view_range: z.tuple([z.number().int(), z.number().int()]).optional(),
  file_text: z.string().optional(),
  old_str: z.string().optional(),
  new_str: z.string().optional(),
  insert_line: z.number().int().optional(),
  insert_text: z.string().optional(),
});

const BashInput = z.object({ command: z.string().optional(), restart: z.boolean().optional() });

function parse<S extends z.ZodType>(schema: S, input: unknown): z.infer<S> {
  const r = schema.safeParse(input);
  if (!r.success) throw new ToolError("INVALID_ARGUMENT", formatZodError(r.error).message, { issues: formatZodError(r.error).issues });
  return r.data;
}

/** Runs one tool_use input of `tool`. Tool errors are thrown (the route turns them into an error block). */
export async function runAnthropic(tool: AnthropicTool, input: unknown, run: RunTool, opts: { keepAlive?: boolean } = {}): Promise<CompatAnswer> {
  if (tool === "bash") return runBash(parse(BashInput, input), run, opts.keepAlive);
  const command = (input as { command?: unknown } | null)?.command;
  // The commands text_editor_20250728 has (undo_edit, in the schema for its own answer, is not one of them).
  if (typeof command === "string" && !EditorInput.shape.command.options.includes(command as never))
    throw new ToolError("INVALID_ARGUMENT", `Unknown command ${JSON.stringify(command.slice(0, 40))}: the text editor's commands are view, create, str_replace and insert.`, { command });
  return runEditor(parse(EditorInput, input), run);
}

/** The route's X-Toolshed-Keep-Alive header as runAnthropic's option: "true", "false", or absent (undefined: bash's default). */
export const keepAliveOf = (header: string | undefined): { keepAlive?: boolean } => (header === "true" ? { keepAlive: true } : header === "false" ? { keepAlive: false } : {});

/** keepAlive (the route's X-Toolshed-Keep-Alive) is bash's keep_alive (docs/live-sessions.md): absent, the session's live sandbox if it holds one; a restart ends it. */
async function runBash(input: z.infer<typeof BashInput>, run: RunTool, keepAlive: boolean | undefined): Promise<CompatAnswer> {
  const live = keepAlive !== undefined ? { keep_alive: keepAlive } : {};
  if (input.restart) {
    // A restart with a command runs it in the fresh shell; without one it only forgets the session's shell (nothing runs).
    const r = await run("bash", { ...(input.command ? { command: input.command, ...live } : {}), restart: true, keep_env: true });
    return { text: input.command ? r.output : "tool has been restarted." };
  }
  const command = requireField(input.command, "command", "the bash tool", "string");
  const r = await run("bash", { command, keep_env: true, ...live });
  return { text: r.output };
}

async function runEditor(input: z.infer<typeof EditorInput>, run: RunTool): Promise<CompatAnswer> {
  const { command, path } = input;
  switch (command) {
    case "view":
      return view(input, run);
    case "create": {
      const file_text = requireField(input.file_text, "file_text", "command: create", "string");
      const r = await run("edit", { file_path: path, old_string: "", new_string: file_text }).catch(
        inWords("ALREADY_EXISTS", (e) => `${e.details.path ?? path} already exists: command \`create\` cannot overwrite a file. Use view to see it, then str_replace (or insert) to change it.`),
      );
      // edit fills an existing empty file (no content is lost): said as such, never as a creation.
      const at = r.data.file_path;
      return { text: r.data.created === false ? `File already existed at: ${at}, empty: file_text was written into it (create never overwrites a file that has content).` : `File created successfully at: ${at}` };
    }
    case "str_replace": {
      const old_str = requireField(input.old_str, "old_str", "command: str_replace", "string");
      const r = await run("edit", { file_path: path, old_string: old_str, new_string: input.new_str ?? "" });
      return { text: editNote(r.output) };
    }
    case "insert": {
      const insert_line = requireField(input.insert_line, "insert_line", "command: insert", "integer");
      const text = requireField(input.insert_text ?? input.new_str, "insert_text", "command: insert", "string");
      const r = await run("insert", { file_path: path, insert_line, text });
      return { text: r.output };
    }
    case "undo_edit":
      throw new ToolError("INVALID_ARGUMENT", "undo_edit is not supported (text_editor_20250728 has no undo_edit): make the reverse change with str_replace.");
  }
}

async function view(input: z.infer<typeof EditorInput>, run: RunTool): Promise<CompatAnswer> {
  const range = input.view_range;
  if (range) {
    const [start, end] = range;
    if (start < 1) throw new ToolError("INVALID_ARGUMENT", `Invalid view_range [${start}, ${end}]: the first line is 1.`);
    if (end !== -1 && end < start) throw new ToolError("INVALID_ARGUMENT", `Invalid view_range [${start}, ${end}]: the end must be at least the start, or -1 for the end of the file.`);
  }
  const listDir = async () => {
    const r = await run("ls", { path: input.path });
    return { text: listingNote(r.output, typeof r.data.path === "string" ? r.data.path : "") };
  };
  if (input.path.replace(/[/.]/g, "") === "") return listDir();
  try {
    const r = await run("read", {
      file_path: input.path,
      ...(range ? { offset: range[0] } : {}),
      limit: range && range[1] !== -1 ? range[1] - range[0] + 1 : VIEW_ALL_LINES,
    });
    return { text: pagingNote(r.output) };
  } catch (e) {
    if (e instanceof ToolError && e.code === "IS_DIRECTORY") return listDir();
    // read's own remedies (encoding: "base64", an offset) are arguments view does not have.
    if (e instanceof ToolError && e.code === "BINARY_FILE") throw reworded(e, `${e.details.path ?? input.path} is a binary file (${e.details.type ?? "not text"}, ${e.details.size ?? "?"} bytes): view shows text only. Look at its bytes with bash (xxd, base64, file).`);
    if (e instanceof ToolError && range && typeof e.details.total_lines === "number") {
      throw reworded(e, `Invalid view_range [${range[0]}, ${range[1]}]: ${e.details.path ?? input.path} has ${e.details.total_lines} lines; the first line of the range must be within [1, ${Math.max(1, e.details.total_lines)}].`);
    }
    throw e;
  }
}

/** The same error (code, details) in the text editor's words. */
const reworded = (e: ToolError, message: string) => new ToolError(e.code, message, e.details);

/** A catch handler: an error of `code` is rethrown in the text editor's words, any other as it is. */
const inWords = (code: ToolError["code"], message: (e: ToolError) => string) => (e: unknown): never => {
  throw e instanceof ToolError && e.code === code ? reworded(e, message(e)) : e;
};

/**
 * read's closing notes say how to continue with read, and how to see the rest of a cut line with grep or bash;
 * the model holding the text editor continues with view_range, and has bash but no grep. Only the notes are touched, never the file's lines.
 */
function pagingNote(output: string): string {
  const cut = output.search(/\n\[\d+ lines? longer than \d+ characters (?:was|were) cut \(the first: line \d+\); read shows no more of a line\. [^\n]*\]$/);
  if (cut !== -1) {
    output = output.slice(0, cut) + output.slice(cut).replace("read shows no more of a line. To see the rest, grep for text in it (content mode shows the part of the line around each match), or print more of it with bash:", "view shows no more of a line. To see the rest, print more of it with bash:");
  }
  const at = output.lastIndexOf("\n\n[Showing lines ");
  if (at === -1) return output;
  return output.slice(0, at) + output.slice(at).replace(/Call read with offset=(\d+) to continue\./, "View it with view_range [$1, -1] to continue.");
}

/**
 * ls's closing notes say to call ls with show_hidden or a cursor, arguments view does not have; the model holding the
 * text editor has bash, which lists a whole directory. Only those notes are touched, never the entries.
 */
function listingNote(output: string, dir: string): string {
  const all = `ls -A ${bashPath(dir)}`;
  return output
    .replace(/(\n\[\d+ hidden entr(?:y|ies) \(names starting with "\."\) not shown); pass show_hidden: true to include them\.\]/, `$1: view shows no hidden entries; list them with bash: ${all}]`)
    .replace(/(\n\[Truncated after \d+ entries)\. To continue, call ls again with the same path and cursor: "[^"\n]*"\.\]/, `$1: view shows no more; list the whole directory with bash: ${all}]`);
}

/** edit's closing note (a match found with Unicode normalized) names old_string and new_string: the text editor's are old_str and new_str. Only that last line is touched. */
function editNote(output: string): string {
  const at = output.lastIndexOf("\n[old_string matched only with Unicode normalized");
  return at === -1 ? output : output.slice(0, at) + reword(output.slice(at));
}

/**
 * Error messages speak of our tools (read, old_string, replace_all); the model holding Anthropic's
 * tools knows view, old_str and view_range. The few phrases that name our tools, in its words
 * (applied to error messages only: a tool's output holds file content, which is never rewritten).
 */
export function anthropicWording(text: string): string {
  // Lines that quote the file (nearest lines, "Your first line: …") are left as they are.
  return text
    .split("\n")
    .map((line) => (/^\s+\d+: |^Your first line: /.test(line) ? line : reword(line)))
    .join("\n");
}

function reword(text: string): string {
  return text
    .replace(/Read it with the read tool first/g, "View it with the view command first")
    .replace(/Read the file with the read tool first/g, "View the file with the view command first")
    .replace(/has not been read in this session/g, "has not been viewed in this session")
    .replace(/, or set replace_all: true/g, "")
    .replace(/ Use glob or ls to find it\./g, " Use view with a directory's path to see what it holds.")
    .replace(/use ls or glob to find it/g, "use view with a directory's path to see what it holds")
    .replace(/\bold_string\b/g, "old_str")
    .replace(/\bnew_string\b/g, "new_str");
}

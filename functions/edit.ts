import { z } from "@hono/zod-openapi";
import { applyEdit, assertEditSize, shortDiff, UNICODE_MATCH_NOTE, utf8Length } from "../lib/workspace/edit.js";
import { ToolError } from "../lib/shared/errors.js";
import { normalizeFileToWrite } from "../lib/layout/write-path.js";
import { defineTool } from "../lib/contract/tool.js";
import { emptyOldStringTarget, loadForEdit, saveEdit } from "../lib/workspace/text-file.js";

const description = `Replace exact text in a file.
- old_string must match the file exactly, whitespace and indentation included (copy it from read output, without the line-number prefix). Accented letters match whichever Unicode spelling the file uses (composed or with combining marks); the output says when that was needed.
- old_string must be unique in the file unless replace_all is true (default: false); otherwise NOT_UNIQUE lists the line of every match.
- new_string replaces it; an empty new_string deletes the match. old_string and new_string must differ.
- An empty old_string creates a new file with new_string as content, which may be empty, or fills an existing empty file (ALREADY_EXISTS if the file has content).
- You must have read the file in this session (NOT_READ), and it must not have changed since (FILE_MODIFIED: read it again).
- Files with CRLF line endings keep them; write old_string and new_string with plain newlines.
- NO_MATCH shows the nearest lines of the file, with spaces as · and tabs as →, and says when old_string still has read's line-number prefixes.
- The result may be at most 10 MiB (UTF-8); a bigger one is refused with FILE_TOO_LARGE before anything is written.
- The diff is minimal (one hunk per separate change, 3 lines of context), cut at 80 lines.
Returns: {file_path, replacements, etag, diff}`;

export default defineTool({
  name: "edit",
  description,
  category: "file",
  permission: "write",
  opens: "file_path",
  onKnownRecord: "change",
  summary: "Replace an exact, unique string in a file with new text (replace_all for every occurrence); whitespace must match. Read the file first; returns a diff.",
  annotations: { title: "Edit file", readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  output: z.object({ file_path: z.string(), replacements: z.number().int(), created: z.boolean(), etag: z.string(), diff: z.string() }),
  input: z.object({
    file_path: z.string().min(1).describe("Path of the file in the workspace"),
    old_string: z.string().describe("The exact text to replace (empty: create a new file, or fill an empty one)"),
    new_string: z.string().describe("The text to put in its place"),
    replace_all: z.boolean().optional().describe("Replace every occurrence (default: false)"),
  }),
  async execute(args, { ws }) {
    const path = normalizeFileToWrite(args.file_path, "file_path");
    if (args.old_string === "") {
      assertEditSize(utf8Length(args.new_string), path);
      const empty = await emptyOldStringTarget(ws, path, args.new_string, "an empty old_string only creates new files (or fills an empty one): read the file and give the text to replace.");
      const info = await saveEdit(ws, path, args.new_string, empty);
      const diff = shortDiff(path, "", args.new_string);
      return { title: path, output: `${empty ? `Filled ${path}, which was empty` : `Created ${path}`}.\n${diff}`, data: { file_path: path, replacements: 0, created: !empty, etag: info.etag, diff } };
    }
    if (args.old_string === args.new_string) throw new ToolError("INVALID_ARGUMENT", "old_string and new_string are identical; nothing would change.");
    const { text, info: loaded } = await loadForEdit(ws, path);
    const result = applyEdit(text, args, path);
    const info = await saveEdit(ws, path, result.text, loaded);
    const diff = shortDiff(path, text, result.text);
    return {
      title: path,
      output: `Edited ${path}: ${result.count} replacement${result.count === 1 ? "" : "s"}.\n${diff}${result.unicodeNormalized ? `\n${UNICODE_MATCH_NOTE}` : ""}`,
      data: { file_path: path, replacements: result.count, created: false, etag: info.etag, diff },
    };
  },
});

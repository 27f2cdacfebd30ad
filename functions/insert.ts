import { z } from "@hono/zod-openapi";
import { assertEditSize, shortDiff, utf8Length } from "../lib/workspace/edit.js";
import { insertLines } from "../lib/tools/patch/apply.js";
import { normalizeFileToWrite } from "../lib/layout/write-path.js";
import { defineTool } from "../lib/contract/tool.js";
import { loadForEdit, saveEdit } from "../lib/workspace/text-file.js";

const description = `Insert lines into a file after a given line number.
- insert_line: the line after which the text goes (0: at the start of the file; the file's line count: at the end). Line numbers are those read shows.
- text: the lines to insert; a final newline is optional. In a CRLF file they are written with CRLF.
- You must have read the file in this session (NOT_READ), and it must not have changed since (FILE_MODIFIED: read it again).
- The result may be at most 10 MiB. A short diff comes back.
Returns: {file_path, insert_line, lines_inserted, etag, diff}`;

export default defineTool({
  name: "insert",
  description,
  category: "file",
  permission: "write",
  opens: "file_path",
  onKnownRecord: "change",
  summary: "Insert lines into a file after a given line number (0 = at the start). Read the file first; returns a diff.",
  annotations: { title: "Insert lines", readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  output: z.object({ file_path: z.string(), insert_line: z.number().int(), lines_inserted: z.number().int(), etag: z.string(), diff: z.string() }),
  input: z.object({
    file_path: z.string().min(1).describe("Path of the file in the workspace"),
    insert_line: z.number().int().min(0).describe("Insert after this line (0: at the start)"),
    text: z.string().describe("The text to insert"),
  }),
  async execute(args, { ws }) {
    const path = normalizeFileToWrite(args.file_path, "file_path");
    const { text, info: loaded } = await loadForEdit(ws, path);
    const r = insertLines(text, args.insert_line, args.text, path);
    assertEditSize(utf8Length(r.text), path);
    const info = await saveEdit(ws, path, r.text, loaded);
    const diff = shortDiff(path, text, r.text);
    return {
      title: path,
      output: `Inserted ${r.lines} line${r.lines === 1 ? "" : "s"} into ${path} after line ${args.insert_line}.\n${diff}`,
      data: { file_path: path, insert_line: args.insert_line, lines_inserted: r.lines, etag: info.etag, diff },
    };
  },
});

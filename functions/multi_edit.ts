import { z } from "@hono/zod-openapi";
import { applyEdit, assertEditSize, shortDiff, UNICODE_MATCH_NOTE, utf8Length } from "../lib/workspace/edit.js";
import { isToolError } from "../lib/shared/errors.js";
import { normalizeFileToWrite } from "../lib/layout/write-path.js";
import { defineTool } from "../lib/contract/tool.js";
import { emptyOldStringTarget, loadForEdit, saveEdit } from "../lib/workspace/text-file.js";

const description = `Make several exact replacements in one file, in order, all or nothing.
- edits: [{old_string, new_string, replace_all? (default: false)}], applied one after another, each on the result of the previous ones.
- Each edit follows the rules of the edit tool. If any edit fails (NO_MATCH, NOT_UNIQUE, ...), nothing is written and the error names the edit (edits[i]).
- Each edit's result may be at most 10 MiB (UTF-8): an edit that would pass it is refused with FILE_TOO_LARGE (naming edits[i]) before it is applied, and nothing is written.
- The diff is minimal: one hunk per separate change, 3 lines of context, cut at 80 lines.
- To create a new file (or fill an empty one), give an empty old_string in the first edit.
- You must have read the file in this session (NOT_READ), and it must not have changed since (FILE_MODIFIED).
Returns: {file_path, edits_applied, replacements, etag, diff}`;

const Edit = z.object({
  old_string: z.string().describe("The exact text to replace"),
  new_string: z.string().describe("The text to put in its place"),
  replace_all: z.boolean().optional().describe("Replace every occurrence (default: false)"),
});

export default defineTool({
  name: "multi_edit",
  description,
  category: "file",
  permission: "write",
  opens: "file_path",
  onKnownRecord: "change",
  summary: "Apply several exact string replacements to one file in order, all or nothing (each follows the edit tool's rules). Read the file first; returns a diff.",
  annotations: { title: "Edit file (several replacements)", readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  output: z.object({ file_path: z.string(), edits_applied: z.number().int(), replacements: z.number().int(), created: z.boolean(), etag: z.string(), diff: z.string() }),
  input: z.object({
    file_path: z.string().min(1).describe("Path of the file in the workspace"),
    edits: z.array(Edit).min(1).max(100).describe("Edits applied in order"),
  }),
  async execute(args, { ws }) {
    const path = normalizeFileToWrite(args.file_path, "file_path");
    let edits = args.edits;
    let before = "";
    let loaded = null;
    let text: string;
    if (edits[0]!.old_string === "") {
      loaded = await emptyOldStringTarget(ws, path, edits[0]!.new_string, "edits[0] has an empty old_string, which only creates new files (or fills an empty one).", { edit: 0 });
      text = edits[0]!.new_string;
      assertEditSize(utf8Length(text), path, { label: "edits[0]: ", details: { edit: 0 } });
      edits = edits.slice(1);
    } else {
      ({ text, info: loaded } = await loadForEdit(ws, path));
      before = text;
    }
    let replacements = 0;
    let normalized = false;
    const offset = args.edits.length - edits.length;
    edits.forEach((edit, i) => {
      let r;
      try {
        r = applyEdit(text, edit, path, `edits[${i + offset}]: `);
      } catch (e) {
        // The failing edit's index, for programs as well as for the model (the message says it too).
        if (isToolError(e)) e.details.edit = i + offset;
        throw e;
      }
      text = r.text;
      replacements += r.count;
      normalized ||= r.unicodeNormalized === true;
    });
    const filled = loaded !== null && loaded.size === 0 && args.edits[0]!.old_string === "";
    const info = await saveEdit(ws, path, text, loaded);
    const diff = shortDiff(path, before, text);
    return {
      title: path,
      output: `${filled ? `Filled ${path}, which was empty` : loaded ? `Edited ${path}` : `Created ${path}`}: ${args.edits.length} edit${args.edits.length === 1 ? "" : "s"}, ${replacements} replacement${replacements === 1 ? "" : "s"}.\n${diff}${normalized ? `\n${UNICODE_MATCH_NOTE}` : ""}`,
      data: { file_path: path, edits_applied: args.edits.length, replacements, created: !loaded, etag: info.etag, diff },
    };
  },
});

import { z } from "@hono/zod-openapi";
import { defineTool } from "../lib/contract/tool.js";
import { describeTransfer, MAX_TRANSFER_FILES, transfer } from "../lib/workspace/transfer.js";
import { TransferOutput } from "../lib/contract/tool-output.js";

const description = `Copy a file or a whole directory (byte for byte, binary files included).
- from: the file or directory to copy. to: the path of the copy. Like cp -r: if to is an existing directory, or ends with "/", the copy goes inside it (to: "backup/" copies src/a.ts to backup/a.ts).
- An existing target gives ALREADY_EXISTS unless overwrite is true (default: false). With overwrite a file replaces a file, and a directory is merged into a directory (files with the same paths are replaced, the others are kept); a file never replaces a directory, nor a directory a file.
- overwrite: true over an existing target is destructive: by default it waits for a human's approval (NEEDS_APPROVAL with a pending_id; get the outcome with the pending_result tool), and nothing is copied before.
- A directory cannot be copied into itself (INVALID_ARGUMENT). One call copies at most ${MAX_TRANSFER_FILES} files and directories (FILE_TOO_LARGE: copy its subdirectories one at a time).
- If a copy fails midway, the new copies made so far are removed (files already replaced with overwrite stay replaced).
- You can edit the copies without reading them first, unless the source changed since you last read it (then read the copy).
- Empty directories below a directory are copied with it (directories lists the directories kept explicitly at the target).
- A symlink is copied as a link, never followed (like cp -P): its target stays the same text, even one outside the workspace; the links below a directory go with it. A link counts as an existing target (overwrite: true replaces it, or is replaced by it); nothing is made below a link (SYMLINK_REFUSED).
- A link on the way to from (a directory of its path: from: "dirlink/a.ts") is followed inside the workspace, as read follows it: the call copies the resolved path, which from names, and the output's first line and via_link name the link. A link that leads outside the workspace or loops is refused (SYMLINK_REFUSED), and nothing is written.
Returns: {from, to, type: "file"|"directory"|"symlink", files: [{from, to, size, etag, replaced}], links?: [{from, to, target, replaced}], directories: [paths], count, bytes, overwritten, via_link?}`;

export default defineTool({
  name: "copy",
  description,
  category: "file",
  permission: "write",
  summary: "Copy a file or directory, binary files included (like cp -r: a target that is a directory or ends with '/' receives the copy inside it); overwrite: true replaces or merges.",
  annotations: { title: "Copy", readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  output: TransferOutput,
  input: z.object({
    from: z.string().min(1).describe("Path of the file or directory to copy"),
    to: z.string().min(1).describe('Path of the copy; an existing directory (or a path ending in "/") receives it inside'),
    overwrite: z.boolean().optional().describe("Replace an existing target (default: false)"),
  }),
  async execute(args, { ws }) {
    const r = await transfer(ws, args, "copy");
    return { title: `${r.from} -> ${r.to}`, output: describeTransfer(r, "copy"), data: { ...r, count: r.files.length } };
  },
});

import { z } from "@hono/zod-openapi";
import { defineTool } from "../lib/contract/tool.js";
import { describeTransfer, MAX_TRANSFER_FILES, transfer } from "../lib/workspace/transfer.js";
import { TransferOutput } from "../lib/contract/tool-output.js";

const description = `Move or rename a file or a whole directory.
- from: the file or directory to move. to: its new path. Like mv: if to is an existing directory, or ends with "/", the source goes inside it (to: "lib/" moves src/a.ts to lib/a.ts).
- An existing target gives ALREADY_EXISTS unless overwrite is true (default: false). With overwrite a file replaces a file, and a directory is merged into a directory (files with the same paths are replaced, the others are kept); a file never replaces a directory, nor a directory a file.
- overwrite: true over an existing target is destructive: by default it waits for a human's approval (NEEDS_APPROVAL with a pending_id; get the outcome with the pending_result tool), and nothing moves before.
- A directory cannot move into itself (INVALID_ARGUMENT). One call moves at most ${MAX_TRANSFER_FILES} files and directories (FILE_TOO_LARGE: move its subdirectories one at a time).
- Safe midway: every file is copied first and the sources are deleted only after all copies succeeded, each only if unchanged since it was copied; if a copy fails, the new copies are removed and nothing is moved.
- A file changed by another call during the move is not moved (its newer version stays at the old path): FILE_MODIFIED for a file; CONFLICT for a directory, whose other files are moved (call move again with the same arguments to move the rest).
- A directory move that was interrupted is reported by ls and move; call move again with the same arguments to finish it (files that differ at both paths are left and listed in kept).
- Moved files keep what this session knew of them: a file you had read (or that you move without reading) can be edited at its new path without reading it again; one that changed since you read it must be read again.
- Empty directories below a directory are moved with it (directories lists the directories kept explicitly at the target).
- A symlink is moved as a link, never followed (like mv): its target stays the same text, even one outside the workspace; the links below a directory go with it. A link counts as an existing target (overwrite: true replaces it, or is replaced by it); nothing is made below a link (SYMLINK_REFUSED).
- A link on the way to from (a directory of its path: from: "dirlink/a.ts") is followed inside the workspace, as read follows it: the call moves the resolved path, which from names, and the output's first line and via_link name the link. A link that leads outside the workspace or loops is refused (SYMLINK_REFUSED), and nothing is written.
Returns: {from, to, type: "file"|"directory"|"symlink", files: [{from, to, size, etag, replaced}], links?: [{from, to, target, replaced}], directories: [paths], count, bytes, overwritten, finished?, kept?, notes?, via_link?}`;

export default defineTool({
  name: "move",
  description,
  category: "file",
  permission: "write",
  summary: "Move or rename a file or directory (like mv: a target that is a directory or ends with '/' receives the source inside it); overwrite: true replaces or merges.",
  annotations: { title: "Move or rename", readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  output: TransferOutput,
  input: z.object({
    from: z.string().min(1).describe("Path of the file or directory to move"),
    to: z.string().min(1).describe('New path; an existing directory (or a path ending in "/") receives the source inside it'),
    overwrite: z.boolean().optional().describe("Replace an existing target (default: false)"),
  }),
  async execute(args, { ws }) {
    const r = await transfer(ws, args, "move");
    return { title: `${r.from} -> ${r.to}`, output: describeTransfer(r, "move"), data: { ...r, count: r.files.length } };
  },
});

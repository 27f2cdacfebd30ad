import { z } from "@hono/zod-openapi";
import { ToolError } from "../lib/shared/errors.js";
import { bashPath } from "../lib/layout/bash-path.js";
import { normalizeFileToWrite } from "../lib/layout/write-path.js";
import { defineTool } from "../lib/contract/tool.js";
import { bytesEqual, counted, decodeBase64, utf8 } from "../lib/shared/text.js";

/** Largest content one write takes (the request body carries it). */
export const MAX_WRITE_BYTES = 25 * 1024 * 1024;

const description = `Write a file: create it, or replace all its content.
- file_path: a workspace path; parent directories are implicit.
- content: the full new content. encoding: "utf-8" (default: "utf-8") or "base64" for binary content.
- A new file is created only if nothing exists there (ALREADY_EXISTS if another call created it first).
- To replace an existing file you must have read it in this session (NOT_READ), and it must not have changed since (FILE_MODIFIED: read it again). Prefer edit for changes to part of a file.
- Identical content gives NO_CHANGE and writes nothing. At most ${MAX_WRITE_BYTES / 1024 / 1024} MB.
Returns: {file_path, bytes_written, created, etag}`;

export default defineTool({
  name: "write",
  description,
  category: "file",
  permission: "write",
  opens: "file_path",
  onKnownRecord: "change",
  summary: "Create a file or replace all of its content (utf-8 text, or base64 for binary). Overwriting an existing file requires reading it first in this session.",
  annotations: { title: "Write file", readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  output: z.object({ file_path: z.string(), bytes_written: z.number().int(), created: z.boolean(), etag: z.string() }),
  input: z.object({
    file_path: z.string().min(1).describe("Path of the file in the workspace"),
    content: z.string().describe("The complete content to write"),
    encoding: z.enum(["utf-8", "base64"]).optional().describe('How content is encoded (default: "utf-8")'),
  }),
  async execute(args, { ws }) {
    const path = normalizeFileToWrite(args.file_path, "file_path");
    let bytes: Uint8Array;
    if (args.encoding === "base64") {
      const decoded = decodeBase64(args.content);
      if (!decoded) throw new ToolError("INVALID_ARGUMENT", "content is not valid base64.");
      bytes = decoded;
    } else {
      bytes = utf8.encode(args.content);
    }
    if (bytes.length > MAX_WRITE_BYTES) {
      throw new ToolError("FILE_TOO_LARGE", tooLargeMessage(path, bytes.length), { size: bytes.length, max: MAX_WRITE_BYTES });
    }
    // One GET: the version the write replaces, and its bytes (NO_CHANGE, and undo's before-image: no second GET).
    const current = await ws.openForChange(path, MAX_WRITE_BYTES, (info) => ws.requireReadUnchanged(path, info));
    let info;
    if (current) {
      if (current.bytes && bytesEqual(current.bytes, bytes)) throw new ToolError("NO_CHANGE", `${path} already has exactly this content; nothing was written.`, { path, etag: current.info.etag });
      info = await ws.put(path, bytes, { ifMatch: current.info.etag, replaces: current.info.size, record: true, last: true });
    } else {
      info = await ws.put(path, bytes, { create: true, record: true, last: true });
    }
    const created = current === null;
    return {
      title: path,
      output: `${created ? "Created" : "Wrote"} ${path} (${counted(bytes.length, "byte")}).`,
      data: { file_path: path, bytes_written: bytes.length, created, etag: info.etag },
    };
  },
});

/**
 * A write past MAX_WRITE_BYTES: what the model can do itself (it cannot send the app's PUT): write
 * the content in parts, each its own file, and join them with bash; or make the file with a command.
 */
function tooLargeMessage(path: string, size: number): string {
  const parts = Array.from({ length: Math.ceil(size / MAX_WRITE_BYTES) }, (_, i) => `${path}.part${i + 1}`);
  const words = parts.map(bashPath).join(" ");
  return `content is ${size} bytes; write takes at most ${MAX_WRITE_BYTES} (${MAX_WRITE_BYTES / 1024 / 1024} MB). Write it in ${parts.length} parts of at most ${MAX_WRITE_BYTES / 1024 / 1024} MB, one write call each (${parts.join(", ")}), then join them with bash: cat ${words} > ${bashPath(path)} && rm ${words}. Or, if a program can produce the content, make the file with bash or run_code instead of sending it. Your app can upload it whole (PUT /v1/workspaces/{ws}/files/${path}).`;
}

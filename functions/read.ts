import { z } from "@hono/zod-openapi";
import { ToolError } from "../lib/shared/errors.js";
import { bashPath } from "../lib/layout/bash-path.js";
import { normalizeFilePath } from "../lib/layout/paths.js";
import { defineTool } from "../lib/contract/tool.js";
import { counted, encodeBase64, lineEnding, looksBinary, sniffType } from "../lib/shared/text.js";
import { collect, peekBytes, readLinePage } from "../lib/workspace/lines.js";
import { recordingChunks } from "../lib/shared/chunks.js";
import { MAX_ENTRY_BYTES } from "../lib/workspace/version-cache.js";

export const MAX_LINE_CHARS = 2000;
export const MAX_OUTPUT_BYTES = 50 * 1024;
export const MAX_BASE64_BYTES = 64 * 1024;
const SNIFF_BYTES = 8192;
/** The one buffer a read streams the file through (lib/shared/chunks.ts); a smaller file's size. */
const READ_BUFFER_BYTES = 256 * 1024;
/** Below this size a read also counts the file's lines, to report total_lines. */
const COUNT_LINES_BELOW = 4 * 1024 * 1024;

const description = `Read a file from the workspace. Returns numbered lines like \`cat -n\` (line number, tab, text).
- file_path: a workspace path; "src/a.ts", "/src/a.ts" and "/workspace/src/a.ts" (the path bash shows) are the same file.
- offset: 1-based line to start at (default: 1). limit: how many lines (default: 2000).
- Lines longer than ${MAX_LINE_CHARS} characters are cut with a marker. Output stops at ${MAX_OUTPUT_BYTES / 1024} KB; the note at the end tells you the offset to continue from.
- Large files are paged: read them in pieces with offset and limit, or search them with grep.
- Binary files are refused with BINARY_FILE unless encoding is "base64" (default: "utf-8"; base64 returns files up to ${MAX_BASE64_BYTES / 1024} KB whole).
- A directory gives IS_DIRECTORY: use ls. A missing file gives NOT_FOUND with similar paths.
- Reading records the file's version for this session: write and edit require it.
Returns: {file_path, etag, start_line, lines_returned, total_lines?, truncated, next_offset, size, modified, line_endings}`;

/** What read says of lines it cut: how many, and how to see the rest of one (read pages by lines, never within one). */
function cutLinesNote(path: string, cut: number, first: number): string {
  const quoted = bashPath(path);
  return (
    `[${counted(cut, "line")} longer than ${MAX_LINE_CHARS} characters ${cut === 1 ? "was" : "were"} cut (the first: line ${first}); read shows no more of a line. ` +
    `To see the rest, grep for text in it (content mode shows the part of the line around each match), or print more of it with bash: sed -n '${first}p' ${quoted} | cut -c${MAX_LINE_CHARS + 1}-${MAX_LINE_CHARS * 2}]`
  );
}

export default defineTool({
  name: "read",
  description,
  category: "file",
  permission: "read",
  opens: "file_path",
  onKnownRecord: "read",
  summary: "Read a workspace file as numbered lines (cat -n style), paged by offset/limit (1-based lines, default 2000); encoding \"base64\" returns the bytes of a binary file. Reading a file is required before edit, insert or overwrite.",
  annotations: { title: "Read file", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  output: z.object({ file_path: z.string(), etag: z.string(), size: z.number().int(), modified: z.string(), encoding: z.literal("base64").optional(), content_base64: z.string().optional(), type: z.string().optional(), start_line: z.number().int().optional(), lines_returned: z.number().int().optional(), total_lines: z.number().int().optional(), truncated: z.boolean().optional(), next_offset: z.number().int().nullable().optional(), line_endings: z.string().optional() }),
  input: z.object({
    file_path: z.string().min(1).describe("Path of the file in the workspace"),
    offset: z.number().int().min(1).optional().describe("1-based line to start at (default: 1)"),
    limit: z.number().int().min(1).max(100_000).optional().describe("Number of lines to return (default: 2000)"),
    encoding: z.enum(["utf-8", "base64"]).optional().describe('"base64" returns the raw bytes (default: "utf-8")'),
  }),
  async execute(args, { ws }) {
    const path = normalizeFilePath(args.file_path);
    ws.prefetchReadRecord(path); // the session record (recordRead) is read beside the file, if needed before the answer
    // One GET answers every read: the file's size and version, the bytes to sniff, then the page,
    // streamed from the same body. A missing file costs one more look to say why (directory or not found).
    const got = await ws.get(path);
    if (!got) {
      await ws.requireFile(path);
      throw await ws.notFound(path);
    }
    const info = { size: got.size, etag: got.etag, modified: got.modified, writer: got.writer };
    const { head, whole, rest } = await peekBytes(got.body, SNIFF_BYTES, Math.max(SNIFF_BYTES, Math.min(got.size, READ_BUFFER_BYTES)));
    const base = { file_path: path, etag: info.etag, size: info.size, modified: info.modified.toISOString() };

    if (args.encoding === "base64") {
      if (info.size > MAX_BASE64_BYTES) {
        await rest.cancel();
        throw new ToolError("FILE_TOO_LARGE", `${path} is ${info.size} bytes; base64 reads return at most ${MAX_BASE64_BYTES}: look at parts of it with bash (file, xxd -s <offset> -l <length> ${bashPath(path)}), or have your app download it (GET /v1/workspaces/{ws}/files/${path}).`, { path, size: info.size, max: MAX_BASE64_BYTES });
      }
      const bytes = whole ? head : await collect(rest);
      await ws.recordRead(path, info.etag, info.writer);
      ws.noteVersion(path, info, bytes);
      const b64 = encodeBase64(bytes);
      return { title: path, output: b64, data: { ...base, encoding: "base64", content_base64: b64, type: sniffType(bytes) } };
    }

    if (info.size === 0) {
      await ws.recordRead(path, info.etag, info.writer);
      ws.noteVersion(path, info, head);
      return {
        title: path,
        output: `(${path} is empty: 0 bytes)`,
        data: { ...base, start_line: 1, lines_returned: 0, total_lines: 0, truncated: false, next_offset: null, line_endings: "none" },
      };
    }

    const sniffed = head.subarray(0, SNIFF_BYTES);
    if (looksBinary(sniffed, whole && head.length <= SNIFF_BYTES)) {
      await rest.cancel();
      const type = sniffType(sniffed);
      throw new ToolError("BINARY_FILE", `${path} is a binary file (${type}, ${info.size} bytes). Pass encoding: "base64" to read its bytes.`, { path, size: info.size, type });
    }

    const offset = args.offset ?? 1;
    const limit = args.limit ?? 2000;
    // A small file read to its end is kept by the isolate: a write or edit of this version next needs no GET (version-cache.ts).
    const recorded = info.size <= MAX_ENTRY_BYTES ? recordingChunks(rest, MAX_ENTRY_BYTES) : null;
    const page = await readLinePage(recorded?.chunks ?? rest, { offset, limit, maxBytes: MAX_OUTPUT_BYTES, maxLineChars: MAX_LINE_CHARS, countBelowBytes: COUNT_LINES_BELOW, size: info.size });
    if (page.lines.length === 0 && page.totalLines !== undefined && offset > 1) {
      throw new ToolError("INVALID_ARGUMENT", `offset ${offset} is past the end of ${path}, which has ${page.totalLines} lines.`, { path, total_lines: page.totalLines });
    }
    await ws.recordRead(path, info.etag, info.writer);
    const kept = recorded?.whole();
    if (kept) ws.noteVersion(path, info, kept);

    const width = String(offset + page.lines.length).length;
    const numbered = page.lines.map((l, i) => `${String(offset + i).padStart(Math.max(6, width))}\t${l}`).join("\n");
    const last = offset + page.lines.length - 1;
    const more = page.stoppedBy !== "eof";
    const next = more ? last + 1 : null;
    let note = "";
    if (more) {
      const total = page.totalLines !== undefined ? ` of ${page.totalLines}` : "";
      const why = page.stoppedBy === "bytes" ? `output reached ${MAX_OUTPUT_BYTES / 1024} KB` : `limit of ${limit} lines reached`;
      note = `\n\n[Showing lines ${offset}-${last}${total} (${why}). Call read with offset=${next} to continue.]`;
    }
    if (page.cutLines) note += `\n${cutLinesNote(path, page.cutLines, page.firstCutLine!)}`;
    // The sniffed head says it; when it holds no line ending but more was read, the first one read does ("unknown": none in what was read, the file goes on).
    const sniffedEndings = lineEnding(new TextDecoder().decode(sniffed));
    const endings = sniffedEndings !== "none" || info.size <= sniffed.length ? sniffedEndings : (page.firstEnding ?? (page.totalLines !== undefined ? "none" : "unknown"));
    return {
      title: path,
      output: numbered + note,
      data: {
        ...base,
        start_line: offset,
        lines_returned: page.lines.length,
        ...(page.totalLines !== undefined ? { total_lines: page.totalLines } : {}),
        truncated: more,
        next_offset: next,
        line_endings: endings,
      },
    };
  },
});

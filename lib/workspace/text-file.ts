/** Loading and saving a text file for the edit tools, with the read-before-write rules. */
import { ToolError } from "../shared/errors.js";
import { looksBinary, sniffType, utf8 } from "../shared/text.js";
import type { Workspace } from "./workspace.js";
import type { FileInfo } from "../layout/files.js";

/** Largest file the edit tools load whole. */
export const MAX_EDIT_BYTES = 10 * 1024 * 1024;

/**
 * The current text of a file the session has read, unchanged since: one GET, the session record
 * read beside it (prefetch), the rule checked before the body is read.
 */
export async function loadForEdit(ws: Workspace, path: string): Promise<{ text: string; info: FileInfo }> {
  ws.records.prefetch(path);
  return decodeText(path, await ws.readForChange(path, MAX_EDIT_BYTES, (info) => ws.requireReadUnchanged(path, info)));
}

/**
 * The current text of a file (at most MAX_EDIT_BYTES, valid UTF-8), with the version read.
 * No read-before-write check: for tools whose input proves what the caller saw (apply_patch's
 * context lines); the write that follows is conditional on `info.etag`.
 */
export async function loadText(ws: Workspace, path: string): Promise<{ text: string; info: FileInfo; bytes: Uint8Array }> {
  return decodeText(path, await ws.readForChange(path, MAX_EDIT_BYTES, async () => {}));
}

function decodeText(path: string, { bytes, info }: { bytes: Uint8Array; info: FileInfo }): { text: string; info: FileInfo; bytes: Uint8Array } {
  // The whole file must be UTF-8: decoding invalid bytes would write U+FFFD back over them.
  if (looksBinary(bytes, true)) {
    throw new ToolError("BINARY_FILE", `${path} is a binary file or not valid UTF-8 (${sniffType(bytes)}); it cannot be edited as text. Use write with encoding: "base64".`, { path, size: info.size, type: sniffType(bytes) });
  }
  // ignoreBOM: a byte order mark is kept as text, so it is written back.
  return { text: new TextDecoder("utf-8", { fatal: false, ignoreBOM: true }).decode(bytes), info, bytes };
}

/**
 * What an empty old_string writes over (edit, multi_edit's first edit): no file (null: the write is
 * create-only), or an existing empty file (0 bytes), which it fills, as Claude Code's Edit does: there
 * is nothing to read first or to lose, and the write is conditional on that empty version (a writer
 * that filled it meanwhile makes it FILE_MODIFIED). A file with content, or an empty one that
 * `content` would leave empty, is ALREADY_EXISTS, `why` ends the message. Its result is saveEdit's `loaded`.
 */
export async function emptyOldStringTarget(ws: Workspace, path: string, content: string, why: string, details: Record<string, unknown> = {}): Promise<FileInfo | null> {
  const info = await ws.head(path);
  if (info && (info.size !== 0 || content === "")) {
    throw new ToolError("ALREADY_EXISTS", `${path} already exists and ${info.size ? "is not empty" : "is empty (an empty new_string would change nothing)"}; ${why}`, { path, ...details });
  }
  return info;
}

/** Writes the edited text over exactly the version that was loaded, and records it: the call's one change. */
export function saveEdit(ws: Workspace, path: string, text: string, loaded: FileInfo | null): Promise<FileInfo> {
  return ws.put(path, utf8.encode(text), { ...(loaded ? { ifMatch: loaded.etag, replaces: loaded.size } : { create: true }), record: true, last: true });
}

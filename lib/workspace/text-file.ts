/** Loading and saving a text file for the edit tools, with the read-before-write rules. */
import { ToolError } from "../errors.js";
import { looksBinary, sniffType, utf8 } from "../text.js";
import type { FileInfo, Workspace } from "./workspace.js";

/** Largest file the edit tools load whole. */
export const MAX_EDIT_BYTES = 10 * 1024 * 1024;

/** The current text of a file the session has read, unchanged since. */
export async function loadForEdit(ws: Workspace, path: string): Promise<{ text: string; info: FileInfo }> {
  const head = await ws.requireFile(path);
  await ws.requireReadUnchanged(path, head);
  return loadText(ws, path, head);
}

/**
 * The current text of a file (at most MAX_EDIT_BYTES, valid UTF-8), with the version read.
 * No read-before-write check: for tools whose input proves what the caller saw (apply_patch's
 * context lines); the write that follows is conditional on `info.etag`.
 */
export async function loadText(ws: Workspace, path: string, head?: FileInfo): Promise<{ text: string; info: FileInfo; bytes: Uint8Array }> {
  head ??= await ws.requireFile(path);
  const { bytes, info } = await ws.readBytes(head, MAX_EDIT_BYTES);
  if (info.etag !== head.etag) {
    throw new ToolError("FILE_MODIFIED", `${path} was modified since you last read it. Read it again, then retry.`, { path, current_etag: info.etag });
  }
  // The whole file must be UTF-8: decoding invalid bytes would write U+FFFD back over them.
  if (looksBinary(bytes, true)) {
    throw new ToolError("BINARY_FILE", `${path} is a binary file or not valid UTF-8 (${sniffType(bytes)}); it cannot be edited as text. Use write with encoding: "base64".`, { path, size: info.size, type: sniffType(bytes) });
  }
  // ignoreBOM: a byte order mark is kept as text, so it is written back.
  return { text: new TextDecoder("utf-8", { fatal: false, ignoreBOM: true }).decode(bytes), info, bytes };
}

/** Writes the edited text over exactly the version that was loaded, and records it. */
export async function saveEdit(ws: Workspace, path: string, text: string, loaded: FileInfo | null): Promise<FileInfo> {
  const info = await ws.put(path, utf8.encode(text), loaded ? { ifMatch: loaded.etag } : { create: true });
  await ws.recordWrite(path, info.etag);
  return info;
}

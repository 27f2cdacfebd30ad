/**
 * Whole files through a Workspace: the bytes of files about to be searched, shown or changed.
 * Every read counts its bytes (usage) and notes what undo needs (the before-image of a change).
 * The Workspace's readMany, readBytes, openForChange and readForChange are these functions.
 */
import { ToolError } from "../shared/errors.js";
import { hasReadMany } from "../layers/layered-driver.js";
import type { WorkspaceCore as Workspace } from "./workspace-types.js";
import type { FileInfo } from "../layout/files.js";

const tooLarge = (path: string, size: number, max: number) =>
  new ToolError("FILE_TOO_LARGE", `${path} is ${size} bytes; this operation handles at most ${max}. Read it in pages with offset and limit, or search it with grep.`, { path, size, max });

/**
 * The bytes of many small listed files (null for one gone since). Over a layered workspace the
 * ones still at their listed (lower) version come from their packs in a few range reads.
 */
export async function readMany(ws: Workspace, files: readonly FileInfo[]): Promise<(Uint8Array | null)[]> {
  let out: (Uint8Array | null)[];
  if (hasReadMany(ws.driver)) out = await ws.driver.readMany(files.map((f) => ({ key: ws.key(f.path), etag: f.etag })));
  else {
    out = [];
    // One GET per file, 6 at a time (a Worker's concurrent connections).
    for (let i = 0; i < files.length; i += 6) {
      out.push(...(await Promise.all(files.slice(i, i + 6).map(async (f) => {
        const r = await ws.driver.get(ws.key(f.path));
        return r ? new Uint8Array(await new Response(r.body).arrayBuffer()) : null;
      }))));
    }
  }
  for (const b of out) ws.bytesRead += b?.length ?? 0;
  return out;
}

/** The whole of a file the caller has looked up (`file`), as bytes; FILE_TOO_LARGE past maxBytes. */
export async function readBytes(ws: Workspace, file: FileInfo, maxBytes: number): Promise<{ bytes: Uint8Array; info: FileInfo }> {
  const { path, size } = file;
  if (size > maxBytes) throw tooLarge(path, size, maxBytes);
  const r = await ws.get(path);
  if (!r) throw await ws.notFound(path);
  const bytes = new Uint8Array(await new Response(r.body).arrayBuffer());
  ws.undo?.noteRead(path, r.etag, bytes);
  return { bytes, info: ws.toInfo(r) };
}

/**
 * A file about to be changed, in ONE GET (no HEAD first); null when there is no such file.
 * `check(info)` (the read-before-write rule) runs before the body is read; the bytes are read
 * (and kept for undo's before-image) when the file has at most `holdBytes`, else the body is
 * cancelled unread and `bytes` is null.
 */
export async function openForChange(ws: Workspace, path: string, holdBytes: number, check: (info: FileInfo) => Promise<void>): Promise<{ info: FileInfo; bytes: Uint8Array | null } | null> {
  const r = await ws.driver.get(ws.key(path));
  if (!r) return null;
  const info = ws.toInfo(r);
  try {
    await check(info);
  } catch (e) {
    await r.body.cancel().catch(() => {});
    throw e;
  }
  if (info.size > holdBytes) {
    await r.body.cancel().catch(() => {});
    return { info, bytes: null };
  }
  const bytes = new Uint8Array(await new Response(r.body).arrayBuffer());
  ws.bytesRead += bytes.length;
  ws.undo?.noteRead(path, r.etag, bytes);
  ws.noteVersion(path, info, bytes);
  return { info, bytes };
}

/** The whole of a file about to be changed (openForChange): NOT_FOUND / IS_DIRECTORY with a hint, FILE_TOO_LARGE past maxBytes (after `check`). */
export async function readForChange(ws: Workspace, path: string, maxBytes: number, check: (info: FileInfo) => Promise<void>): Promise<{ bytes: Uint8Array; info: FileInfo }> {
  const r = await openForChange(ws, path, maxBytes, check);
  if (!r) {
    await ws.requireFile(path); // IS_DIRECTORY, or NOT_FOUND with similar paths
    throw await ws.notFound(path); // it appeared since: the caller has not seen this version
  }
  if (!r.bytes) throw tooLarge(path, r.info.size, maxBytes);
  return { bytes: r.bytes, info: r.info };
}


/**
 * A workspace (or one directory of it) as a tar.gz, streamed: the listing is taken first (it
 * gives the ETag, so If-None-Match is answered without reading a file), then each file is read
 * and written as one tar entry, small files a window ahead (Workspace.readMany: from packs in a few
 * range reads when the workspace is layered), large ones streamed in order,
 * the whole gzip-compressed as the client pulls it (flate.ts: level 1, for speed). Entry names are relative to the
 * exported directory, so importing with prefix = that directory restores the same paths.
 *
 * What a file changed during the export looks like: its newer bytes (the header is written
 * after the read, with the size read). A file deleted in between is left out. The ETag names
 * the listing the export began from.
 */
import { ToolError } from "../errors.js";
import { sha256Hex } from "../hash.js";
import type { FileInfo, Workspace } from "../workspace/workspace.js";
import { gzipStream } from "./flate.js";
import { END_OF_ARCHIVE, padding, tarHeader, tarLinkHeader } from "./tar-writer.js";
import { readLinks } from "../workspace/links.js";
import { isWithin } from "../paths.js";

const SMALL_FILE = 1024 * 1024;

export interface ExportListing {
  dir: string;
  files: FileInfo[];
  /** Symlinks below dir (path → target, docs/symlinks.md): written as tar symlink entries. */
  links: [string, string][];
}

/** Every file below `dir` (or `dir` itself when it is a file), at most `max`. */
export async function listForExport(ws: Workspace, dir: string, max: number): Promise<ExportListing> {
  const files: FileInfo[] = [];
  const links = [...(await readLinks(ws))].filter(([p]) => isWithin(p, dir) && p !== dir);
  for await (const f of ws.walk(dir)) {
    if (files.length >= max) throw new ToolError("PAYLOAD_TOO_LARGE", `${dir || "The workspace"} holds more than ${max} files; export its directories one by one (?path=).`, { path: dir, max });
    files.push(f);
  }
  if (files.length === 0 && links.length === 0 && dir !== "") {
    const file = await ws.head(dir);
    if (!file) throw await ws.notFound(dir, "Directory");
    return { dir, files: [file], links: [] };
  }
  return { dir, files, links };
}

/** The export's ETag: a digest of the listed path → etag pairs (and the directory exported). */
export async function exportEtag(listing: ExportListing): Promise<string> {
  const parts = [`v1\0${listing.dir}\n`];
  for (const f of listing.files) parts.push(`${f.path}\0${f.etag}\n`);
  for (const [p, t] of listing.links) parts.push(`${p}\0->${t}\n`);
  return (await sha256Hex(parts.join(""))).slice(0, 32);
}

const nameIn = (dir: string, path: string) => (dir === "" ? path : path === dir ? path.slice(path.lastIndexOf("/") + 1) : path.slice(dir.length + 1));

/** Small files are read a window at a time (Workspace.readMany: a few pack range reads when layered), the next window while this one is written. */
const WINDOW_FILES = 256;
const WINDOW_BYTES = 8 * 1024 * 1024;

function entryChunk(name: string, bytes: Uint8Array, modified: Date): Uint8Array {
  const head = tarHeader({ name, size: bytes.length, mtime: modified.getTime() / 1000 });
  const pad = padding(bytes.length);
  const chunk = new Uint8Array(head.length + bytes.length + pad.length);
  chunk.set(head, 0);
  chunk.set(bytes, head.length);
  return chunk;
}

/** The tar bytes, one chunk per small file (header + bytes + padding), large files chunk by chunk. */
async function* tarChunks(ws: Workspace, listing: ExportListing): AsyncGenerator<Uint8Array> {
  const { files, dir } = listing;
  // Windows: runs of small files (bounded by count and bytes); a large file is a window of its own.
  const windows: { from: number; to: number; small: boolean }[] = [];
  for (let i = 0; i < files.length; ) {
    if (files[i]!.size > SMALL_FILE) {
      windows.push({ from: i, to: i + 1, small: false });
      i++;
      continue;
    }
    let j = i;
    let bytes = 0;
    while (j < files.length && files[j]!.size <= SMALL_FILE && j - i < WINDOW_FILES && bytes + files[j]!.size <= WINDOW_BYTES) bytes += files[j++]!.size;
    if (j === i) j++;
    windows.push({ from: i, to: j, small: true });
    i = j;
  }
  const fetchWindow = (w: { from: number; to: number }) => {
    const p = ws.readMany(files.slice(w.from, w.to));
    p.catch(() => {});
    return p;
  };
  let ahead: Promise<(Uint8Array | null)[]> | null = null;
  for (let k = 0; k < windows.length; k++) {
    const w = windows[k]!;
    const nextSmall = windows.slice(k + 1).find((x) => x.small);
    if (w.small) {
      const got = await (ahead ?? fetchWindow(w));
      ahead = nextSmall ? fetchWindow(nextSmall) : null;
      for (let i = w.from; i < w.to; i++) {
        const bytes = got[i - w.from];
        if (bytes) yield entryChunk(nameIn(dir, files[i]!.path), bytes, files[i]!.modified);
      }
      continue;
    }
    if (!ahead && nextSmall) ahead = fetchWindow(nextSmall);
    const f = files[w.from]!;
    const r = await ws.get(f.path);
    if (!r) continue;
    yield tarHeader({ name: nameIn(dir, f.path), size: r.size, mtime: r.modified.getTime() / 1000 });
    const reader = r.body.getReader();
    for (;;) {
      const c = await reader.read();
      if (c.done) break;
      yield c.value;
    }
    yield padding(r.size);
  }
  for (const [p, target] of listing.links) yield tarLinkHeader(nameIn(dir, p), target);
  yield END_OF_ARCHIVE();
}

/** The export as a gzip-compressed tar stream, pulled by the client (backpressure reaches the reads). */
export function exportStream(ws: Workspace, listing: ExportListing): ReadableStream<Uint8Array> {
  const chunks = tarChunks(ws, listing);
  const tar = new ReadableStream<Uint8Array>({
    pull: async (c) => {
      const r = await chunks.next();
      if (r.done) c.close();
      else c.enqueue(r.value);
    },
    cancel: async () => {
      await chunks.return(undefined);
    },
  }, { highWaterMark: 0 });
  return gzipStream(tar);
}

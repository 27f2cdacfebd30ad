/**
 * A workspace (or one directory of it) as a tar.gz, streamed: the listing is taken first (it
 * gives the ETag, so If-None-Match is answered without reading a file), then each file is read
 * and written as one tar entry, small files fetched a few ahead, large ones streamed in order,
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
import { END_OF_ARCHIVE, padding, tarHeader } from "./tar-writer.js";

const PREFETCH = 6;
const SMALL_FILE = 1024 * 1024;

export interface ExportListing {
  dir: string;
  files: FileInfo[];
}

/** Every file below `dir` (or `dir` itself when it is a file), at most `max`. */
export async function listForExport(ws: Workspace, dir: string, max: number): Promise<ExportListing> {
  const files: FileInfo[] = [];
  for await (const f of ws.walk(dir)) {
    if (files.length >= max) throw new ToolError("PAYLOAD_TOO_LARGE", `${dir || "The workspace"} holds more than ${max} files; export its directories one by one (?path=).`, { path: dir, max });
    files.push(f);
  }
  if (files.length === 0 && dir !== "") {
    const file = await ws.head(dir);
    if (!file) throw await ws.notFound(dir, "Directory");
    return { dir, files: [file] };
  }
  return { dir, files };
}

/** The export's ETag: a digest of the listed path → etag pairs (and the directory exported). */
export async function exportEtag(listing: ExportListing): Promise<string> {
  const parts = [`v1\0${listing.dir}\n`];
  for (const f of listing.files) parts.push(`${f.path}\0${f.etag}\n`);
  return (await sha256Hex(parts.join(""))).slice(0, 32);
}

const nameIn = (dir: string, path: string) => (dir === "" ? path : path === dir ? path.slice(path.lastIndexOf("/") + 1) : path.slice(dir.length + 1));

/** The tar bytes, one chunk per small file (header + bytes + padding), large files chunk by chunk. */
async function* tarChunks(ws: Workspace, listing: ExportListing): AsyncGenerator<Uint8Array> {
  const { files, dir } = listing;
  const fetchSmall = async (f: FileInfo) => {
    const r = await ws.get(f.path);
    return r ? { info: r, bytes: new Uint8Array(await new Response(r.body).arrayBuffer()) } : null;
  };
  const ahead = new Map<number, ReturnType<typeof fetchSmall>>();
  let next = 0;
  const refill = (from: number) => {
    for (next = Math.max(next, from); next < files.length && next < from + PREFETCH; next++) {
      const f = files[next]!;
      if (f.size <= SMALL_FILE) {
        const p = fetchSmall(f);
        p.catch(() => {});
        ahead.set(next, p);
      }
    }
  };
  for (let i = 0; i < files.length; i++) {
    refill(i + 1);
    const f = files[i]!;
    const name = nameIn(dir, f.path);
    const prefetched = ahead.get(i);
    ahead.delete(i);
    if (prefetched || f.size <= SMALL_FILE) {
      const got = await (prefetched ?? fetchSmall(f));
      if (!got) continue;
      const head = tarHeader({ name, size: got.bytes.length, mtime: got.info.modified.getTime() / 1000 });
      const pad = padding(got.bytes.length);
      const chunk = new Uint8Array(head.length + got.bytes.length + pad.length);
      chunk.set(head, 0);
      chunk.set(got.bytes, head.length);
      yield chunk;
      continue;
    }
    const r = await ws.get(f.path);
    if (!r) continue;
    yield tarHeader({ name, size: r.size, mtime: r.modified.getTime() / 1000 });
    const reader = r.body.getReader();
    for (;;) {
      const c = await reader.read();
      if (c.done) break;
      yield c.value;
    }
    yield padding(r.size);
  }
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

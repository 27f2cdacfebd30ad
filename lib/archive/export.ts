/**
 * A workspace (or one directory of it) as a tar.gz, streamed: the listing is taken first (it
 * gives the ETag, so If-None-Match is answered without reading a file), then each file is read
 * and written as one tar entry, small files a window ahead (Workspace.readMany: from packs in a few
 * range reads when the workspace is layered), large ones streamed in order,
 * the whole gzip-compressed as the client pulls it (flate.ts: level 1, for speed). Entry names are relative to the
 * exported directory, so importing with prefix = that directory restores the same paths.
 * Every directory is an entry (type 5, mode 0755) before what it holds, explicit (empty) ones
 * included, as `tar c` writes them; files are 0755 when the workspace records them executable
 * (lib/layout/modes.ts), else 0644. A file's time is when it was last written to the workspace.
 *
 * What a file changed during the export looks like: its newer bytes (the header is written
 * after the read, with the size read). A file deleted in between is left out. The ETag names
 * the listing the export began from.
 */
import { ToolError } from "../shared/errors.js";
import { ancestorsOf, isWithin } from "../layout/paths.js";
import { sha256Hex } from "../shared/hash.js";
import type { ArchiveWorkspace as Workspace } from "./workspace-view.js";
import type { FileInfo } from "../layout/files.js";
import { gzipStream } from "./flate.js";
import { END_OF_ARCHIVE, padding, tarHeader, tarLinkHeader } from "./tar-writer.js";

const SMALL_FILE = 1024 * 1024;

const nameIn = (dir: string, path: string) => (dir === "" ? path : path === dir ? path.slice(path.lastIndexOf("/") + 1) : path.slice(dir.length + 1));

export interface ExportListing {
  dir: string;
  files: FileInfo[];
  /** Directory entries (names relative to `dir`, ending "/") to write before files[i]; index files.length: after the last file. */
  dirsBefore: string[][];
  /** The listed files the workspace records as executable. */
  exec: ReadonlySet<string>;
  /** Symlinks below dir (path → target, docs/symlinks.md): written as tar symlink entries after the files, their directories before them. */
  links: [string, string][];
}

/**
 * Every file, explicit directory and symlink below `dir` (or `dir` itself when it is a file), at most
 * `max` files and directories; `exec` and `linksAll`: the workspace's executable files and symlinks
 * (one read of its modes table, lib/layout/modes.ts).
 */
export async function listForExport(ws: Workspace, dir: string, max: number, exec: ReadonlySet<string>, linksAll: ReadonlyMap<string, string>): Promise<ExportListing> {
  const files: FileInfo[] = [];
  const dirsBefore: string[][] = [[]];
  const written = new Set<string>();
  const addDir = (path: string) => {
    const chain = [path, ...ancestorsOf(path)].filter((d) => d.length > dir.length && !written.has(d)).reverse();
    for (const d of chain) {
      written.add(d);
      dirsBefore[files.length]!.push(`${nameIn(dir, d)}/`);
    }
  };
  let n = 0;
  for await (const e of ws.walkEntries(dir)) {
    if (e.type === "directory" && e.path === dir) continue; // the exported directory's own marker
    if (n++ >= max) throw new ToolError("PAYLOAD_TOO_LARGE", `${dir || "The workspace"} holds more than ${max} files and directories; export its directories one by one (?path=).`, { path: dir, max });
    if (e.type === "directory") {
      addDir(e.path);
      continue;
    }
    const parent = ancestorsOf(e.path)[0];
    if (parent !== undefined) addDir(parent);
    const { type: _, ...info } = e;
    files.push(info);
    dirsBefore.push([]);
  }
  const links = [...linksAll].filter(([p]) => isWithin(p, dir) && p !== dir).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [p] of links) {
    const parent = ancestorsOf(p)[0];
    if (parent !== undefined) addDir(parent);
  }
  const keep = (l: ExportListing): ExportListing => ({ ...l, exec: new Set(l.files.filter((f) => exec.has(f.path)).map((f) => f.path)) });
  if (n === 0 && links.length === 0 && dir !== "") {
    const file = await ws.head(dir);
    if (!file) {
      if (await ws.headMarker(dir)) return keep({ dir, files, dirsBefore, exec, links });
      throw linkOnTheWay(dir, linksAll) ?? (await ws.notFound(dir, "Directory"));
    }
    return keep({ dir, files: [file], dirsBefore: [[], []], exec, links: [] });
  }
  return keep({ dir, files, dirsBefore, exec, links });
}

/** NOT_FOUND for an export of a link's path, or of a path below a link, said as such (an export never follows one); null when no link is on the way. */
function linkOnTheWay(dir: string, links: ReadonlyMap<string, string>): ToolError | null {
  const link = [dir, ...ancestorsOf(dir)].find((p) => links.has(p));
  if (link === undefined) return null;
  const target = links.get(link)!;
  const what = link === dir ? `${dir} is a symlink (-> ${target}), not a directory` : `${dir} lies below the symlink ${link} (-> ${target})`;
  return new ToolError("NOT_FOUND", `${what}: an export never follows links. Export the path of its target inside the workspace instead${link === dir ? ", or the directory that holds the link (the link is then in the archive)" : ""}.`, { path: dir, link, target, reason: "is_link" });
}

/** The export's ETag: a digest of what the archive holds (directories, files' etags and execute bits, symlinks) and the directory exported. */
export async function exportEtag(listing: ExportListing): Promise<string> {
  const parts = [`v3\0${listing.dir}\n`];
  listing.files.forEach((f, i) => {
    for (const d of listing.dirsBefore[i]!) parts.push(`${d}\n`);
    parts.push(`${f.path}\0${f.etag}\0${listing.exec.has(f.path) ? "x" : "-"}\n`);
  });
  for (const d of listing.dirsBefore[listing.files.length]!) parts.push(`${d}\n`);
  for (const [p, t] of listing.links) parts.push(`${p}\0->${t}\n`);
  return (await sha256Hex(parts.join(""))).slice(0, 32);
}

/** Small files are read a window at a time (Workspace.readMany: a few pack range reads when layered), the next window while this one is written. */
const WINDOW_FILES = 256;
const WINDOW_BYTES = 8 * 1024 * 1024;

const fileMode = (listing: ExportListing, path: string) => (listing.exec.has(path) ? 0o755 : 0o644);

function entryChunk(name: string, bytes: Uint8Array, modified: Date, mode: number): Uint8Array {
  const head = tarHeader({ name, size: bytes.length, mtime: modified.getTime() / 1000, mode });
  const pad = padding(bytes.length);
  const chunk = new Uint8Array(head.length + bytes.length + pad.length);
  chunk.set(head, 0);
  chunk.set(bytes, head.length);
  return chunk;
}

/** The tar bytes, one chunk per small file (header + bytes + padding), large files chunk by chunk. */
async function* tarChunks(ws: Workspace, listing: ExportListing): AsyncGenerator<Uint8Array> {
  const { files, dir } = listing;
  // Directories and symlinks carry the newest time of the listing (the archive is the same for the same listing).
  const dirTime = files.reduce((t, f) => Math.max(t, f.modified.getTime()), 0) / 1000;
  const dirs = function* (i: number) {
    for (const name of listing.dirsBefore[i]!) yield tarHeader({ name, size: 0, type: "5", mode: 0o755, mtime: dirTime });
  };
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
        yield* dirs(i);
        const bytes = got[i - w.from];
        if (bytes) yield entryChunk(nameIn(dir, files[i]!.path), bytes, files[i]!.modified, fileMode(listing, files[i]!.path));
      }
      continue;
    }
    if (!ahead && nextSmall) ahead = fetchWindow(nextSmall);
    const f = files[w.from]!;
    yield* dirs(w.from);
    const r = await ws.get(f.path);
    if (!r) continue;
    yield tarHeader({ name: nameIn(dir, f.path), size: r.size, mtime: r.modified.getTime() / 1000, mode: fileMode(listing, f.path) });
    const reader = r.body.getReader();
    for (;;) {
      const c = await reader.read();
      if (c.done) break;
      yield c.value;
    }
    yield padding(r.size);
  }
  yield* dirs(files.length);
  for (const [p, target] of listing.links) yield tarLinkHeader(nameIn(dir, p), target, dirTime); // the links table keeps no time of its own
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

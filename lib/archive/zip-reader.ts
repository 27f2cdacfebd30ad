/**
 * A zip reader that works from the central directory, over a spooled copy of the archive
 * (random access: see spool.ts). Streaming a zip from its local headers alone cannot be done
 * safely: a local header carries neither the entry's Unix mode (so a symlink looks like a file
 * holding its target) nor, with a data descriptor, its size. The central directory has both.
 *
 * Two streamed reads in total: the central directory, and the data region from the first entry
 * on, walked forward (three when an import asks what the directory declares before it writes:
 * `declared`, the directory once more, no data; lib/archive/import-bound.ts). Entries whose data would overlap or lie behind the previous one (the
 * overlapping-entry zip bomb) are refused. Each entry must inflate to exactly its declared size
 * (one byte more and it is refused) and to bytes whose CRC-32 is the one the central directory
 * declares; its local header, unless the sizes follow the data (flag bit 3), must declare the
 * same CRC-32 and sizes. Either mismatch refuses the import, naming the entry, before its last
 * byte is handed on (so nothing of it is written). Deflate goes through flate.ts (pulled, bounded). Zip64 sizes, offsets and counts are read. Names are
 * UTF-8 (the flag, or bytes that happen to be valid UTF-8); others are skipped as unreadable.
 * Encrypted entries and methods other than stored/deflate are skipped with a reason.
 */
import { crc32 } from "node:zlib";
import { ToolError } from "../shared/errors.js";
import { ByteReader, hex32, truncated, u16, u32 } from "./byte-reader.js";
import { decodeName, shownName, type ArchiveEntry, type EntryKind, type EntrySource } from "./entry.js";
import { inflateRaw } from "./flate.js";
import type { ArchiveLimits } from "./limits.js";

export interface RangeSource {
  size: number;
  read(offset: number, length: number): Promise<Uint8Array>;
  stream(offset: number, length: number): Promise<ReadableStream<Uint8Array>>;
}

const notZip = (why: string) => new ToolError("INVALID_ARGUMENT", `Not a readable zip archive (${why}). Send a tar, tar.gz or zip archive.`, { reason: "format" });
const u64 = (b: Uint8Array, o: number) => {
  const hi = u32(b, o + 4);
  if (hi >= 0x200000) throw notZip("a 64-bit size beyond 2^53");
  return u32(b, o) + hi * 0x100000000;
};

interface Directory {
  entries: number;
  offset: number;
  size: number;
}

async function findDirectory(src: RangeSource): Promise<Directory> {
  const tail = Math.min(src.size, 22 + 65535 + 20);
  const buf = await src.read(src.size - tail, tail);
  let eocd = -1;
  for (let i = buf.length - 22; i >= 0; i--) {
    if (u32(buf, i) === 0x06054b50 && i + 22 + u16(buf, i + 20) <= buf.length) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw notZip("no end of central directory record");
  let entries = u16(buf, eocd + 10);
  let size = u32(buf, eocd + 12);
  let offset = u32(buf, eocd + 16);
  if ((entries === 0xffff || size === 0xffffffff || offset === 0xffffffff) && eocd >= 20 && u32(buf, eocd - 20) === 0x07064b50) {
    const at = u64(buf, eocd - 20 + 8);
    const rec = await src.read(at, 56);
    if (u32(rec, 0) !== 0x06064b50) throw notZip("a broken zip64 record");
    entries = u64(rec, 32);
    size = u64(rec, 40);
    offset = u64(rec, 48);
  }
  if (offset + size > src.size) throw notZip("the central directory lies outside the file");
  return { entries, offset, size };
}

function kindOf(madeBy: number, external: number, name: string): EntryKind {
  if ((madeBy >> 8) === 3) {
    const fmt = (external >>> 16) & 0o170000;
    if (fmt === 0o120000) return "symlink";
    if (fmt === 0o040000) return "directory";
    if (fmt === 0o020000 || fmt === 0o060000) return "device";
    if (fmt === 0o010000) return "fifo";
    if (fmt !== 0 && fmt !== 0o100000) return "other";
  }
  return name.endsWith("/") ? "directory" : "file";
}

/** A damaged entry: the error names it (as `entry` in details too). */
const damaged = (name: string, why: string, reason: string) =>
  new ToolError("INVALID_ARGUMENT", `Zip entry ${JSON.stringify(name.slice(0, 100))} ${why}: the archive is damaged (or was altered), so nothing of it is imported. Re-create the zip from the original files, or send a tar/tar.gz, and import again.`, { reason, entry: name.slice(0, 300) });

/**
 * Exactly `size` bytes whose CRC-32 is `crc`, out of an entry's (inflated) stream, or an error
 * naming the entry. The last chunk is held back until the check has passed, so a consumer never
 * sees the whole of a damaged entry: its write fails instead of storing it.
 */
function verified(stream: ReadableStream<Uint8Array>, size: number, crc: number, name: string): ReadableStream<Uint8Array> {
  let seen = 0;
  let sum = 0;
  let last: Uint8Array | null = null;
  return stream.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, c) {
      seen += chunk.length;
      if (seen > size) throw damaged(name, `inflates to more than its declared ${size} bytes`, "size_mismatch");
      sum = crc32(chunk, sum);
      if (last) c.enqueue(last);
      last = chunk;
    },
    flush(c) {
      if (seen !== size) throw damaged(name, `inflates to ${seen} bytes, not its declared ${size}`, "size_mismatch");
      if (sum >>> 0 !== crc >>> 0) throw damaged(name, `fails its CRC-32 check (declared ${hex32(crc)}, its bytes give ${hex32(sum)})`, "crc_mismatch");
      if (last) c.enqueue(last);
    },
  }));
}

/** One record of the central directory, as it declares its entry. */
interface CentralRecord {
  name: string;
  kind: EntryKind;
  /** The bytes its body inflates to (0 for what has no body: directories, links' are their targets). */
  dataSize: number;
  unreadable?: string;
  unixMode: number;
  method: number;
  crc: number;
  csize: number;
  usize: number;
  local: number;
}

/** The central directory's records, in one streamed read of it. */
async function* centralRecords(src: RangeSource, dir: Directory): AsyncGenerator<CentralRecord> {
  const cd = new ByteReader(await src.stream(dir.offset, dir.size));
  try {
    for (let i = 0; i < dir.entries; i++) {
      const h = await cd.read(46, "the central directory");
      if (u32(h, 0) !== 0x02014b50) throw notZip("a broken central directory");
      const flags = u16(h, 8);
      const method = u16(h, 10);
      let csize = u32(h, 20);
      let usize = u32(h, 24);
      const nameLen = u16(h, 28);
      const extraLen = u16(h, 30);
      const commentLen = u16(h, 32);
      const external = u32(h, 38);
      let local = u32(h, 42);
      const nameBytes = await cd.read(nameLen, "the central directory");
      const extra = await cd.read(extraLen, "the central directory");
      await cd.skip(commentLen, "the central directory");
      // Zip64: the fields that are all ones come, in this order, from extra field 0x0001.
      for (let o = 0; o + 4 <= extra.length; o += 4 + u16(extra, o + 2)) {
        if (u16(extra, o) !== 0x0001) continue;
        let p = o + 4;
        if (usize === 0xffffffff) (usize = u64(extra, p)), (p += 8);
        if (csize === 0xffffffff) (csize = u64(extra, p)), (p += 8);
        if (local === 0xffffffff) local = u64(extra, p);
      }
      const decoded = decodeName(nameBytes);
      const name = decoded ?? shownName(nameBytes);
      const kind = kindOf(u16(h, 4), external, name);
      const unreadable = decoded === null ? "its name is not UTF-8" : flags & 1 ? "it is encrypted" : method !== 0 && method !== 8 ? `compression method ${method} is not supported (use deflate or store)` : undefined;
      yield {
        name,
        kind,
        dataSize: kind === "file" || kind === "other" ? usize : 0,
        ...(unreadable ? { unreadable } : {}),
        // Permission bits only from a zip made on Unix (and only when it set any: some tools leave them 0).
        unixMode: u16(h, 4) >> 8 === 3 ? (external >>> 16) & 0o7777 : 0,
        method,
        crc: u32(h, 16),
        csize,
        usize,
        local,
      };
    }
  } finally {
    await cd.cancel();
  }
}

/** What the central directory declares of an entry, before any of its data is read. */
export type DeclaredEntry = Pick<ArchiveEntry, "name" | "kind" | "size" | "unreadable">;

/** A spooled zip: its entries (`entries`), and what its central directory declares of them (`declared`: one more streamed read of the directory, no data). */
export function zipReader(src: RangeSource, limits: Pick<ArchiveLimits, "maxEntries">): { entries: EntrySource; declared(): AsyncGenerator<DeclaredEntry> } {
  let found: Promise<Directory> | undefined;
  const directory = () =>
    (found ??= findDirectory(src).then((dir) => {
      if (dir.entries > limits.maxEntries) {
        throw new ToolError("PAYLOAD_TOO_LARGE", `The zip holds ${dir.entries} entries; at most ${limits.maxEntries} are accepted. Split it into several imports.`, { entries: dir.entries, max: limits.maxEntries });
      }
      return dir;
    }));
  return {
    entries: readEntries(src, directory),
    async *declared() {
      for await (const r of centralRecords(src, await directory())) yield { name: r.name, kind: r.kind, size: r.dataSize, ...(r.unreadable ? { unreadable: r.unreadable } : {}) };
    },
  };
}

async function* readEntries(src: RangeSource, directory: () => Promise<Directory>): EntrySource {
  const dir = await directory();
  // One forward reader over the data region: its position is dataBase + consumed.
  let data: ByteReader | null = null;
  let dataBase = 0;
  /** The lowest offset the next entry may start at (its predecessor's local header and data end there or later). */
  let end = 0;
  try {
    for await (const { name, kind, dataSize, unreadable, unixMode, method, crc, csize, usize, local } of centralRecords(src, dir)) {
      const what = `entry ${JSON.stringify(name.slice(0, 100))}`;
      if (local < end) throw new ToolError("INVALID_ARGUMENT", `Zip ${what} overlaps the entry before it: refused (overlapping entries are a zip bomb pattern).`, { reason: "overlap" });
      end = local + 30 + csize;
      const open = async (): Promise<ByteReader> => {
        if (!data) {
          data = new ByteReader(await src.stream(local, src.size - local));
          dataBase = local;
        }
        const at = dataBase + data.consumed;
        if (at > local) throw new ToolError("INVALID_ARGUMENT", `Zip ${what} overlaps the entry before it: refused.`, { reason: "overlap" });
        await data.skip(local - at, what);
        const lh = await data.read(30, what);
        if (u32(lh, 0) !== 0x04034b50) throw notZip(`no local header for ${what}`);
        // Without a data descriptor (bit 3) the local header declares what the central directory does (sizes all ones: zip64, in its extra field).
        if (!(u16(lh, 6) & 8)) {
          if (u32(lh, 14) !== crc) throw damaged(name, `declares CRC-32 ${hex32(u32(lh, 14))} in its local header and ${hex32(crc)} in the central directory`, "crc_mismatch");
          const lc = u32(lh, 18);
          const lu = u32(lh, 22);
          if ((lc !== 0xffffffff && lc !== csize) || (lu !== 0xffffffff && lu !== usize)) throw damaged(name, `declares other sizes in its local header (${lc}/${lu} bytes) than in the central directory (${csize}/${usize})`, "size_mismatch");
        }
        await data.skip(u16(lh, 26) + u16(lh, 28), what);
        return data;
      };
      const body = async (): Promise<ReadableStream<Uint8Array>> => {
        const r = await open();
        const raw = r.stream(csize, what);
        return verified(method === 0 ? raw : inflateRaw(raw, (why) => damaged(name, `is not valid deflate data (${why})`, "inflate_failed")), usize, crc, name);
      };
      const entry: ArchiveEntry = {
        name,
        kind,
        // A link's body is its target: its size is declared like a file's, so a link whose target would be megabytes is refused unread (import.ts).
        size: kind === "symlink" ? usize : dataSize,
        ...(unixMode ? { mode: unixMode } : {}),
        ...(unreadable ? { unreadable } : {}),
        bytes: async () => new Uint8Array(await new Response(await body()).arrayBuffer()),
        stream: () => {
          const pending = body();
          let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
          return new ReadableStream<Uint8Array>({
            pull: async (c) => {
              reader ??= (await pending).getReader();
              const r = await reader.read();
              if (r.done) c.close();
              else c.enqueue(r.value);
            },
          }, { highWaterMark: 0 });
        },
      };
      // A body not read is simply not read: the data reader skips forward to the next entry it is asked for.
      yield entry;
    }
  } finally {
    await (data as ByteReader | null)?.cancel();
  }
}

export { truncated };

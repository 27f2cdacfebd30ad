/**
 * From a request body to archive entries: the format is sniffed from the first bytes (never
 * from the Content-Type): gzip (1f 8b) is inflated (flate.ts, with its bomb guard) and must
 * hold a tar; "PK" is a zip (spooled, see spool.ts); anything else is read as tar, whose
 * first header (its checksum, or "ustar" in a body shorter than one) tells "not an archive" from a cut one.
 */
import { ToolError } from "../shared/errors.js";
import { ByteReader, peek } from "./byte-reader.js";
import { gunzip } from "./flate.js";
import type { EntrySource } from "./entry.js";
import type { ArchiveLimits } from "./limits.js";
import type { Spool, SpooledArchive } from "./spool.js";
import { readTar } from "./tar-reader.js";
import { zipReader, type DeclaredEntry } from "./zip-reader.js";

export type ArchiveFormat = "tar" | "tar.gz" | "zip";

export interface OpenedArchive {
  format: ArchiveFormat;
  entries: EntrySource;
  /** What the archive declares of its entries before their data is read, where it can say so cheaply (a zip's central directory); absent for tar, whose headers come with the data. */
  declared?(): AsyncIterable<DeclaredEntry>;
  /** Releases what reading holds (the body, a spooled copy); safe to call twice. */
  close(): Promise<void>;
}

const isZip = (h: Uint8Array) => h[0] === 0x50 && h[1] === 0x4b && (h[2] === 3 || h[2] === 5) && (h[3] === 4 || h[3] === 6);

export async function openArchive(body: ReadableStream<Uint8Array>, opts: { limits: ArchiveLimits; spool: Spool; contentLength?: number }): Promise<OpenedArchive> {
  const { limits } = opts;
  const first = await peek(body, 4);
  if (first.head.length === 0) throw new ToolError("INVALID_ARGUMENT", "The body is empty. Send a tar, tar.gz or zip archive as the request body.", { reason: "empty" });
  if (isZip(first.head)) {
    const length = opts.contentLength;
    if (length === undefined) {
      await first.stream.cancel();
      throw new ToolError("INVALID_ARGUMENT", "A zip body needs a Content-Length header (it is spooled before reading). Send it, or send a tar or tar.gz, which stream.", { reason: "length_required" });
    }
    if (length > limits.maxArchiveBytes) {
      await first.stream.cancel();
      throw new ToolError("PAYLOAD_TOO_LARGE", `The zip is ${length} bytes; at most ${limits.maxArchiveBytes} are accepted. Split it into several imports.`, { size: length, max: limits.maxArchiveBytes });
    }
    const spooled: SpooledArchive = await opts.spool(first.stream, length);
    let closed = false;
    const zip = zipReader(spooled, limits);
    return {
      format: "zip",
      entries: zip.entries,
      declared: zip.declared,
      close: async () => {
        if (closed) return;
        closed = true;
        await spooled.dispose();
      },
    };
  }
  const gz = first.head[0] === 0x1f && first.head[1] === 0x8b;
  const reader = new ByteReader(gz ? gunzip(first.stream, limits) : first.stream);
  const entries = readTar(reader, limits, gz);
  return { format: gz ? "tar.gz" : "tar", entries: gz ? toGzipEnd(entries, reader) : entries, close: () => reader.cancel() };
}

/** What may follow a tar's end-of-archive blocks inside its gzip and still be read for the gzip's check: GNU tar pads to its record size (10 KiB; `-b` up to 32 MiB). */
export const GZIP_AFTER_TAR = 32 * 1024 * 1024;

/**
 * A tar.gz's entries, then the rest of its gzip (at most GZIP_AFTER_TAR bytes once inflated), so
 * that its trailers are checked (flate.ts, gzip-check.ts) before the import goes on to commit: the
 * tar reader stops at the end-of-archive blocks. More than that after the tar is left unread and unchecked.
 */
async function* toGzipEnd(entries: EntrySource, reader: ByteReader): EntrySource {
  yield* entries;
  await reader.drain(GZIP_AFTER_TAR);
}

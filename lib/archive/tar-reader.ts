/**
 * A streaming tar reader (POSIX ustar, pax extended headers, GNU long names and link targets) over a ByteReader.
 * Hand-written (about 150 lines) rather than a library so that every byte it buffers is bounded
 * here: pax and long-name records at `maxMetaBytes`, a run of metadata records at 8, bodies
 * handed out as pulled streams of their declared size. Sparse, multi-volume and other exotic
 * entries come out as kind "other" (skipped and reported by the policy).
 */
import { ToolError } from "../shared/errors.js";
import { ByteReader, truncated } from "./byte-reader.js";
import { decodeName, shownName, type ArchiveEntry, type EntryKind, type EntrySource } from "./entry.js";
import type { ArchiveLimits } from "./limits.js";

const BLOCK = 512;
const ascii = new TextDecoder("latin1");

const notTar = (why: string) => new ToolError("INVALID_ARGUMENT", `Not a readable tar archive (${why}). Send a tar, tar.gz or zip archive.`, { reason: "format" });

/** The body's first bytes are no tar header (a tar inside a gzip for tar.gz): it is no archive we read. */
const notAnArchive = (why: string, gzip: boolean) =>
  new ToolError(
    "INVALID_ARGUMENT",
    `The body is not a tar, tar.gz or zip archive (${gzip ? "it is gzip, but what it holds is not a tar: " : ""}${why}). Send one of those as the request body, with Content-Type application/x-tar, application/gzip, application/zip or application/octet-stream (the format is recognised from the bytes), e.g. tar czf - dir | curl --data-binary @- -H 'content-type: application/gzip' ….`,
    { reason: "not_an_archive", accepted: ["tar", "tar.gz", "zip"] },
  );

function field(h: Uint8Array, offset: number, length: number): Uint8Array {
  const f = h.subarray(offset, offset + length);
  const nul = f.indexOf(0);
  return nul < 0 ? f : f.subarray(0, nul);
}

/** An octal field, or GNU base-256 (high bit of the first byte set). */
function number(h: Uint8Array, offset: number, length: number): number {
  if (h[offset]! & 0x80) {
    if (h[offset] === 0xff) throw notTar("a negative number");
    let n = h[offset]! & 0x7f;
    for (let i = 1; i < length; i++) n = n * 256 + h[offset + i]!;
    return n;
  }
  const text = ascii.decode(field(h, offset, length)).trim();
  if (text === "") return 0;
  if (!/^[0-7]+$/.test(text)) throw notTar(`a malformed number field ${JSON.stringify(text.slice(0, 20))}`);
  return parseInt(text, 8);
}

/** The permission bits, or undefined when the field is not a number (the mode is not worth refusing an archive for). */
function modeOf(h: Uint8Array): number | undefined {
  try {
    return number(h, 100, 8) & 0o7777;
  } catch {
    return undefined;
  }
}

function checksumOk(h: Uint8Array): boolean {
  if (!/^[0-7 \0]*$/.test(ascii.decode(h.subarray(148, 156)))) return false; // text, not an octal checksum
  let unsigned = 0;
  let signed = 0;
  for (let i = 0; i < BLOCK; i++) {
    const b = i >= 148 && i < 156 ? 32 : h[i]!;
    unsigned += b;
    signed += b > 127 ? b - 256 : b;
  }
  const want = number(h, 148, 8);
  return want === unsigned || want === signed;
}

const KINDS: Record<string, EntryKind> = { "0": "file", "\0": "file", "7": "file", "1": "hardlink", "2": "symlink", "3": "device", "4": "device", "5": "directory", "6": "fifo" };

/** pax records "len key=value\n": the keys we use (path, linkpath, size). */
function parsePax(bytes: Uint8Array): Map<string, string> {
  const out = new Map<string, string>();
  let i = 0;
  while (i < bytes.length) {
    const space = bytes.indexOf(0x20, i);
    if (space < 0) break;
    const len = parseInt(ascii.decode(bytes.subarray(i, space)), 10);
    if (!(len > 0) || i + len > bytes.length) throw notTar("a malformed pax record");
    const rec = bytes.subarray(space + 1, i + len - 1);
    const eq = rec.indexOf(0x3d);
    if (eq > 0) {
      const key = ascii.decode(rec.subarray(0, eq));
      const value = decodeName(rec.subarray(eq + 1));
      if (value !== null) out.set(key, value);
      else if (key === "path" || key === "linkpath") out.set(`${key}!`, shownName(rec.subarray(eq + 1))); // not UTF-8 (kept to name it): the header's cut name is not it either
    }
    i += len;
  }
  return out;
}

const pad = (n: number) => (BLOCK - (n % BLOCK)) % BLOCK;

/** `gzip`: the tar came out of a gzip (tar.gz), for the message when it is no tar at all. */
export async function* readTar(reader: ByteReader, limits: Pick<ArchiveLimits, "maxMetaBytes">, gzip = false): EntrySource {
  let pax = new Map<string, string>();
  let longName: string | null | undefined;
  /** The GNU long name as a report shows it, when it is not UTF-8. */
  let longShown = "";
  let longLink: string | null | undefined;
  let metaRun = 0;
  let index = 0;
  for (let atStart = true; ; atStart = false) {
    const h = await reader.readUpTo(BLOCK);
    if (h.length === 0) return; // no end-of-archive blocks: accepted, as GNU tar does
    if (h.length < BLOCK) {
      // A cut tar still shows its first header's "ustar" magic; a short body without it was never a tar.
      if (atStart && ascii.decode(h.subarray(257, 262)) !== "ustar") throw notAnArchive(`${h.length} bytes, shorter than one tar header`, gzip);
      throw truncated("a tar header");
    }
    if (h.every((b) => b === 0)) return; // end of archive; what follows is never read
    if (!checksumOk(h)) throw atStart ? notAnArchive("its first 512 bytes are not a tar header", gzip) : notTar(`bad header checksum after entry ${index}`);
    const type = String.fromCharCode(h[156]!);
    const size = number(h, 124, 12);
    const mode = modeOf(h);
    if (type === "x" || type === "g" || type === "L" || type === "K") {
      if (++metaRun > 8) throw notTar("more than 8 metadata records in a row");
      if (size > limits.maxMetaBytes) throw new ToolError("PAYLOAD_TOO_LARGE", `A tar metadata record is ${size} bytes; at most ${limits.maxMetaBytes} are accepted.`, { size, max: limits.maxMetaBytes });
      const body = await reader.read(size, "a tar metadata record");
      await reader.skip(pad(size), "a tar metadata record");
      if (type === "x") pax = parsePax(body);
      else if (type === "L") {
        longName = decodeName(field(body, 0, body.length));
        longShown = shownName(field(body, 0, body.length));
      }
      else if (type === "K") longLink = decodeName(field(body, 0, body.length)); // GNU tar's link target over 100 bytes
      continue; // "g" (global) changes nothing we use
    }
    metaRun = 0;
    index++;
    const magic = ascii.decode(h.subarray(257, 263));
    let rawName: string | null;
    /** The name a report shows when it is not UTF-8 (rawName null). */
    let shown = "";
    if (pax.has("path")) rawName = pax.get("path")!;
    else if (pax.has("path!")) (rawName = null), (shown = pax.get("path!")!);
    else if (longName === null) (rawName = null), (shown = longShown);
    else if (longName !== undefined) rawName = longName;
    else {
      const name = field(h, 0, 100);
      const prefix = magic === "ustar\0" ? field(h, 345, 155) : new Uint8Array(0);
      const p = prefix.length ? decodeName(prefix) : "";
      const n = decodeName(name);
      rawName = p === null || n === null ? null : p ? `${p}/${n}` : n;
      if (rawName === null) shown = prefix.length ? `${shownName(prefix)}/${shownName(name)}` : shownName(name);
    }
    // A target that is no UTF-8 (null) is refused by the import, like one too long (import.ts admitted).
    // A symlink's target, or the archive name of the file a hard link names.
    const linkTarget = (type !== "2" && type !== "1") || pax.has("linkpath!") ? null : pax.get("linkpath") ?? (longLink !== undefined ? longLink : decodeName(field(h, 157, 100)));
    const paxSize = pax.get("size");
    const bodySize = paxSize !== undefined && /^\d+$/.test(paxSize) ? Number(paxSize) : size;
    pax = new Map();
    longName = undefined;
    longLink = undefined;
    let kind: EntryKind = KINDS[type] ?? "other";
    // Links, devices, fifos and directories carry no data in the archive whatever their size field says.
    const dataSize = "123456".includes(type) ? 0 : bodySize;
    if (kind === "file" && rawName?.endsWith("/")) kind = "directory"; // old tars mark directories by the slash
    let taken = false;
    const what = `entry ${JSON.stringify((rawName ?? "?").slice(0, 100))}`;
    const entry: ArchiveEntry = {
      name: rawName ?? shown,
      kind,
      size: dataSize,
      ...(mode !== undefined ? { mode } : {}),
      ...(linkTarget ? { linkTarget } : {}),
      ...(rawName === null ? { unreadable: "its name is not UTF-8" } : {}),
      bytes: async () => {
        taken = true;
        return reader.read(dataSize, what);
      },
      stream: () => {
        taken = true;
        return reader.stream(dataSize, what);
      },
    };
    const before = reader.consumed;
    yield entry;
    // Whatever the consumer did not read of the body (a skipped entry, a failed write) is skipped here.
    const read = reader.consumed - before;
    if (!taken || read < dataSize) await reader.skip(dataSize - read, what);
    await reader.skip(pad(dataSize), what);
  }
}

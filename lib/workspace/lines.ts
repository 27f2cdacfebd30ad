/**
 * Pages of lines out of a byte stream, without holding the file: lines before `offset`
 * are counted at the byte level (never decoded), the page is decoded line by line, and
 * the stream is cancelled as soon as the page is full (unless counting to the end is cheap).
 * The stream is read into one reused buffer (chunks.ts): the page's bytes are copied out of it.
 */
import { concatBytes } from "../shared/text.js";
import { type Chunks, prepend, reusedChunks } from "../shared/chunks.js";
export interface LinePage {
  /** Lines of the page, without their line terminators ("\r" of CRLF removed). */
  lines: string[];
  /** 1-based number of the first line returned. */
  start: number;
  /** Lines of the page cut at maxLineChars. */
  cutLines: number;
  /** 1-based number of the page's first cut line. */
  firstCutLine?: number;
  /** Why the page ended. */
  stoppedBy: "eof" | "limit" | "bytes";
  /** Lines in the file, when the whole stream was read. */
  totalLines?: number;
  /** How the first line that has an ending ends, when the bytes read held one (read's line_endings past its sniff). */
  firstEnding?: "lf" | "crlf";
}

export interface LinePageOptions {
  offset: number;
  limit: number;
  /** Stop before the page's text exceeds this many bytes. */
  maxBytes: number;
  maxLineChars: number;
  /** Keep counting lines to the end when the file is at most this big (to report total_lines). */
  countBelowBytes: number;
  size: number;
}

const decoder = new TextDecoder("utf-8");
const encoder = new TextEncoder();

export async function readLinePage(chunks: Chunks, o: LinePageOptions): Promise<LinePage> {
  const page: LinePage = { lines: [], start: o.offset, cutLines: 0, stoppedBy: "eof" };
  let line = 1; // number of the line being read
  let pending: Uint8Array[] = []; // bytes of the current line, in the page window (at most keepBytes)
  let pendingLen = 0;
  let overflowUnits = 0; // UTF-16 length of the line's bytes beyond keepBytes (counted, not kept)
  let lastByte = -1; // last byte of the current line
  // Enough bytes to decode more than maxLineChars characters (at most 3 bytes per UTF-16 unit);
  // the rest of a longer line is only counted, so one huge line is never held in memory.
  const keepBytes = o.maxLineChars * 3 + 4;
  let pageBytes = 0;
  let full = false;
  let tailBytes = 0; // bytes since the last line feed
  let base = 0; // stream offset of the current chunk
  let pageEnd = -1; // stream offset just after the page's last line feed

  const keep = (seg: Uint8Array) => {
    if (seg.length === 0) return;
    lastByte = seg[seg.length - 1]!;
    const room = Math.max(0, keepBytes - pendingLen);
    if (seg.length <= room) {
      pending.push(seg.slice()); // the chunk's buffer is reused by the next read
      pendingLen += seg.length;
      return;
    }
    if (room > 0) pending.push(seg.slice(0, room));
    pendingLen += room;
    overflowUnits += utf16Units(seg.subarray(room));
  };

  const emit = () => {
    const raw = concatBytes(pending);
    const overflow = overflowUnits > 0;
    pending = [];
    pendingLen = 0;
    let text = decoder.decode(raw);
    let size = raw.length; // the cost is counted in UTF-8 bytes, as the cap is
    let chars = text.length;
    if (overflow) {
      chars = utf16Units(raw) + overflowUnits - (lastByte === 13 ? 1 : 0);
      overflowUnits = 0;
    } else if (text.endsWith("\r")) {
      text = text.slice(0, -1);
      size--;
      chars--;
    }
    lastByte = -1;
    const cut = chars > o.maxLineChars;
    if (cut) {
      text = `${text.slice(0, o.maxLineChars)}… [line cut: ${chars} characters]`;
      size = encoder.encode(text).length;
    }
    const cost = size + 8;
    if (page.lines.length > 0 && pageBytes + cost > o.maxBytes) {
      page.stoppedBy = "bytes";
      return false;
    }
    pageBytes += cost;
    page.lines.push(text);
    if (cut) {
      page.cutLines++;
      page.firstCutLine ??= page.start + page.lines.length - 1;
    }
    if (page.lines.length >= o.limit) page.stoppedBy = "limit";
    return page.lines.length < o.limit;
  };

  /**
   * The page's next lines that end in `value` from `pos`, as emit would take them one by one, while
   * none is long enough to be cut (bytes <= maxLineChars: a UTF-16 length is never more) and each
   * fits the page: their bytes decoded once and split at "\n" (a byte UTF-8 uses for nothing else).
   * Null when not even one such line is there (the line-by-line path takes it).
   */
  const batch = (value: Uint8Array, pos: number): { lines: number; end: number } | null => {
    let p = pos;
    let n = 0;
    let bytes = 0;
    while (page.lines.length + n < o.limit) {
      const nl = value.indexOf(10, p);
      if (nl === -1 || nl - p > o.maxLineChars) break;
      const cost = nl - p - (nl > p && value[nl - 1] === 13 ? 1 : 0) + 8;
      if (page.lines.length + n > 0 && pageBytes + bytes + cost > o.maxBytes) break;
      bytes += cost;
      n++;
      p = nl + 1;
    }
    if (n === 0) return null;
    for (const text of decoder.decode(value.subarray(pos, p - 1)).split("\n")) page.lines.push(text.endsWith("\r") ? text.slice(0, -1) : text);
    pageBytes += bytes;
    if (page.lines.length >= o.limit) {
      page.stoppedBy = "limit";
      full = true;
    }
    return { lines: n, end: p };
  };

  let prevByte = -1; // the last byte of the chunk before
  for (;;) {
    const value = await chunks.next();
    if (!value) break;
    if (page.firstEnding === undefined) {
      const nl = value.indexOf(10);
      if (nl >= 0) page.firstEnding = (nl > 0 ? value[nl - 1] : prevByte) === 13 ? "crlf" : "lf";
      else if (value.length) prevByte = value[value.length - 1]!;
    }
    let pos = 0;
    while (pos <= value.length) {
      // Whole short lines of the page at the start of a line: decoded together (batch), not one by one.
      if (!full && line >= o.offset && pendingLen === 0) {
        const b = batch(value, pos);
        if (b) {
          line += b.lines;
          pos = b.end;
          tailBytes = 0;
          if (full) pageEnd = base + pos;
          continue;
        }
      }
      const nl = value.indexOf(10, pos);
      const end = nl === -1 ? value.length : nl;
      if (!full && line >= o.offset) keep(value.subarray(pos, end));
      if (nl === -1) {
        tailBytes += value.length - pos;
        break;
      }
      tailBytes = 0;
      if (!full && line >= o.offset) {
        full = !emit();
        if (full) pageEnd = base + nl + 1;
      }
      line++;
      pos = nl + 1;
    }
    base += value.length;
    if (full && o.size > o.countBelowBytes) {
      await chunks.cancel();
      // A page that ends with the file's last byte is the end, even uncounted.
      if (page.stoppedBy === "limit" && pageEnd >= o.size) {
        page.stoppedBy = "eof";
        page.totalLines = page.start + page.lines.length - 1;
      }
      return page;
    }
  }
  // The last line has no terminator: it counts only if it has bytes.
  const lastHasBytes = tailBytes > 0;
  if (!full && line >= o.offset && lastHasBytes) {
    full = !emit();
  }
  page.totalLines = lastHasBytes ? line : line - 1;
  if (!full) page.stoppedBy = "eof";
  else if (page.start + page.lines.length - 1 >= page.totalLines) page.stoppedBy = "eof";
  return page;
}

/** UTF-16 length of UTF-8 bytes, counted without decoding (exact for valid UTF-8). */
function utf16Units(b: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < b.length; i++) {
    const x = b[i]!;
    if ((x & 0xc0) !== 0x80) n += x >= 0xf0 ? 2 : 1;
  }
  return n;
}


/**
 * The first bytes of a stream (at least `n`, or all of it when shorter: a copy the caller may
 * keep) and the whole stream again as reused-buffer chunks (`rest`: those bytes, then the rest as
 * it comes), so one GET serves both a sniff and a streamed read. `whole`: the stream ended within
 * `head`. `bufferBytes`: the reused buffer (a file's size, when smaller, saves allocating more).
 */
export async function peekBytes(source: ReadableStream<Uint8Array>, n: number, bufferBytes?: number): Promise<{ head: Uint8Array; whole: boolean; rest: Chunks }> {
  const chunks = reusedChunks(source, bufferBytes);
  const copies: Uint8Array[] = [];
  let got = 0;
  let whole = false;
  while (got < n) {
    const value = await chunks.next();
    if (!value) {
      whole = true;
      break;
    }
    copies.push(value.slice());
    got += value.length;
  }
  const head = concatBytes(copies);
  return { head, whole, rest: prepend(head, whole ? ended : chunks) };
}

/** Reads the rest of `chunks` into one array (a small file read whole). */
export async function collect(chunks: Chunks): Promise<Uint8Array> {
  const copies: Uint8Array[] = [];
  for (let c = await chunks.next(); c; c = await chunks.next()) copies.push(c.slice());
  return concatBytes(copies);
}

const ended: Chunks = { next: async () => null, cancel: async () => {} };

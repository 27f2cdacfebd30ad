/**
 * The one line splitter of every search path (streamed files, packed contents, files read
 * whole): bytes in, bounded segments out, each byte scanned a bounded number of times.
 *
 * - "lines": a block of whole lines, at most BLOCK_BYTES unless one line is longer (up to
 *   MAX_LINE_BYTES). It ends with "\n" except for the file's last line.
 * - "piece": a window of a line longer than MAX_LINE_BYTES. Windows are WINDOW_BYTES of new
 *   bytes after OVERLAP_BYTES repeated from the previous window (so a match shorter than the
 *   overlap that crosses a window edge is still seen). Cuts fall on UTF-8 character boundaries.
 *
 * Only the bytes of the current block or window are held: memory is bounded whatever the
 * file holds, and a newline is searched for only in bytes not searched before.
 *
 * `reusedInput`: each pushed chunk is overwritten once push() returns (a stream read into one
 * reused buffer, lib/shared/chunks.ts). Then every push hands out all its complete lines (the
 * blocks are at most a chunk long) and copies what it still holds (the line not yet ended); the
 * segments it returns are views of the chunk, to be used before the next push.
 */
export const BLOCK_BYTES = 256 * 1024;
/** Lines up to this long are searched whole; longer ones in windows. */
export const MAX_LINE_BYTES = 1024 * 1024;
export const WINDOW_BYTES = 1024 * 1024;
export const OVERLAP_BYTES = 16 * 1024;

export type Segment =
  | { kind: "lines"; bytes: Uint8Array; start: number }
  /** `bytes` = overlap (repeated) + new bytes; `start` is the file offset of the new bytes. */
  | { kind: "piece"; bytes: Uint8Array; overlap: number; start: number; first: boolean; last: boolean };

const NL = 10;

export class LineSplitter {
  private parts: Uint8Array[] = [];
  private len = 0;
  /** File offset of parts[0][0]. */
  private at: number;
  /** Bytes of `parts` that end at a line break (complete lines). */
  private complete = 0;
  /** Inside a long line: bytes of `parts` that are overlap (already searched). */
  private long: { overlap: number; first: boolean } | null = null;
  private readonly reusedInput: boolean;

  /**
   * `start`: file offset of the first byte pushed. `inLongLine`: the stream starts inside a
   * long line, with `overlap` bytes already searched by an earlier call (a resumed search).
   */
  constructor(start = 0, resume?: { inLongLine: true; overlap: number }, opts: { reusedInput?: boolean } = {}) {
    this.at = start;
    if (resume) this.long = { overlap: resume.overlap, first: false };
    this.reusedInput = opts.reusedInput ?? false;
  }

  push(chunk: Uint8Array): Segment[] {
    const out: Segment[] = [];
    let p = 0;
    while (p < chunk.length) {
      if (this.long) {
        const nl = chunk.indexOf(NL, p);
        const end = nl < 0 ? chunk.length : nl + 1;
        this.append(chunk.subarray(p, end));
        p = end;
        if (nl >= 0) this.endLong(out);
        else this.longWindows(out);
        continue;
      }
      const rest = chunk.subarray(p);
      p = chunk.length;
      const nl = rest.lastIndexOf(NL);
      this.append(rest);
      if (nl >= 0) this.complete = this.len - rest.length + nl + 1;
      if (this.complete >= BLOCK_BYTES) this.flushComplete(out);
      if (this.len - this.complete > MAX_LINE_BYTES) {
        // The unfinished last line is long: search it in windows from here on.
        this.flushComplete(out);
        this.long = { overlap: 0, first: true };
        this.longWindows(out);
      }
    }
    if (this.reusedInput) {
      if (!this.long) this.flushComplete(out);
      this.detach();
    }
    return out;
  }

  /** Copies what is held out of the pushed chunks (reusedInput: they are overwritten next). */
  private detach(): void {
    this.parts = this.len === 0 ? [] : [this.copyHeld()];
  }

  /** Everything held, copied into one array. */
  private copyHeld(): Uint8Array {
    const all = new Uint8Array(this.len);
    let at = 0;
    for (const part of this.parts) {
      all.set(part, at);
      at += part.length;
    }
    return all;
  }

  /** What is left at the end of the input. */
  end(): Segment[] {
    const out: Segment[] = [];
    if (this.long) this.endLong(out);
    else {
      this.complete = this.len;
      this.flushComplete(out);
    }
    return out;
  }

  private append(b: Uint8Array): void {
    if (b.length === 0) return;
    this.parts.push(b);
    this.len += b.length;
  }

  /** Takes the first n bytes of `parts` as one array (copied only when they span parts). */
  private take(n: number): Uint8Array {
    const first = this.parts[0]!;
    let bytes: Uint8Array;
    if (first.length >= n) {
      bytes = first.subarray(0, n);
      if (first.length === n) this.parts.shift();
      else this.parts[0] = first.subarray(n);
    } else {
      bytes = new Uint8Array(n);
      let at = 0;
      while (at < n) {
        const part = this.parts[0]!;
        const k = Math.min(part.length, n - at);
        bytes.set(part.subarray(0, k), at);
        at += k;
        if (k === part.length) this.parts.shift();
        else this.parts[0] = part.subarray(k);
      }
    }
    this.len -= n;
    this.at += n;
    this.complete = Math.max(0, this.complete - n);
    return bytes;
  }

  /** The complete lines held, as blocks of about BLOCK_BYTES; lines too long for a block as pieces. */
  private flushComplete(out: Segment[]): void {
    if (this.complete === 0) return;
    const start = this.at;
    const buf = this.take(this.complete);
    let p = 0;
    while (p < buf.length) {
      let q = p + BLOCK_BYTES >= buf.length ? buf.length : buf.lastIndexOf(NL, p + BLOCK_BYTES - 1) + 1;
      if (q <= p) {
        // No line ends within a block: the line starting at p is longer than a block.
        const nl = buf.indexOf(NL, p + BLOCK_BYTES);
        q = nl < 0 ? buf.length : nl + 1;
        if (q - p > MAX_LINE_BYTES) {
          windowsOf(buf.subarray(p, q), start + p, out);
          p = q;
          continue;
        }
      }
      out.push({ kind: "lines", bytes: buf.subarray(p, q), start: start + p });
      p = q;
    }
  }

  /** Inside a long line: emits full windows while more than a window of new bytes is held. */
  private longWindows(out: Segment[]): void {
    const l = this.long!;
    while (this.len - l.overlap > WINDOW_BYTES) {
      const cut = charBoundary(this.peek(l.overlap + WINDOW_BYTES + 4), l.overlap + WINDOW_BYTES);
      this.emitPiece(out, cut, false);
    }
  }

  /** Emits what is held of the long line (overlap, the rest, its line break if any) as its last piece. */
  private endLong(out: Segment[]): void {
    this.longWindows(out);
    this.emitPiece(out, this.len, true);
    this.long = null;
    this.parts = [];
    this.at += this.len;
    this.len = 0;
    this.complete = 0;
  }

  private emitPiece(out: Segment[], cut: number, last: boolean): void {
    const l = this.long!;
    const overlap = l.overlap;
    const start = this.at + overlap;
    const bytes = this.peek(cut);
    out.push({ kind: "piece", bytes, overlap, start, first: l.first, last });
    l.first = false;
    if (last) return;
    // Keep the last OVERLAP_BYTES (from a character boundary) as the next window's overlap.
    const keepFrom = charBoundary(bytes, Math.max(overlap, cut - OVERLAP_BYTES));
    this.take(keepFrom);
    l.overlap = cut - keepFrom;
  }

  /** The first n bytes of `parts` without removing them (copied into one array). */
  private peek(n: number): Uint8Array {
    n = Math.min(n, this.len);
    if (n === 0) return new Uint8Array(0);
    // Consolidate: later takes then slice one array.
    if (this.parts.length > 1 && this.parts[0]!.length < n) this.parts = [this.copyHeld()];
    return this.parts[0]!.subarray(0, n);
  }
}

/** Splits one complete long line (ending with "\n", or at the end of input) into pieces. */
function windowsOf(line: Uint8Array, start: number, out: Segment[]): void {
  let from = 0; // start of the overlap
  let fresh = 0; // start of the new bytes
  let first = true;
  for (;;) {
    const last = line.length - fresh <= WINDOW_BYTES;
    const cut = last ? line.length : charBoundary(line, fresh + WINDOW_BYTES);
    out.push({ kind: "piece", bytes: line.subarray(from, cut), overlap: fresh - from, start: start + fresh, first, last });
    if (last) return;
    first = false;
    from = charBoundary(line, Math.max(fresh, cut - OVERLAP_BYTES));
    fresh = cut;
  }
}

/** The nearest index at or before i that starts a UTF-8 character (never moves by more than 3). */
export function charBoundary(b: Uint8Array, i: number): number {
  if (i >= b.length) return b.length;
  let j = i;
  while (j > 0 && i - j < 3 && (b[j]! & 0xc0) === 0x80) j--;
  return (b[j]! & 0xc0) === 0x80 ? i : j;
}

/** UTF-16 length of UTF-8 bytes, without decoding (exact for valid UTF-8). */
export function utf16Length(b: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < b.length; i++) {
    const x = b[i]!;
    if ((x & 0xc0) !== 0x80) n += x >= 0xf0 ? 2 : 1;
  }
  return n;
}

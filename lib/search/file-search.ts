/**
 * Searching one file's bytes, from memory or from a stream, through the one line splitter and
 * within the call's CPU budget. Every path ends the same way: the file is done, or the budget
 * ran out and a cursor says where to continue (a line start, or a window inside a long line).
 */
import { reusedChunks } from "../shared/chunks.js";
import type { CpuBudget } from "./cpu-budget.js";
import { BLOCK_BYTES, LineSplitter, utf16Length, type Segment } from "./line-splitter.js";
import type { Compiled, SearchOptions } from "./matcher.js";
import { MultilineSearch } from "./multiline.js";
import { TextSearch, type LongLineState } from "./text-search.js";

/** Where the search of one file stopped. */
export interface FileCursor {
  /** The version searched: a cursor into another version is not used. */
  etag: string;
  /** File offset to continue from (the new bytes of a long line's window, or a line start). */
  byte: number;
  /** Lines finished before it. */
  line: number;
  /** Inside a long line: bytes before `byte` the next window repeats, and where the line stands. */
  overlap?: number;
  long?: LongLineState;
  /** Matches counted so far (count mode). */
  count?: number;
}

export interface FileRun<S extends TextSearch | MultilineSearch = TextSearch | MultilineSearch> {
  search: S;
  /** Set when the budget ran out before the file was done. */
  stopped: FileCursor | null;
}

const decoder = new TextDecoder();

/** Where a stream or a byte array must start for a cursor (a long line's window starts with its overlap). */
export function readFrom(from: FileCursor | null): number {
  return from ? from.byte - (from.overlap ?? 0) : 0;
}

/** The buffer a streamed file is read through: a block of lines (line-splitter.ts BLOCK_BYTES). */
const STREAM_BUFFER_BYTES = BLOCK_BYTES;

function newSplitter(from: FileCursor | null, opts: { reusedInput?: boolean } = {}): LineSplitter {
  return new LineSplitter(readFrom(from), from?.long ? { inLongLine: true, overlap: from.overlap ?? 0 } : undefined, opts);
}

function newSearch(c: Compiled, o: SearchOptions, from: FileCursor | null): TextSearch {
  return new TextSearch(c, o, from ? { line: from.line, ...(from.count ? { count: from.count } : {}), ...(from.long ? { long: from.long } : {}) } : { line: 0 });
}

/** Feeds segments to the search; returns a cursor when the budget stops it first. */
async function feed(segs: Segment[], s: TextSearch, budget: CpuBudget, etag: string): Promise<FileCursor | null> {
  for (const seg of segs) {
    if (s.done) return null;
    if (budget.spent) {
      const long = seg.kind === "piece" && !seg.first ? { overlap: seg.overlap, long: s.longLine! } : {};
      return { etag, byte: seg.start, line: s.lines, ...long, ...(s.result.count ? { count: s.result.count } : {}) };
    }
    budget.step(seg.bytes.length, () => {
      if (seg.kind === "lines") s.block(decoder.decode(seg.bytes));
      else s.piece(decoder.decode(seg.bytes), seg.overlap ? utf16Length(seg.bytes.subarray(0, seg.overlap)) : 0, seg.first, seg.last);
    });
    await budget.pause();
  }
  return null;
}

/** Line mode over bytes held in memory (a packed file, or one read whole): `bytes` is the whole file. */
export async function searchHeld(bytes: Uint8Array, etag: string, c: Compiled, o: SearchOptions, budget: CpuBudget, from: FileCursor | null): Promise<FileRun<TextSearch>> {
  const s = newSearch(c, o, from);
  const splitter = newSplitter(from);
  const input = bytes.subarray(Math.min(bytes.length, readFrom(from)));
  let stopped = await feed(splitter.push(input), s, budget, etag);
  if (!stopped && !s.done) stopped = await feed(splitter.end(), s, budget, etag);
  s.finish();
  return { search: s, stopped };
}

/**
 * Line mode over a stream that starts at readFrom(from). `first` sees the first chunk (a
 * fresh read sniffs it) and returns false to stop reading. The stream is read into one reused
 * buffer (lib/shared/chunks.ts): a 60 MB file no longer leaves 60 MB of spent chunks for the GC.
 */
export async function searchStream(body: ReadableStream<Uint8Array>, etag: string, c: Compiled, o: SearchOptions, budget: CpuBudget, from: FileCursor | null, first: (chunk: Uint8Array) => boolean): Promise<FileRun<TextSearch> | null> {
  const chunks = reusedChunks(body, STREAM_BUFFER_BYTES);
  const s = newSearch(c, o, from);
  const splitter = newSplitter(from, { reusedInput: true });
  let stopped: FileCursor | null = null;
  let started = false;
  for (;;) {
    const value = await chunks.next();
    if (!value) {
      if (!s.done) stopped = await feed(splitter.end(), s, budget, etag);
      break;
    }
    if (!started) {
      started = true;
      if (!first(value)) {
        await chunks.cancel();
        return null;
      }
    }
    // Every segment of this push is searched before the next read overwrites the buffer.
    stopped = await feed(splitter.push(value), s, budget, etag);
    if (stopped || s.done) {
      await chunks.cancel();
      break;
    }
  }
  s.finish();
  return { search: s, stopped };
}

/** Multiline mode over a whole text (or its rest from a cursor, which is always a line start). */
export async function searchMultiline(bytes: Uint8Array, etag: string, c: Compiled, o: SearchOptions, budget: CpuBudget, from: FileCursor | null): Promise<FileRun<MultilineSearch>> {
  const at = from ? Math.min(bytes.length, from.byte) : 0;
  const raw = decoder.decode(bytes.subarray(at));
  const text = raw.includes("\r\n") ? raw.replaceAll("\r\n", "\n") : raw;
  const s = new MultilineSearch(c, o, text, from?.line ?? 0, from?.count ?? 0);
  while (!s.done) {
    if (budget.spent) {
      const k = s.nextLine;
      return { search: s, stopped: { etag, byte: lineStartByte(bytes, at, k), line: (from?.line ?? 0) + k, ...(s.result.count ? { count: s.result.count } : {}) } };
    }
    const was = s.position;
    budget.step(0, () => s.step());
    budget.charge(s.position - was);
    await budget.pause();
  }
  return { search: s, stopped: null };
}

/** File offset of the k-th line start after `at` (a line start). */
function lineStartByte(bytes: Uint8Array, at: number, k: number): number {
  let p = at;
  for (let i = 0; i < k && p < bytes.length; i++) {
    const nl = bytes.indexOf(10, p);
    if (nl < 0) return bytes.length;
    p = nl + 1;
  }
  return p;
}

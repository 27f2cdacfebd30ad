/**
 * A segment: an immutable object holding a set of files' contents and a trigram index
 * over them (a Zoekt-style shard). Layout:
 *
 *   "TSG1"  u32 header length  header JSON   dictionary   postings   contents
 *
 * - header JSON: { v, files: [[path, etag, size, modified_ms, flags, offset, length]],
 *   trigrams, postings, contents } (offsets relative to the contents region)
 * - dictionary: one 8-byte entry per distinct trigram, sorted: 3 bytes trigram (big
 *   endian), 1 byte L, 4 bytes payload. L <= 4: the posting list is inline (its L varint
 *   bytes are the payload). L = 0xff: the payload is the list's offset in the postings
 *   region; it ends where the next out-of-line list starts.
 * - postings: per trigram, the sorted local file ids as varint deltas.
 * - contents: the bytes of the text files, concatenated.
 *
 * The storage key carries the byte offset of the end of the dictionary, so a reader gets
 * header and dictionary in one ranged read and never needs the rest unless a posting list
 * or a candidate file's bytes are asked for.
 */
import { TrigramCollector } from "./trigrams.js";

export const FLAG_BINARY = 1;
/** Text too large to pack: kept out of the segment and always a candidate. */
export const FLAG_LARGE = 2;

export interface SegmentFile {
  path: string;
  etag: string;
  size: number;
  modified: number;
  flags: number;
  /** Offset and length of the contents, relative to the contents region. */
  off: number;
  len: number;
}

export interface SegmentInput {
  path: string;
  etag: string;
  size: number;
  modified: number;
  flags: number;
  /** The file's bytes (text files without FLAG_LARGE). */
  content?: Uint8Array;
}

const MAGIC = [0x54, 0x53, 0x47, 0x31]; // "TSG1"
const ENTRY = 8;
const OUT_OF_LINE = 0xff;

function writeVarint(out: number[], v: number): void {
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
}

/** Decodes a varint-delta posting list into ids. */
export function decodePostings(bytes: Uint8Array): number[] {
  const out: number[] = [];
  let prev = -1;
  let v = 0;
  let shift = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    v |= (b & 0x7f) << shift;
    if (b & 0x80) {
      shift += 7;
      continue;
    }
    prev = prev + 1 + v;
    out.push(prev);
    v = 0;
    shift = 0;
  }
  return out;
}

export interface BuiltSegment {
  bytes: Uint8Array;
  headerEnd: number;
  dictEnd: number;
  contentBytes: number;
  files: number;
}

/** Builds a segment. `collector` is reused across calls (it owns a 2 MB bitset). */
export function buildSegment(inputs: SegmentInput[], collector: TrigramCollector): BuiltSegment {
  const files: SegmentFile[] = [];
  const lists = new Map<number, number[]>();
  const contents: Uint8Array[] = [];
  let contentLen = 0;
  for (const f of inputs) {
    const id = files.length;
    const packed = f.content !== undefined && (f.flags & (FLAG_BINARY | FLAG_LARGE)) === 0;
    files.push({ path: f.path, etag: f.etag, size: f.size, modified: f.modified, flags: f.flags, off: packed ? contentLen : 0, len: packed ? f.content!.length : 0 });
    if (!packed) continue;
    contents.push(f.content!);
    contentLen += f.content!.length;
    const tris = collector.collect(f.content!);
    for (let i = 0; i < tris.length; i++) {
      const t = tris[i]!;
      const l = lists.get(t);
      if (l) l.push(id);
      else lists.set(t, [id]);
    }
  }
  const trigrams = [...lists.keys()].sort((a, b) => a - b);
  const dict = new Uint8Array(trigrams.length * ENTRY);
  const dv = new DataView(dict.buffer);
  const postings: number[] = [];
  const tmp: number[] = [];
  trigrams.forEach((t, k) => {
    const ids = lists.get(t)!;
    tmp.length = 0;
    let prev = -1;
    for (const id of ids) {
      writeVarint(tmp, id - prev - 1);
      prev = id;
    }
    const at = k * ENTRY;
    dict[at] = t >>> 16;
    dict[at + 1] = (t >>> 8) & 0xff;
    dict[at + 2] = t & 0xff;
    if (tmp.length <= 4) {
      dict[at + 3] = tmp.length;
      for (let j = 0; j < tmp.length; j++) dict[at + 4 + j] = tmp[j]!;
    } else {
      dict[at + 3] = OUT_OF_LINE;
      dv.setUint32(at + 4, postings.length, true);
      for (const b of tmp) postings.push(b);
    }
  });
  const header = new TextEncoder().encode(
    JSON.stringify({ v: 1, files: files.map((f) => [f.path, f.etag, f.size, f.modified, f.flags, f.off, f.len]), trigrams: trigrams.length, postings: postings.length, contents: contentLen }),
  );
  const dictStart = 8 + header.length;
  const dictEnd = dictStart + dict.length;
  const total = dictEnd + postings.length + contentLen;
  const bytes = new Uint8Array(total);
  bytes.set(MAGIC, 0);
  new DataView(bytes.buffer).setUint32(4, header.length, true);
  bytes.set(header, 8);
  bytes.set(dict, dictStart);
  bytes.set(postings, dictEnd);
  let at = dictEnd + postings.length;
  for (const c of contents) {
    bytes.set(c, at);
    at += c.length;
  }
  return { bytes, headerEnd: dictStart, dictEnd, contentBytes: contentLen, files: files.length };
}

/** Where one trigram's posting list is: inline bytes, a range of the postings region, or absent. */
export type PostingRef = { inline: Uint8Array } | { off: number; end: number } | null;

type HeaderJson = { v: number; files: [string, string, number, number, number, number, number][]; trigrams: number; postings: number; contents: number };

function parseHeader(bytes: Uint8Array): { h: HeaderJson; headerLen: number } {
  if (bytes.length < 8 || MAGIC.some((b, i) => bytes[i] !== b)) throw new Error("not a segment");
  const headerLen = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(4, true);
  if (bytes.length < 8 + headerLen) throw new Error("segment header cut short");
  const h = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLen))) as HeaderJson;
  if (h.v !== 1) throw new Error("unknown segment version");
  return { h, headerLen };
}

const toFiles = (h: HeaderJson): SegmentFile[] => h.files.map(([path, etag, size, modified, flags, off, len]) => ({ path, etag, size, modified, flags, off, len }));

/** The file table of a segment, from at least its first headerEnd bytes. */
export function parseFileTable(bytes: Uint8Array): SegmentFile[] {
  return toFiles(parseHeader(bytes).h);
}

/** The parsed head of a segment (header + dictionary), and the rest when it was read whole. */
export class SegmentHead {
  readonly files: SegmentFile[];
  readonly trigrams: number;
  readonly postingsLen: number;
  readonly contentsLen: number;
  /** Absolute offsets in the segment object. */
  readonly dictStart: number;
  readonly postingsStart: number;
  readonly contentsStart: number;
  private readonly dict: Uint8Array;
  /** The whole object, when it was read whole. */
  readonly whole: Uint8Array | null;

  constructor(bytes: Uint8Array, whole: boolean) {
    const { h, headerLen } = parseHeader(bytes);
    this.files = toFiles(h);
    this.trigrams = h.trigrams;
    this.postingsLen = h.postings;
    this.contentsLen = h.contents;
    this.dictStart = 8 + headerLen;
    this.postingsStart = this.dictStart + h.trigrams * ENTRY;
    this.contentsStart = this.postingsStart + h.postings;
    if (bytes.length < this.postingsStart) throw new Error("segment head cut short");
    this.dict = bytes.subarray(this.dictStart, this.postingsStart);
    this.whole = whole ? bytes : null;
  }

  private triAt(k: number): number {
    const at = k * ENTRY;
    return (this.dict[at]! << 16) | (this.dict[at + 1]! << 8) | this.dict[at + 2]!;
  }

  /** Finds a trigram's posting list. */
  lookup(t: number): PostingRef {
    let lo = 0;
    let hi = this.trigrams - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = this.triAt(mid);
      if (v < t) lo = mid + 1;
      else if (v > t) hi = mid - 1;
      else return this.ref(mid);
    }
    return null;
  }

  private ref(k: number): PostingRef {
    const at = k * ENTRY;
    const L = this.dict[at + 3]!;
    if (L !== OUT_OF_LINE) return { inline: this.dict.subarray(at + 4, at + 4 + L) };
    const dv = new DataView(this.dict.buffer, this.dict.byteOffset, this.dict.byteLength);
    const off = dv.getUint32(at + 4, true);
    let end = this.postingsLen;
    for (let j = k + 1; j < this.trigrams; j++) {
      if (this.dict[j * ENTRY + 3] === OUT_OF_LINE) {
        end = dv.getUint32(j * ENTRY + 4, true);
        break;
      }
    }
    return { off, end };
  }

  /** Posting bytes of an out-of-line list, when the segment was read whole. */
  postingBytes(off: number, end: number): Uint8Array | null {
    return this.whole ? this.whole.subarray(this.postingsStart + off, this.postingsStart + end) : null;
  }

  /** A packed file's bytes, when the segment was read whole. */
  content(f: SegmentFile): Uint8Array | null {
    return this.whole ? this.whole.subarray(this.contentsStart + f.off, this.contentsStart + f.off + f.len) : null;
  }
}

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

/**
 * Builds a segment. `collector` is reused across calls (it owns a 2 MB bitset).
 *
 * The posting lists come from the (trigram, file id) pairs of every file, grouped by trigram with
 * ids ascending by a stable radix sort on typed arrays (low 12 bits, then high 12 bits of the
 * trigram): linear in the pairs, no per-trigram object (a Map of arrays cost ~2× the CPU).
 */
export function buildSegment(inputs: SegmentInput[], collector: TrigramCollector): BuiltSegment {
  const files: SegmentFile[] = [];
  const contents: Uint8Array[] = [];
  const perFile: { id: number; tris: Uint32Array }[] = [];
  let pairs = 0;
  let contentLen = 0;
  for (const f of inputs) {
    const id = files.length;
    const packed = f.content !== undefined && (f.flags & (FLAG_BINARY | FLAG_LARGE)) === 0;
    files.push({ path: f.path, etag: f.etag, size: f.size, modified: f.modified, flags: f.flags, off: packed ? contentLen : 0, len: packed ? f.content!.length : 0 });
    if (!packed) continue;
    contents.push(f.content!);
    contentLen += f.content!.length;
    const tris = collector.collect(f.content!);
    perFile.push({ id, tris });
    pairs += tris.length;
  }
  const { tri, ids } = groupByTrigram(perFile, pairs);
  let distinct = 0;
  for (let j = 0; j < pairs; j++) if (j === 0 || tri[j] !== tri[j - 1]) distinct++;
  const dict = new Uint8Array(distinct * ENTRY);
  const dv = new DataView(dict.buffer);
  // Deltas of ids below 2^21 take at most 3 varint bytes; the list of a trigram with ≤ 4 bytes goes inline.
  let postings = new Uint8Array(Math.max(16, pairs * 3));
  let plen = 0;
  for (let j = 0, k = 0; j < pairs; k++) {
    const t = tri[j]!;
    const from = plen;
    let prev = -1;
    for (; j < pairs && tri[j] === t; j++) {
      if (plen + 5 > postings.length) {
        const bigger = new Uint8Array(postings.length * 2);
        bigger.set(postings);
        postings = bigger;
      }
      let v = ids[j]! - prev - 1;
      prev = ids[j]!;
      while (v >= 0x80) {
        postings[plen++] = (v & 0x7f) | 0x80;
        v >>>= 7;
      }
      postings[plen++] = v;
    }
    const at = k * ENTRY;
    dict[at] = t >>> 16;
    dict[at + 1] = (t >>> 8) & 0xff;
    dict[at + 2] = t & 0xff;
    const L = plen - from;
    if (L <= 4) {
      dict[at + 3] = L;
      for (let b = 0; b < L; b++) dict[at + 4 + b] = postings[from + b]!;
      plen = from;
    } else {
      dict[at + 3] = OUT_OF_LINE;
      dv.setUint32(at + 4, from, true);
    }
  }
  const header = new TextEncoder().encode(
    JSON.stringify({ v: 1, files: files.map((f) => [f.path, f.etag, f.size, f.modified, f.flags, f.off, f.len]), trigrams: distinct, postings: plen, contents: contentLen }),
  );
  const dictStart = 8 + header.length;
  const dictEnd = dictStart + dict.length;
  const total = dictEnd + plen + contentLen;
  const bytes = new Uint8Array(total);
  bytes.set(MAGIC, 0);
  new DataView(bytes.buffer).setUint32(4, header.length, true);
  bytes.set(header, 8);
  bytes.set(dict, dictStart);
  bytes.set(postings.subarray(0, plen), dictEnd);
  let at = dictEnd + plen;
  for (const c of contents) {
    bytes.set(c, at);
    at += c.length;
  }
  return { bytes, headerEnd: dictStart, dictEnd, contentBytes: contentLen, files: files.length };
}

/**
 * The (trigram, id) pairs of `perFile` (ids ascending), sorted by trigram and, within one, by id:
 * two stable counting passes of 12 bits each.
 */
function groupByTrigram(perFile: { id: number; tris: Uint32Array }[], pairs: number): { tri: Uint32Array; ids: Uint32Array } {
  const RADIX = 4096;
  const count = new Uint32Array(RADIX + 1);
  for (const { tris } of perFile) for (let i = 0; i < tris.length; i++) count[(tris[i]! & 0xfff) + 1]!++;
  for (let r = 0; r < RADIX; r++) count[r + 1]! += count[r]!;
  const triA = new Uint32Array(pairs);
  const idA = new Uint32Array(pairs);
  for (const { id, tris } of perFile) {
    for (let i = 0; i < tris.length; i++) {
      const t = tris[i]!;
      const at = count[t & 0xfff]!++;
      triA[at] = t;
      idA[at] = id;
    }
  }
  count.fill(0);
  for (let j = 0; j < pairs; j++) count[(triA[j]! >>> 12) + 1]!++;
  for (let r = 0; r < RADIX; r++) count[r + 1]! += count[r]!;
  const tri = new Uint32Array(pairs);
  const ids = new Uint32Array(pairs);
  for (let j = 0; j < pairs; j++) {
    const t = triA[j]!;
    const at = count[t >>> 12]!++;
    tri[at] = t;
    ids[at] = idA[j]!;
  }
  return { tri, ids };
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

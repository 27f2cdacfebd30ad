/**
 * The check gzip -t makes and fflate's Gunzip does not: each member's trailer (the CRC-32 and the
 * length mod 2^32 of the bytes it inflates to) against what it did inflate to. Deflate data carries
 * no checksum of its own, so without it a damaged byte of a tar.gz (a stored block above all) was
 * imported as a damaged file, and a gzip cut just before its trailer was taken whole.
 * flate.ts feeds it: every input slice, every output chunk (in the codec's order), each member's
 * start (fflate's `onmember`, the input offset of the next member's header) and the end.
 */
import { crc32 } from "node:zlib";
import { ToolError } from "../shared/errors.js";
import { hex32, u32 } from "./byte-reader.js";

/** Input kept to find a member's trailer once the next member's header is whole: a header (name, comment, extra field) longer than this is refused. */
const KEEP = 64 * 1024;

const damaged = (why: string) =>
  new ToolError("INVALID_ARGUMENT", `The gzip data fails its check (${why}): the upload was cut or the archive is damaged. Send the whole archive again (\`gzip -t FILE\` tells whether a file is sound).`, { reason: "gzip_check" });


export class GzipCheck {
  private crc = 0;
  private size = 0;
  /** The last input slices (the codec's own, never reused: kept by reference), at least KEEP bytes of them when there were that many; `tailStart` is the input offset of the first. */
  private tail: Uint8Array[] = [];
  private tailBytes = 0;
  private tailStart = 0;
  private member = 1;

  input(slice: Uint8Array): void {
    this.tail.push(slice);
    this.tailBytes += slice.length;
    while (this.tailBytes - this.tail[0]!.length >= KEEP) {
      const first = this.tail.shift()!;
      this.tailBytes -= first.length;
      this.tailStart += first.length;
    }
  }

  /** Input bytes [from, from + 8), or null when they are not all kept. */
  private trailerAt(from: number): Uint8Array | null {
    if (from < this.tailStart || from + 8 > this.tailStart + this.tailBytes) return null;
    const out = new Uint8Array(8);
    let at = this.tailStart;
    for (const s of this.tail) {
      const lo = Math.max(from, at);
      const hi = Math.min(from + 8, at + s.length);
      if (lo < hi) out.set(s.subarray(lo - at, hi - at), lo - from);
      at += s.length;
    }
    return out;
  }

  output(data: Uint8Array): void {
    this.crc = crc32(data, this.crc);
    this.size = (this.size + data.length) >>> 0;
  }

  /** The member before the one whose header starts at input offset `next` is whole: its trailer is the 8 bytes before `next`. */
  memberEnds(next: number): void {
    const trailer = this.trailerAt(next - 8);
    if (!trailer) throw damaged(`gzip member ${this.member + 1} has a header longer than ${KEEP} bytes`);
    this.verify(trailer);
    this.crc = 0;
    this.size = 0;
    this.member++;
  }

  /** The input ended and the codec with it: the last member's trailer is the input's last 8 bytes. */
  end(): void {
    const trailer = this.trailerAt(this.tailStart + this.tailBytes - 8);
    if (!trailer) throw damaged("it ends before its trailer");
    this.verify(trailer);
  }

  private verify(trailer: Uint8Array): void {
    const crc = u32(trailer, 0);
    const size = u32(trailer, 4);
    if (crc === this.crc >>> 0 && size === this.size) return;
    const which = this.member > 1 ? `member ${this.member}: ` : "";
    throw damaged(`${which}its trailer declares CRC-32 ${hex32(crc)} and ${size} bytes, its data inflates to ${hex32(this.crc)} and ${this.size} bytes mod 2^32`);
  }
}

/** Archive builders for the tests: tar (via the export's header writer), gzip, zip, and hostile streams generated on the fly. */
import { concatBytes } from "../../../lib/shared/text.js";
import { END_OF_ARCHIVE, headerBlock, padding, tarHeader, tarLinkHeader, type TarType } from "../../../lib/archive/tar-writer.js";

const enc = new TextEncoder();
export const bytesOf = (s: string | Uint8Array) => (typeof s === "string" ? enc.encode(s) : s);

export interface TarItem {
  name: string;
  body?: string | Uint8Array;
  type?: TarType;
  linkname?: string;
  /** Declared size (default: the body's). */
  size?: number;
  /** Write the raw name into the ustar field (no pax), e.g. to test GNU long names separately. */
  raw?: boolean;
  /** Permission bits (default: 0644, 0755 for a directory). */
  mode?: number;
}


export function tarEntry(item: TarItem): Uint8Array {
  const body = bytesOf(item.body ?? "");
  const size = item.size ?? body.length;
  const input = { name: item.name, size, type: item.type ?? "0", mtime: 1_700_000_000, ...(item.linkname ? { linkname: item.linkname } : {}), ...(item.mode !== undefined ? { mode: item.mode } : {}) };
  const head = item.raw ? headerBlock(input) : item.type === "2" && item.linkname ? tarLinkHeader(item.name, item.linkname, input.mtime) : tarHeader(input);
  return concatBytes([head, body, padding(body.length)]);
}

/** A GNU long-name record ("L") followed by the entry with a cut name. */
export function gnuLongName(name: string, body: string): Uint8Array {
  const n = enc.encode(`${name}\0`);
  return concatBytes([headerBlock({ name: "././@LongLink", size: n.length, type: "L" }), n, padding(n.length), tarEntry({ name: name.slice(0, 90), body, raw: true })]);
}

/** A GNU long link name record ("K", what GNU tar writes for a link target over 100 bytes) followed by the link with its target cut. */
export function gnuLongLink(name: string, target: string): Uint8Array {
  const n = enc.encode(`${target}\0`);
  return concatBytes([headerBlock({ name: "././@LongLink", size: n.length, type: "K" }), n, padding(n.length), tarEntry({ name, type: "2", linkname: target.slice(0, 100), raw: true })]);
}

export const tar = (items: TarItem[], end = true) => concatBytes([...items.map(tarEntry), ...(end ? [END_OF_ARCHIVE()] : [])]);

export async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await new Response(new Blob([bytes]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer());
}

/** A pulled stream: `next()` returns the next chunk or null at the end. Counts what was pulled. */
export function generated(next: () => Uint8Array | null): { stream: ReadableStream<Uint8Array>; pulled: () => number } {
  let pulled = 0;
  return {
    stream: new ReadableStream<Uint8Array>({
      pull(c) {
        const chunk = next();
        if (chunk === null) c.close();
        else {
          pulled += chunk.length;
          c.enqueue(chunk);
        }
      },
    }, { highWaterMark: 0 }),
    pulled: () => pulled,
  };
}

// ---- zip ----

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();
export function crc32(b: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < b.length; i++) c = CRC_TABLE[(c ^ b[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export interface ZipItem {
  name: string;
  body?: string | Uint8Array;
  /** Unix mode (with file type bits), stored in the external attributes. */
  mode?: number;
  deflate?: boolean;
  /** Lie about the uncompressed size (in the local header and the central directory alike). */
  declaredSize?: number;
  /** Declare this CRC-32 instead of the body's (in both headers): a damaged or altered entry. */
  crc?: number;
  /** Declare this CRC-32 in the local header only (the central directory keeps the true one). */
  localCrc?: number;
  /** Flip the bits of this byte of the stored data after the CRC was taken (data damaged in transit). */
  flipByte?: number;
  /** Point the central directory entry at another entry's local header (overlap). */
  offsetOf?: number;
}

async function deflateRaw(b: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await new Response(new Blob([b]).stream().pipeThrough(new CompressionStream("deflate-raw"))).arrayBuffer());
}

export async function zip(items: ZipItem[]): Promise<Uint8Array> {
  const locals: Uint8Array[] = [];
  const central: Uint8Array[] = [];
  const offsets: number[] = [];
  let offset = 0;
  for (const item of items) {
    const body = bytesOf(item.body ?? "");
    const data = item.deflate ? await deflateRaw(body) : body.slice();
    if (item.flipByte !== undefined) data[item.flipByte] = data[item.flipByte]! ^ 0xff;
    const name = enc.encode(item.name);
    const crc = item.crc ?? crc32(body);
    const lh = new DataView(new ArrayBuffer(30));
    lh.setUint32(0, 0x04034b50, true);
    lh.setUint16(4, 20, true);
    lh.setUint16(6, 0x800, true);
    lh.setUint16(8, item.deflate ? 8 : 0, true);
    lh.setUint32(14, item.localCrc ?? crc, true);
    lh.setUint32(18, data.length, true);
    lh.setUint32(22, item.declaredSize ?? body.length, true);
    lh.setUint16(26, name.length, true);
    offsets.push(offset);
    locals.push(new Uint8Array(lh.buffer), name, data);
    const ch = new DataView(new ArrayBuffer(46));
    ch.setUint32(0, 0x02014b50, true);
    ch.setUint16(4, (3 << 8) | 20, true);
    ch.setUint16(6, 20, true);
    ch.setUint16(8, 0x800, true);
    ch.setUint16(10, item.deflate ? 8 : 0, true);
    ch.setUint32(16, crc, true);
    ch.setUint32(20, data.length, true);
    ch.setUint32(24, item.declaredSize ?? body.length, true);
    ch.setUint16(28, name.length, true);
    ch.setUint32(38, ((item.mode ?? 0o100644) << 16) >>> 0, true);
    ch.setUint32(42, item.offsetOf !== undefined ? offsets[item.offsetOf]! : offset, true);
    central.push(new Uint8Array(ch.buffer), name);
    offset += 30 + name.length + data.length;
  }
  const cd = concatBytes(central);
  const end = new DataView(new ArrayBuffer(22));
  end.setUint32(0, 0x06054b50, true);
  end.setUint16(8, items.length, true);
  end.setUint16(10, items.length, true);
  end.setUint32(12, cd.length, true);
  end.setUint32(16, offset, true);
  return concatBytes([...locals, cd, new Uint8Array(end.buffer)]);
}

/**
 * tar headers for the export (and for tests): ustar, with a pax "path" record before any entry
 * whose name does not fit ustar's name/prefix fields. Names are written as UTF-8.
 */
const BLOCK = 512;
const enc = new TextEncoder();

export type TarType = "0" | "1" | "2" | "3" | "4" | "5" | "6" | "x" | "g" | "L" | "K";

export interface TarHeaderInput {
  name: string;
  size: number;
  type?: TarType;
  mode?: number;
  mtime?: number;
  linkname?: string;
}

/** An octal field; past its range, GNU base-256 (high bit set), which GNU tar and bsdtar read. */
function octal(h: Uint8Array, offset: number, length: number, value: number): void {
  const text = Math.floor(value).toString(8).padStart(length - 1, "0");
  if (text.length <= length - 1) return h.set(enc.encode(text), offset);
  let v = Math.floor(value);
  for (let i = offset + length - 1; i > offset; i--) {
    h[i] = v % 256;
    v = Math.floor(v / 256);
  }
  h[offset] = 0x80;
}

/** One 512-byte header block with the name as given (bytes beyond the field are cut: use tarHeader). */
export function headerBlock(input: TarHeaderInput & { nameBytes?: Uint8Array; prefixBytes?: Uint8Array }): Uint8Array {
  const h = new Uint8Array(BLOCK);
  h.set((input.nameBytes ?? enc.encode(input.name)).subarray(0, 100), 0);
  octal(h, 100, 8, input.mode ?? (input.type === "5" ? 0o755 : 0o644));
  octal(h, 108, 8, 0);
  octal(h, 116, 8, 0);
  octal(h, 124, 12, input.size);
  octal(h, 136, 12, input.mtime ?? 0);
  h[156] = (input.type ?? "0").charCodeAt(0);
  if (input.linkname) h.set(enc.encode(input.linkname).subarray(0, 100), 157);
  h.set(enc.encode("ustar\0"), 257);
  h.set(enc.encode("00"), 263);
  if (input.prefixBytes) h.set(input.prefixBytes.subarray(0, 155), 345);
  h.fill(32, 148, 156);
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += h[i]!;
  h.set(enc.encode(sum.toString(8).padStart(6, "0") + "\0 "), 148);
  return h;
}

/** A pax record "len key=value\n" (the length counts itself). */
function paxRecord(key: string, value: string): Uint8Array {
  const body = enc.encode(` ${key}=${value}\n`);
  let len = body.length + 1;
  while (String(len).length + body.length !== len) len = String(len).length + body.length;
  return enc.encode(`${len} ${key}=${value}\n`);
}

export const padding = (size: number) => new Uint8Array((BLOCK - (size % BLOCK)) % BLOCK);
export const END_OF_ARCHIVE = () => new Uint8Array(BLOCK * 2);

/** The header block(s) of one entry: ustar when the name fits (split at a slash into prefix/name), else pax + ustar. */
export function tarHeader(input: TarHeaderInput): Uint8Array {
  const bytes = enc.encode(input.name);
  if (bytes.length <= 100) return headerBlock({ ...input, nameBytes: bytes });
  for (let i = bytes.length - 101; i < bytes.length; i++) {
    if (i < 1 || i > 155 || bytes[i] !== 0x2f) continue;
    return headerBlock({ ...input, prefixBytes: bytes.subarray(0, i), nameBytes: bytes.subarray(i + 1) });
  }
  const rec = paxRecord("path", input.name);
  const out = new Uint8Array(BLOCK + rec.length + padding(rec.length).length + BLOCK);
  out.set(headerBlock({ name: "././@PaxHeader", size: rec.length, type: "x" }), 0);
  out.set(rec, BLOCK);
  out.set(headerBlock({ ...input, nameBytes: bytes.subarray(0, 100) }), out.length - BLOCK);
  return out;
}

/** The header block(s) of a symlink entry (type 2): a target longer than the ustar field goes in a pax "linkpath" record. */
export function tarLinkHeader(name: string, target: string, mtime = 0): Uint8Array {
  const t = enc.encode(target);
  if (t.length <= 100) return tarHeader({ name, size: 0, type: "2", linkname: target, mtime, mode: 0o777 });
  const rec = [paxRecord("path", name), paxRecord("linkpath", target)];
  const len = rec[0]!.length + rec[1]!.length;
  const out = new Uint8Array(BLOCK + len + padding(len).length + BLOCK);
  out.set(headerBlock({ name: "././@PaxHeader", size: len, type: "x" }), 0);
  out.set(rec[0]!, BLOCK);
  out.set(rec[1]!, BLOCK + rec[0]!.length);
  out.set(headerBlock({ name, size: 0, type: "2", mtime, mode: 0o777, nameBytes: enc.encode(name).subarray(0, 100) }), out.length - BLOCK);
  return out;
}

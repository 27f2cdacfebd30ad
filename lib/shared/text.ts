/** Text helpers shared by the tools: binary sniffing, line endings, base64, visible whitespace. */

const SIGNATURES: [string, number[]][] = [
  ["image/png", [0x89, 0x50, 0x4e, 0x47]],
  ["image/jpeg", [0xff, 0xd8, 0xff]],
  ["image/gif", [0x47, 0x49, 0x46, 0x38]],
  ["image/webp", [0x52, 0x49, 0x46, 0x46]],
  ["application/pdf", [0x25, 0x50, 0x44, 0x46]],
  ["application/zip", [0x50, 0x4b, 0x03, 0x04]],
  ["application/gzip", [0x1f, 0x8b]],
  ["application/x-elf", [0x7f, 0x45, 0x4c, 0x46]],
  ["application/wasm", [0x00, 0x61, 0x73, 0x6d]],
];

/** A guess at the type of binary content, from its first bytes. */
export function sniffType(bytes: Uint8Array): string {
  for (const [type, sig] of SIGNATURES) if (sig.every((b, i) => bytes[i] === b)) return type;
  return "application/octet-stream";
}

/**
 * True when the bytes look binary: a NUL byte, or invalid UTF-8 (a multi-byte character
 * cut at the end of the sample is allowed).
 */
export function looksBinary(sample: Uint8Array, complete: boolean): boolean {
  if (sample.includes(0)) return true;
  let bytes = sample;
  if (!complete) {
    // Drop a possibly cut trailing character (at most 3 bytes).
    let cut = bytes.length;
    for (let i = bytes.length - 1; i >= Math.max(0, bytes.length - 3); i--) {
      const b = bytes[i]!;
      if ((b & 0xc0) === 0x80) continue;
      if (b >= 0xc0) cut = i;
      break;
    }
    bytes = bytes.subarray(0, cut);
  }
  try {
    new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
    return false;
  } catch {
    return true;
  }
}

export type LineEnding = "lf" | "crlf" | "mixed" | "none";

export function lineEnding(text: string): LineEnding {
  const crlf = text.split("\r\n").length - 1;
  const lf = text.split("\n").length - 1;
  if (lf === 0) return "none";
  if (crlf === lf) return "crlf";
  return crlf === 0 ? "lf" : "mixed";
}

/**
 * The bytes of base64 text (whitespace ignored, padding optional); null for anything else. The
 * runtime's own `Uint8Array.fromBase64` where it has one (workerd; not Node 22), else Node's Buffer,
 * else atob. In workerd Buffer's decode of a live poll's marks (53 KB of base64 at 10,000 files) was
 * most of the marks' cost after a tool's edit (docs/benchmarks/investigations-live.md).
 */
export function decodeBase64(s: string): Uint8Array | null {
  const clean = s.replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(clean) || clean.length % 4 === 1) return null;
  const native = (Uint8Array as { fromBase64?: (s: string) => Uint8Array }).fromBase64;
  if (native) {
    try {
      return native.call(Uint8Array, clean);
    } catch {
      // A padded last chunk cut short ("QQ="): the decoders below take it as before.
    }
  }
  try {
    const buffer = nodeBuffer();
    if (buffer) return new Uint8Array(buffer.from(clean, "base64"));
    const bin = atob(clean);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  } catch {
    return null;
  }
}

/** Node's Buffer where the runtime has it: Node's atob and btoa cost ~40 ms for 40 KB (the runner's carried files: lib/sync/carried-files.ts); checked input only. */
type NodeBuffer = { from(s: string | ArrayBufferLike, enc?: string | number, len?: number): Uint8Array & { toString(enc: string): string } };
const nodeBuffer = (): NodeBuffer | undefined => (globalThis as { Buffer?: NodeBuffer }).Buffer;

/**
 * Base64 of `bytes`: the runtime's own `Uint8Array.prototype.toBase64` where it has one (workerd;
 * not Node 22), else Node's Buffer, else through btoa. The fallback's string of char codes costs ~0.1 ms of CPU per
 * 4 KB in workerd, and every write and edit pays it for its undo before-image (undo-journal.ts).
 */
export function encodeBase64(bytes: Uint8Array): string {
  const native = (bytes as Uint8Array & { toBase64?: () => string }).toBase64;
  if (native) return native.call(bytes);
  const buffer = nodeBuffer();
  if (buffer) return buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("base64");
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

/** `bytes` as base64url without padding (RFC 4648 §5): tokens a caller passes back (cursors, sync tokens, receipts, digests). */
export const bytesToBase64Url = (bytes: Uint8Array): string => encodeBase64(bytes).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");

/** The bytes of a base64url token (padding optional); null for anything else (`+`, `/`, whitespace, a cut quantum). */
export const base64UrlToBytes = (token: string): Uint8Array | null =>
  /^[A-Za-z0-9_-]*={0,2}$/.test(token) ? decodeBase64(token.replaceAll("-", "+").replaceAll("_", "/")) : null;

/** `text` (UTF-8) as base64url without padding: tokens a caller passes back (grep's resume, listing cursors). */
export const toBase64Url = (text: string): string => bytesToBase64Url(new TextEncoder().encode(text));

/** The text of a base64url token; throws on bytes that are not base64url or not UTF-8. */
export function fromBase64Url(token: string): string {
  const bytes = base64UrlToBytes(token);
  if (!bytes) throw new Error("not a base64url token");
  return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
}

/**
 * `text` whole when it is at most `max` characters; else cut at its last space or line break before
 * `max` (where that keeps more than half of it; else at `max`), with "…": a reason the model reads is
 * never cut mid-word.
 */
export function cutAtWord(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = text.slice(0, max);
  const at = Math.max(head.lastIndexOf(" "), head.lastIndexOf("\n"), head.lastIndexOf("\t"));
  return `${(at > max / 2 ? head.slice(0, at) : head).trimEnd()}…`;
}

/** Spaces as ·, tabs as →, carriage returns as ␍: for showing why a match failed. */
/** "1 file", "2 files": a count with its noun in the number that agrees (`plural` where adding "s" is wrong). */
export const counted = (n: number, noun: string, plural = `${noun}s`): string => `${n} ${n === 1 ? noun : plural}`;

export const visibleWhitespace = (s: string): string => s.replace(/ /g, "·").replace(/\t/g, "→").replace(/\r/g, "␍");

export const utf8 = new TextEncoder();
export const byteLength = (s: string): number => utf8.encode(s).length;

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The parts as one array (no copy for a single part). */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * Trigrams of the search index. A trigram is three consecutive bytes of a file's *folded*
 * UTF-8 bytes, packed in 24 bits. Folding makes one index serve case-sensitive and
 * case-insensitive queries, and CRLF files match patterns written with \n:
 *   - ASCII A-Z become a-z;
 *   - U+212A KELVIN SIGN becomes "k" and U+017F LONG S becomes "s" (RE2's case folding
 *     makes (?i)k match U+212A and (?i)s match U+017F: the index must not miss those);
 *   - CR before LF is dropped (grep matches CRLF files as if they had LF endings).
 * The same fold is applied to query literals, so "literal occurs in text" implies
 * "every folded trigram of the literal occurs in the folded text".
 */

export const TRIGRAM_SPACE = 1 << 24;

/** The folded bytes of `src` (a new array, at most as long). */
export function foldBytes(src: Uint8Array): Uint8Array {
  const out = new Uint8Array(src.length);
  let n = 0;
  const len = src.length;
  for (let i = 0; i < len; i++) {
    const b = src[i]!;
    if (b >= 0x41 && b <= 0x5a) out[n++] = b | 0x20;
    else if (b < 0x80) {
      if (b === 0x0d && src[i + 1] === 0x0a) continue;
      out[n++] = b;
    } else if (b === 0xe2 && src[i + 1] === 0x84 && src[i + 2] === 0xaa) {
      out[n++] = 0x6b; // U+212A -> k
      i += 2;
    } else if (b === 0xc5 && src[i + 1] === 0xbf) {
      out[n++] = 0x73; // U+017F -> s
      i += 1;
    } else out[n++] = b;
  }
  return out.subarray(0, n);
}

const encoder = new TextEncoder();

/** The folded trigrams of a literal string, in order of appearance, without duplicates. */
export function literalTrigrams(text: string): number[] {
  const f = foldBytes(encoder.encode(text));
  const out: number[] = [];
  const seen = new Set<number>();
  for (let i = 0; i + 2 < f.length; i++) {
    const t = (f[i]! << 16) | (f[i + 1]! << 8) | f[i + 2]!;
    if (!seen.has(t)) {
      seen.add(t);
      out.push(t);
    }
  }
  return out;
}

/**
 * Collects the distinct trigrams of byte arrays. Keeps one 2 MB bitset (2^24 bits) and
 * clears only the bits it set, so collecting is linear in the input.
 */
export class TrigramCollector {
  private readonly bits = new Uint8Array(TRIGRAM_SPACE >>> 3);
  private buf = new Uint32Array(4096);

  /**
   * Sorted distinct trigrams of the folded form of `bytes`. Folds as it goes (the same rules as
   * foldBytes, without a folded copy of the file: one pass over its bytes).
   */
  collect(bytes: Uint8Array): Uint32Array {
    const bits = this.bits;
    let n = 0;
    let t = 0;
    let k = 0;
    const len = bytes.length;
    for (let i = 0; i < len; i++) {
      let b = bytes[i]!;
      if (b >= 0x41 && b <= 0x5a) b |= 0x20;
      else if (b < 0x80) {
        if (b === 0x0d && bytes[i + 1] === 0x0a) continue;
      } else if (b === 0xe2 && bytes[i + 1] === 0x84 && bytes[i + 2] === 0xaa) {
        b = 0x6b; // U+212A -> k
        i += 2;
      } else if (b === 0xc5 && bytes[i + 1] === 0xbf) {
        b = 0x73; // U+017F -> s
        i += 1;
      }
      t = ((t << 8) | b) & 0xffffff;
      if (++k < 3) continue;
      const byte = t >>> 3;
      const mask = 1 << (t & 7);
      if ((bits[byte]! & mask) === 0) {
        bits[byte] = bits[byte]! | mask;
        if (n === this.buf.length) {
          const bigger = new Uint32Array(this.buf.length * 2);
          bigger.set(this.buf);
          this.buf = bigger;
        }
        this.buf[n++] = t;
      }
    }
    const out = this.buf.slice(0, n);
    for (let i = 0; i < n; i++) bits[out[i]! >>> 3] = 0;
    return out.sort();
  }
}

export const trigramText = (t: number): string => String.fromCharCode(t >>> 16, (t >>> 8) & 0xff, t & 0xff);

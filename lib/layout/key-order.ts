/** The order of storage keys, which listings, manifests and packs keep. Pure. */

/** Storage order: by code point, which is the UTF-8 byte order of S3 and R2 keys. */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x - y;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}

/** Past every key below a prefix: `prefix + AFTER_ALL` sorts after them all (U+10FFFF is the largest code point). */
export const AFTER_ALL = "\u{10ffff}";

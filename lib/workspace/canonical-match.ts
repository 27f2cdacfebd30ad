/**
 * Where a string occurs in a text once both are in Unicode NFC: the edit tools' second try when
 * old_string is not in the file byte for byte but is there as canonically equivalent text (é as
 * one code point in one, as e + U+0301 in the other: they look the same, and a model cannot tell
 * which spelling it read, nor type the other one back).
 *
 * The match is mapped back to the file's own text, so only the matched span is replaced and the
 * rest of the file keeps its spelling. Mapping: a text's NFC form is its ASCII characters as they
 * are and each run of non-ASCII characters normalized together with the ASCII character before it
 * (the letter a combining mark may belong to). An ASCII character never takes part in a
 * composition after another character, and is a starter that nothing reorders across, so the
 * pieces normalize independently; the joined pieces are checked against the whole text's NFC form
 * all the same. A match that starts or ends inside a piece whose spelling changed (half of a
 * decomposed letter) cannot be mapped: then there is no canonical match.
 */

/** A span of the original text whose NFC form has another spelling. */
interface Changed {
  from: number;
  to: number;
  normFrom: number;
  normTo: number;
}

const NON_ASCII_RUN = /[^\x00-\x7f]+/g;

/** The text's NFC form and the spans whose spelling changed, or null when the text is already NFC. */
function normalizeMapped(text: string): { norm: string; changed: Changed[] } | null {
  const changed: Changed[] = [];
  const parts: string[] = [];
  let at = 0; // original position copied up to
  let normAt = 0; // length of the normalized text built so far
  for (const m of text.matchAll(NON_ASCII_RUN)) {
    const from = m.index > 0 ? m.index - 1 : 0; // the ASCII character a leading combining mark belongs to
    const piece = text.slice(from, m.index + m[0].length);
    const norm = piece.normalize("NFC");
    if (norm === piece) continue;
    parts.push(text.slice(at, from), norm);
    normAt += from - at;
    changed.push({ from, to: from + piece.length, normFrom: normAt, normTo: normAt + norm.length });
    normAt += norm.length;
    at = from + piece.length;
  }
  if (changed.length === 0) return null;
  parts.push(text.slice(at));
  const norm = parts.join("");
  return norm === text.normalize("NFC") ? { norm, changed } : null;
}

/**
 * Maps ascending normalized positions to original ones, or -1 for a position inside a changed
 * span; one pass over the changed spans for all of a search's matches.
 */
function originalPositions(changed: Changed[]): (p: number) => number {
  let k = 0;
  let delta = 0;
  return (p) => {
    while (k < changed.length && changed[k]!.normTo <= p) {
      delta = changed[k]!.to - changed[k]!.normTo;
      k++;
    }
    const c = changed[k];
    return c && p > c.normFrom ? -1 : p + delta;
  };
}

/**
 * The spans of `text` (original positions, without overlap, in order) that equal `needle` once
 * both are NFC. Null when there is no such match, when neither text nor needle changes under NFC
 * (the exact search already said no), or when some match cannot be mapped to the original text.
 */
export function canonicalMatches(text: string, needle: string): { start: number; end: number }[] | null {
  const want = needle.normalize("NFC");
  if (want === "") return null;
  // NFC leaves a text's ASCII characters as they are (but for a letter a combining mark joins): the longest
  // ASCII run of the wanted text, without its last character, is in the text as it is, or nothing matches.
  // This spares a NO_MATCH the normalization of the whole file when old_string is simply not there.
  const run = (want.match(/[\x00-\x7f]+/g) ?? []).reduce((a, b) => (b.length > a.length ? b : a), "").slice(0, -1);
  if (run && !text.includes(run)) return null;
  const mapped = normalizeMapped(text);
  if (!mapped && want === needle) return null;
  const hay = mapped?.norm ?? text;
  const toOriginal = originalPositions(mapped?.changed ?? []);
  const spans: { start: number; end: number }[] = [];
  for (let i = hay.indexOf(want); i !== -1; i = hay.indexOf(want, i + want.length)) {
    const start = toOriginal(i);
    const end = toOriginal(i + want.length);
    if (start < 0 || end < 0) return null;
    spans.push({ start, end });
  }
  return spans.length ? spans : null;
}

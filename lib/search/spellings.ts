/**
 * Accented letters have two Unicode spellings: precomposed (é, NFC) and decomposed (e + U+0301,
 * NFD, as text from macOS may hold). They look the same, and a model cannot tell which one a file
 * holds, nor type the other. grep searches a pattern's accented letters in both spellings by
 * rewriting each as an alternative (é → (?:é|e\x{301})): one pass, the same storage operations.
 */

/** The letters of `pattern` that Unicode also spells decomposed (a letter and combining marks), once each. */
export function decomposableLetters(pattern: string): string[] {
  if (!/[^\x00-\x7f]/.test(pattern)) return [];
  return [...new Set([...pattern].filter((c) => /\p{M}/u.test(c.normalize("NFD"))))];
}

/**
 * A regular expression matching `pattern` with each decomposable letter in either spelling, or null
 * when it has none, or when an alternative cannot be written in place (a regex with a character class,
 * or such a letter after a backslash).
 */
export function bothSpellings(pattern: string, literal: boolean): string | null {
  const letters = decomposableLetters(pattern);
  if (letters.length === 0) return null;
  const chars = [...pattern];
  if (!literal && (pattern.includes("[") || chars.some((c, i) => i > 0 && chars[i - 1] === "\\" && letters.includes(c)))) return null;
  const both = (c: string) => `(?:${c}|${[...c.normalize("NFD")].map((u) => (u.charCodeAt(0) < 0x80 ? u : `\\x{${u.codePointAt(0)!.toString(16)}}`)).join("")})`;
  const quote = (t: string) => (literal ? t.replace(/[\\^$.|?*+()[\]{}]/g, "\\$&") : t);
  return chars.map((c) => (letters.includes(c) ? both(c) : quote(c))).join("");
}

/** "Did you mean ...?": the closest of a few known names to one the caller got wrong. */

/** Levenshtein distance; strings over 64 characters only match themselves. */
export function editDistance(a: string, b: string): number {
  if (a.length > 64 || b.length > 64) return a === b ? 0 : 99;
  const prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = prev[j]!;
      prev[j] = Math.min(prev[j]! + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = tmp;
    }
  }
  return prev[b.length]!;
}

/** Case, '_' and '-' do not count: filePath, file-path and FILE_PATH all name file_path. */
const fold = (s: string) => s.toLowerCase().replace(/[_-]/g, "");

/** The known name closest to `name`, or null when none is close (at most a third of its letters differ, at least 2). */
export function closestName(name: string, known: readonly string[]): string | null {
  let best: string | null = null;
  let bestD = Infinity;
  const f = fold(name);
  for (const k of known) {
    const d = fold(k) === f ? 0 : editDistance(f, fold(k));
    if (d < bestD) {
      best = k;
      bestD = d;
    }
  }
  return best !== null && bestD <= Math.max(2, Math.floor(f.length / 3)) ? best : null;
}

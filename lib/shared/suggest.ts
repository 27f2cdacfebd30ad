/** "Did you mean ...?": the closest of a few known names to one the caller got wrong (tools, arguments). */

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
export const fold = (s: string) => s.toLowerCase().replace(/[_-]/g, "");

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

/**
 * Names agents carry over from other tools (or other tool sets): an unknown argument with no close
 * spelling is checked against this table, keyed by folded name. A built-in tool's own table of other
 * systems' spellings (lib/contract/foreign-args.ts) is asked before either. Each entry lists what it usually
 * means, in order of preference; only a name the tool really has is suggested.
 */
const SYNONYMS: Record<string, readonly string[]> = {
  path: ["file_path", "working_dir"],
  filepath: ["path"],
  file: ["file_path", "path"],
  filename: ["file_path", "path", "pattern"],
  name: ["pattern", "file_path", "path"],
  dir: ["path", "working_dir"],
  directory: ["path", "working_dir"],
  prefix: ["path"],
  cwd: ["working_dir", "path"],
  source: ["from"],
  src: ["from"],
  sourcepath: ["from"],
  oldpath: ["from"],
  destination: ["to"],
  dest: ["to"],
  dst: ["to"],
  target: ["to"],
  destinationpath: ["to"],
  newpath: ["to"],
  query: ["pattern"],
  regex: ["pattern"],
  regexp: ["pattern"],
  search: ["pattern", "query", "old_string"],
  q: ["query", "pattern"],
  glob: ["pattern"],
  old: ["old_string"],
  oldstr: ["old_string"],
  oldtext: ["old_string"],
  find: ["old_string"],
  new: ["new_string"],
  newstr: ["new_string"],
  newtext: ["new_string"],
  replace: ["new_string"],
  replacement: ["new_string"],
  contents: ["content", "text"],
  data: ["content", "text"],
  text: ["content"],
  content: ["text"],
  cmd: ["command", "code"],
  script: ["command", "code"],
  sourcecode: ["code"],
  lang: ["language"],
  line: ["insert_line", "offset"],
  startline: ["offset", "insert_line"],
  start: ["offset"],
  count: ["limit", "max_results", "head_limit"],
  max: ["limit", "max_results", "head_limit"],
  maxcount: ["head_limit", "limit", "max_results"],
  numresults: ["max_results", "limit"],
  ignorecase: ["case_insensitive"],
  uri: ["url"],
  link: ["url"],
  id: ["task_id"],
  shellid: ["task_id"],
  bashid: ["task_id"],
};

/** The argument the caller most likely meant by `name`: a close spelling, else a well-known synonym the tool has. */
export function suggestArgument(name: string, known: readonly string[]): string | null {
  return closestName(name, known) ?? SYNONYMS[fold(name)]?.find((k) => known.includes(k)) ?? null;
}

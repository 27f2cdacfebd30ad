/**
 * A workspace path as a bash word naming it from any directory (bash's directory carries over
 * between calls): what a message tells the model to run with bash names files this way.
 */
export function bashPath(path: string): string {
  const abs = `/workspace/${path}`;
  return /^[\w./-]+$/.test(abs) ? abs : `'${abs.replaceAll("'", "'\\''")}'`;
}

/**
 * What lstat said of the paths a walk meets (walk.ts): one answer of a batch the stat workers
 * took (stat-pool.ts), an error code thrown as lstat threw it, and the answers of every path the
 * kept listings name, taken side by side before the walk starts (prefetch).
 */
import { statSpread, type Stats } from "./stat-pool.js";

/** What lstat said of one path: its mode, size and fingerprint, or the error's code. */
export type Stat = { mode: number; size: number; fp: string; nlink: number } | string;

/** The prefetched answers: `at` gives a kept directory's index; the entries of its listing that are not directories follow it, in order. */
export interface Prefetched {
  at: Map<string, number>;
  parts: Stats[];
  /** Index where each part starts. */
  starts: number[];
}

/**
 * The lstat of every path the kept listings name (each directory, then each entry of its
 * listing that is not a directory), taken side by side before the walk; a directory `skip`
 * names (one the change journal vouches for) is left out with its entries.
 */
export async function prefetch(tree: string, listings: ReadonlyMap<string, { names: readonly string[]; dirs: readonly boolean[] }>, skip?: (dir: string) => boolean): Promise<Prefetched> {
  const abs: string[] = [];
  const at = new Map<string, number>();
  for (const [d, l] of listings) {
    if (skip?.(d)) continue;
    at.set(d, abs.length);
    const dir = d === "" ? tree : `${tree}/${d}`;
    abs.push(dir);
    for (let i = 0; i < l.names.length; i++) if (!l.dirs[i]) abs.push(`${dir}/${l.names[i]}`);
  }
  const parts = await statSpread(abs);
  const starts: number[] = [];
  let n = 0;
  for (const p of parts) {
    starts.push(n);
    n += p.fp.length;
  }
  return { at, parts, starts };
}

/** What lstat said of a batch's `j`-th path. */
export const answer = (b: Stats, j: number): Stat => b.err[j] ?? { mode: b.mode[j]!, size: b.size[j]!, fp: b.fp[j]!, nlink: b.nlink[j]! };

/** The part holding the prefetched answer at index `i`. */
export function partOf(known: Prefetched, i: number): number {
  let k = known.starts.length - 1;
  while (known.starts[k]! > i) k--;
  return k;
}

/** The prefetched answer at index `i`. */
export function statAt(known: Prefetched, i: number): Stat {
  const k = partOf(known, i);
  return answer(known.parts[k]!, i - known.starts[k]!);
}

/** An answer that is an error code, thrown as the error lstat threw (`rel` names the entry); any other, as it is. */
export function raised(rel: string, st: Stat): Exclude<Stat, string> {
  if (typeof st === "string") throw Object.assign(new Error(`lstat ${rel}: ${st}`), { code: st });
  return st;
}

/**
 * The order grep promises and its cursor names: newest first, then by path (string order). One
 * function gives it: the candidates' sort and the files' numbers kept with the index's join
 * (candidates.ts) both take it from here.
 */
import type { Listed } from "./listing.js";

/** Newest first, then by path (string order): the order the tool promises and a cursor names. */
export const byTimeThenPath = (a: Listed, b: Listed): number => b.modified - a.modified || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);

/**
 * The numbers of `items` in newest-first-then-path order (byTimeThenPath), or null when they are in
 * it already. Items come in the listing's order, which is path order for almost every workspace;
 * then sorting by time alone, a tie broken by the number as the path would break it, gives that
 * order without comparing paths (10,000 of them per search).
 */
export function newestFirstOrder<T>(items: readonly T[], fileOf: (item: T) => Listed): Uint32Array | null {
  let ordered = true;
  for (let k = 1; k < items.length && ordered; k++) ordered = byTimeThenPath(fileOf(items[k - 1]!), fileOf(items[k]!)) < 0;
  if (ordered) return null;
  let byPath = true;
  for (let k = 1; k < items.length && byPath; k++) byPath = fileOf(items[k - 1]!).path < fileOf(items[k]!).path;
  const order = new Uint32Array(items.length);
  for (let k = 0; k < items.length; k++) order[k] = k;
  if (byPath) {
    const time = Float64Array.from(items, (item) => fileOf(item).modified);
    return order.sort((a, b) => time[b]! - time[a]! || a - b);
  }
  return order.sort((a, b) => byTimeThenPath(fileOf(items[a]!), fileOf(items[b]!)) || a - b);
}

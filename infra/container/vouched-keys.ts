/** Keys for the listings a walk took on a change journal's word without one (made-listings.ts). Node only. */
import { statPaths } from "./stat-pool.js";
import { ctimeOf } from "./file-marks.js";

/**
 * During a walk that vouched for listings a download made (made-listings.ts) (`unkeyed`: their directories, kept in
 * `kept`): each gets its directory's fingerprint as its key, taken now (nothing changes the tree
 * during a walk, and the journal vouched that nothing changed it since the listing was made), and
 * stays kept for the next walk only when that directory's ctime is before `settled` (ns), as a
 * listing the walk read (walk.ts). The lstats go to the stat workers (stat-pool.ts).
 */
export async function keyVouched(tree: string, kept: Map<string, { key: string }>, unkeyed: string[], settled: bigint): Promise<void> {
  if (!unkeyed.length) return;
  const st = await statPaths(unkeyed.map((d) => (d === "" ? tree : `${tree}/${d}`)));
  unkeyed.forEach((d, i) => {
    const l = kept.get(d);
    const fp = st.fp[i]!;
    if (!l) return;
    if (st.err[i] !== undefined || ctimeOf(fp) >= settled) kept.delete(d);
    else l.key = fp;
  });
}

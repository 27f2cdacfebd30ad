/**
 * The names a walk stated of each hard-linked file (walk.ts): a file with more links than names seen
 * has a name in a directory the walk took on a change journal's word (a link made since it was read
 * adds no event there: change-journal.ts), or outside the tree. Then the next walk trusts no directory.
 */

/** Hard-linked files by inode: how many links the file has, how many of its names the walk stated. */
export type LinkNames = Map<string, { nlink: number; seen: number }>;

/** A name of a file with `nlink` hard links, stated (its inode is its fingerprint's first field); the walk's result says it saw one. */
export function noteLink(out: { hardLinked: boolean }, named: LinkNames, fp: string, nlink: number): void {
  out.hardLinked = true;
  const inode = fp.slice(0, fp.indexOf(":"));
  const n = named.get(inode);
  if (n) n.seen++;
  else named.set(inode, { nlink, seen: 1 });
}

/** Whether some hard-linked file has a name the walk did not state. */
export const someNameUnseen = (named: LinkNames): boolean => [...named.values()].some((n) => n.seen < n.nlink);

/**
 * Where a workspace path leads through the workspace's symlinks, worked out on the paths alone
 * (docs/symlinks.md): storage is never asked to follow anything. Each prefix of the path that is
 * a link is replaced by its target taken relative to the link's directory; a target that is
 * absolute, or climbs above the workspace root with "..", leads outside. Pure; bounded like the
 * kernel (40 links at most).
 */

/** Most links one resolution follows (Linux's MAXSYMLINKS). */
export const MAX_LINK_HOPS = 40;

export type LinkResolution =
  /** via: the first link on the way; endsInLink: the path's last name is a link's (its target must exist: else it dangles). */
  | { path: string; via: { link: string; target: string } | null; endsInLink: boolean }
  | { outside: { link: string; target: string; reason: "absolute" | "above_root" | "loop" } };

export function resolveLinks(links: ReadonlyMap<string, string>, path: string): LinkResolution {
  let segs = path.split("/");
  let first: { link: string; target: string } | null = null;
  let hops = 0;
  let endsInLink = false;
  for (let k = 1; k <= segs.length; k++) {
    const p = segs.slice(0, k).join("/");
    const target = links.get(p);
    if (target === undefined) continue;
    const link = { link: p, target };
    first ??= link;
    if (++hops > MAX_LINK_HOPS) return { outside: { ...link, reason: "loop" } };
    if (target.startsWith("/")) return { outside: { ...link, reason: "absolute" } };
    endsInLink = k === segs.length;
    const stack = segs.slice(0, k - 1);
    for (const s of target.split("/")) {
      if (s === "" || s === ".") continue;
      if (s !== "..") stack.push(s);
      else if (!stack.pop()) return { outside: { ...link, reason: "above_root" } };
    }
    segs = [...stack, ...segs.slice(k)];
    k = 0; // the new path's prefixes may be links too
  }
  return { path: segs.join("/"), via: first, endsInLink };
}

/**
 * One path, one thing: the rule every import follows for where an admitted entry may land
 * (lib/layers/import.ts). A path holds one file or one link, as in a POSIX tree:
 *  - two entries of the archive at one workspace path (the same name twice, as `tar r` appends it,
 *    or two spellings one path normalizes to: NFC and NFD, `./a` and `a`): the later one is kept,
 *    as `tar x` leaves it, and the earlier is named in the report (`displaced`), never dropped
 *    silently (two NFC/NFD names are two files on disk, one here);
 *  - nothing lands below a link, of the archive or of the workspace: `link -> /etc` then
 *    `link/passwd` would be written through the link by `tar x`; here it is refused and named;
 *  - nothing lands at a directory of the workspace (one with files, or an empty, explicit one),
 *    nor below one of its files (or of the archive's).
 * Whatever an entry replaces in the workspace (a file under a link, a link under a file) the
 * import's writer takes out of the new tree: `kindOf` says what each path ends up holding.
 */
import { ancestorsOf, isWithin } from "../layout/paths.js";

/** What a claim reads of the import's target (import.ts Target): its files and its directories. */
interface Places {
  existing: ReadonlyMap<string, unknown>;
  dirs: ReadonlySet<string>;
}

export type ClaimKind = "file" | "link";

export class PathClaims {
  private readonly held = new Map<string, { name: string; kind: ClaimKind }>();
  /** Directories the entries landed so far imply. */
  private readonly madeDirs = new Set<string>();
  /** The workspace's links an entry may not land below: those a replace keeps (outside its prefix) and all of them for a merge. */
  private readonly links: ReadonlySet<string>;

  constructor(private readonly target: Places, workspaceLinks: Iterable<string>, replaceBelow: string | null, private readonly displaced: (name: string, reason: string) => void) {
    this.links = new Set([...workspaceLinks].filter((p) => replaceBelow === null || !isWithin(p, replaceBelow)));
  }

  /** Claims `path` for an entry named `name`: null when it may land there, else why not (the entry is skipped with it). */
  claim(name: string, path: string, kind: ClaimKind): string | null {
    if (this.target.dirs.has(path)) return `${path} is a directory in the workspace`;
    if (this.madeDirs.has(path)) return `${path} is a directory of the archive (an earlier entry lies below it)`;
    for (const a of ancestorsOf(path)) {
      const held = this.held.get(a)?.kind;
      if (held === "link" || this.links.has(a)) return `${a} is a symlink in the ${held === "link" ? "archive" : "workspace"}, so ${path} cannot be created below it: nothing is written through a link`;
      if (held === "file" || this.target.existing.has(a)) return `${a} is a file, so ${path} cannot be created below it`;
    }
    const earlier = this.held.get(path);
    if (earlier) {
      const spelling = earlier.name === name ? "" : ` as ${JSON.stringify(name)} (names are NFC-normalized, "./" and "//" dropped)`;
      this.displaced(earlier.name, `a later entry of the archive has the same path (${path})${spelling}; the later one is kept`);
    }
    this.held.set(path, { name, kind });
    for (const a of ancestorsOf(path)) this.madeDirs.add(a);
    return null;
  }

  /** Whether `path` is a link of the workspace that stays (an entry may not land below it). */
  isWorkspaceLink(path: string): boolean {
    return this.links.has(path);
  }

  /** What `path` ends up holding from the archive (the last entry that claimed it), or undefined. */
  kindOf(path: string): ClaimKind | undefined {
    return this.held.get(path)?.kind;
  }
}

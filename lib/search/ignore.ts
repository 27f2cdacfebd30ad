/**
 * What the search tools skip by default, and why: hidden entries, a few directories no one
 * means to search (.git, node_modules, vendor, __pycache__), and what .gitignore files in
 * the workspace ignore (root and nested, with git's precedence: deeper files win, and
 * nothing below an ignored directory comes back). The search root itself is never
 * skipped: rules apply to the entries below it.
 */
import ignore, { type Ignore } from "ignore";
import { parentOf } from "../layout/paths.js";
import { counted } from "../shared/text.js";

export const IGNORED_DIRS: ReadonlySet<string> = new Set([".git", "node_modules", "vendor", "__pycache__"]);
/** Each ignored directory's name with its slash: a path that contains none of them has no ignored directory. */
const IGNORED_DIR_SLASH = [...IGNORED_DIRS].map((d) => `${d}/`);

export type SkipReason = "ignored_dir" | "hidden" | "gitignore" | "binary" | "too_large" | "symlink";

const EXAMPLES = 5;

/** Counts of skipped entries by reason, with a few examples each. A skipped directory is one entry. */
export class SkipReport {
  readonly counts: Partial<Record<SkipReason, number>> = {};
  readonly examples: Partial<Record<SkipReason, string[]>> = {};
  private readonly seen = new Set<string>();

  add(reason: SkipReason, entry: string): void {
    const id = `${reason}\0${entry}`;
    if (this.seen.has(id)) return;
    this.seen.add(id);
    this.counts[reason] = (this.counts[reason] ?? 0) + 1;
    const ex = (this.examples[reason] ??= []);
    if (ex.length < EXAMPLES) ex.push(entry);
  }

  /** Adds every entry of `other` (a kept report copied before a call adds its own). */
  addAll(other: SkipReport): this {
    for (const id of other.seen) {
      const cut = id.indexOf("\0");
      this.add(id.slice(0, cut) as SkipReason, id.slice(cut + 1));
    }
    return this;
  }

  get total(): number {
    return Object.values(this.counts).reduce((a, b) => a + (b ?? 0), 0);
  }

  toJSON() {
    return { total: this.total, counts: this.counts, examples: this.examples };
  }

  /** One paragraph for the model, or "" when nothing was skipped. */
  describe(options: { hiddenFlag?: boolean } = {}): string {
    if (this.total === 0) return "";
    // A noun's [one, many] forms (the count reads "1 binary file", "2 binary files"); the rest are said of any count.
    const label: Record<SkipReason, string | [string, string]> = {
      ignored_dir: "in ignored directories (.git, node_modules, vendor, __pycache__)",
      hidden: "hidden (name starts with '.')",
      gitignore: "matched by .gitignore",
      binary: ["binary file", "binary files"],
      too_large: "too large to search",
      symlink: ["symlink", "symlinks"],
    };
    const symlinkNote = ", not followed (read, write and edit follow one that leads to a file inside the workspace; search its target's path, or use bash)";
    const parts = (Object.keys(this.counts) as SkipReason[]).map((r) => {
      const n = this.counts[r] ?? 0;
      const ex = this.examples[r] ?? [];
      const more = n > ex.length ? ", ..." : "";
      const l = label[r];
      const said = typeof l === "string" ? `${n} ${l}` : counted(n, l[0], l[1]);
      return `${said}${r === "symlink" ? symlinkNote : ""}: ${ex.join(", ")}${more}`;
    });
    const hints: string[] = [];
    const hidden = options.hiddenFlag !== false ? (this.counts.hidden ?? 0) : 0;
    const ignored = (this.counts.ignored_dir ?? 0) + (this.counts.gitignore ?? 0);
    if (hidden) hints.push("include_hidden: true");
    if (ignored) hints.push("include_ignored: true");
    // The flags bring back hidden and ignored entries only: said of "them" when those are all, else of which ones (a binary file stays skipped).
    const which = hidden && ignored ? "hidden and ignored" : hidden ? "hidden" : "ignored";
    const flagged = hidden + ignored;
    const hint = !hints.length ? "" : flagged === this.total ? ` Pass ${hints.join(" and/or ")} to include them.` : ` Pass ${hints.join(" and/or ")} to include the ${which} ${flagged === 1 ? "one" : "ones"}; no flag includes the others.`;
    return `[Skipped ${this.total} ${this.total === 1 ? "entry" : "entries"} (not searched): ${parts.join("; ")}.${hint}]`;
  }
}

export interface StaticSkip {
  reason: "ignored_dir" | "hidden";
  /** The skipped entry: a directory (with a trailing "/") or the file. */
  entry: string;
  isDir: boolean;
}

/** The static rule (hidden / ignored directory) that skips `path`, checked below `root`. */
export function staticSkip(path: string, root: string, o: { includeHidden: boolean; includeIgnored: boolean }): StaticSkip | null {
  if (o.includeHidden && o.includeIgnored) return null;
  const rel = root === "" ? path : path.slice(root.length + 1);
  // Most paths hold no hidden name and no ignored directory's name at all: a few native substring
  // searches say so without splitting the path (a search walks every listed path through here).
  if ((o.includeHidden || (rel.charCodeAt(0) !== 46 && !rel.includes("/."))) && (o.includeIgnored || !IGNORED_DIR_SLASH.some((d) => rel.includes(d)))) return null;
  const segs = rel.split("/");
  let at = root === "" ? 0 : root.length + 1;
  for (let k = 0; k < segs.length; k++) {
    const seg = segs[k]!;
    at += seg.length;
    const isDir = k < segs.length - 1;
    if (isDir && !o.includeIgnored && IGNORED_DIRS.has(seg)) return { reason: "ignored_dir", entry: `${path.slice(0, at)}/`, isDir };
    if (!o.includeHidden && seg.startsWith(".")) return { reason: "hidden", entry: isDir ? `${path.slice(0, at)}/` : path, isDir };
    at += 1;
  }
  return null;
}

/** The rules of the .gitignore files of a workspace. */
export class GitIgnores {
  private readonly byDir = new Map<string, Ignore>();
  private ordered: [string, Ignore][] = [];
  private readonly dirCache = new Map<string, boolean>();

  get size(): number {
    return this.byDir.size;
  }

  /** Adds the .gitignore file of directory `dir` ("" = workspace root). */
  add(dir: string, text: string): void {
    try {
      this.byDir.set(dir, ignore().add(text));
    } catch {
      return; // an unreadable rule file ignores nothing
    }
    this.ordered = [...this.byDir.entries()].sort((a, b) => depth(b[0]) - depth(a[0]));
    this.dirCache.clear();
  }

  /** Whether the rules ignore `entry` itself, given that its parent directory is not ignored. */
  private decide(entry: string, isDir: boolean): boolean {
    for (const [dir, ig] of this.ordered) {
      if (dir !== "" && !entry.startsWith(`${dir}/`)) continue;
      const rel = dir === "" ? entry : entry.slice(dir.length + 1);
      try {
        const r = ig.test(isDir ? `${rel}/` : rel);
        if (r.unignored) return false;
        if (!r.ignored) continue;
        // `ignore` passes a parent directory's verdict down; the parent is known not to be
        // ignored (a deeper file re-included it), so that verdict is not this file's own.
        const parent = parentOf(rel);
        if (parent !== "" && ig.test(`${parent}/`).ignored) continue;
        return true;
      } catch {
        continue;
      }
    }
    return false;
  }

  /** The top-most entry below `root` that the rules ignore on the way to `path` ("dir/" or the file), or null. */
  ignoredEntry(path: string, root: string): string | null {
    if (this.byDir.size === 0) return null;
    let at = root === "" ? 0 : root.length + 1;
    for (;;) {
      const slash = path.indexOf("/", at);
      if (slash < 0) break;
      const dir = path.slice(0, slash);
      let ignored = this.dirCache.get(dir);
      if (ignored === undefined) {
        ignored = this.decide(dir, true);
        this.dirCache.set(dir, ignored);
      }
      if (ignored) return `${dir}/`;
      at = slash + 1;
    }
    return this.decide(path, false) ? path : null;
  }
}

const depth = (dir: string): number => (dir === "" ? 0 : dir.split("/").length);

/** True when a glob pattern explicitly names a hidden entry (a segment starting with "."), e.g. ".env" or "**\/.github/**". */
export function namesHidden(pattern: string): boolean {
  return pattern.split("/").some((s) => s.startsWith(".") && s !== "." && s !== "..");
}

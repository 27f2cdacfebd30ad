/**
 * The file listing of a directory tree, with the skip rules applied. The listing is the
 * source of truth of every search tool: the index is only trusted for (path, etag) pairs
 * the listing confirms.
 *
 * Cost: one list request per 1,000 keys. A driver that can walk its keys (a layered workspace:
 * the manifest from memory, one listing of the small upper layer) lists only what it does not
 * know (KeyWalk, lib/storage/types.ts). Directories skipped by a static rule (hidden,
 * node_modules, ...) are jumped over with `startAfter` once a page shows they fill it.
 * When the workspace was listed before, the split points it saw (bounds.json) let the
 * pages after the first be listed in parallel.
 *
 * Explicit directories (markers, keys ending in "/": lib/layout/paths.ts) are never files here: they
 * only add their directory to `dirs` (find, glob with a trailing "/"), as a file or a link implies its parents.
 */
import { baseName, filesPrefix, isDirMarker, isWithin, parentOf } from "../layout/paths.js";
import { readLinks } from "../layout/links.js";
import { canWalk, type KeyWalk, type ObjectInfo } from "../storage/types.js";
import type { DescribeProgress, SearchedWorkspace } from "./workspace-view.js";
import { AFTER_ALL, compareKeys } from "../layout/key-order.js";
import { GitIgnores, SkipReport, staticSkip } from "./ignore.js";
import type { Budget, IndexStore } from "./store.js";
import type { ListingCache, WalkedTree } from "./listing-cache.js";
import { readAncestorIgnores, readGitignore } from "./gitignore-files.js";

export interface Listed {
  path: string;
  etag: string;
  size: number;
  /** Milliseconds since the epoch. */
  modified: number;
}

export interface ScanOptions {
  /** The search root: skip rules apply to entries below it. */
  root: string;
  /** A directory at or below root to list instead of all of it (a glob's literal prefix). */
  listRoot?: string;
  includeHidden: boolean;
  includeIgnored: boolean;
  /** Directories below the root are collected too (find, glob of directories); explicit empty ones included. */
  collectDirs?: boolean;
  /** Most files listed (default 200,000); past it the scan stops and says so. */
  maxFiles?: number;
  /** Told after every list page how many entries were listed so far, and at the end with the total (progress: lib/contract/progress.ts). */
  onListed?: (entries: number, total?: number) => void;
  /** Walks of layered workspaces this isolate made (listing-cache.ts): an unchanged tree is not walked again. */
  cache?: ListingCache | undefined;
  /** The caller's filter of paths (grep's glob and type, glob's, find's pattern): a symlink is a skip only where it would take a file (below listRoot). */
  linkFilter?: ((path: string) => boolean) | null | undefined;
}

export interface Scan {
  files: Listed[];
  /** Directories below the root (when collectDirs), not skipped. */
  dirs: string[];
  skipped: SkipReport;
  /** The scan stopped at maxFiles. */
  truncated: boolean;
  /** List requests made. */
  pages: number;
  /** The kept walk these files are, unfiltered (no .gitignore rule applied), when a cache holds it: grep keeps its join with the index there. */
  walked?: WalkedTree;
}

/** A listing's progress (glob, find): entries listed (files, directories, skipped ones); the total is known at the end. */
export const listingStatus: DescribeProgress = (n, total) => ({ message: total === undefined ? `listed ${n} entries so far` : `listed ${n} entries`, done: n, ...(total !== undefined ? { total } : {}) });

const PAGE = 1000;
const PARALLEL = 6;
const MAX_GITIGNORES = 100;

export async function scanTree(ws: SearchedWorkspace, store: IndexStore, budget: Budget, o: ScanOptions): Promise<Scan> {
  const prefix = filesPrefix(ws.tenant, ws.id);
  const listRoot = o.listRoot ?? o.root;
  const rootPrefix = listRoot === "" ? prefix : `${prefix}${listRoot}/`;
  const maxFiles = o.maxFiles ?? 200_000;
  const skipped = new SkipReport();
  let kept: Listed[] = [];
  const dirs = new Set<string>();
  let gitignoreFiles: string[] = [];
  const pageEnds: string[] = [];
  let pages = 0;
  let truncated = false;
  const rootLen = o.root === "" ? 0 : o.root.length + 1;
  let listed = 0;
  let walked: WalkedTree | undefined;

  // Symlinks are never followed (ripgrep's default): they are named in the skip report (docs/symlinks.md).
  const links = readLinks(ws);
  links.catch(() => {});
  const ancestorsIgnores = o.includeIgnored ? Promise.resolve([]) : readAncestorIgnores(ws, listRoot, budget);

  /** The directories `path` (a file, a marker or a link) lies in, below the root and above a skipped one. */
  const collectParents = (path: string, skip: ReturnType<typeof staticSkip>): void => {
    const limit = skip?.isDir ? skip.entry.length - 1 : path.length;
    for (let at = path.indexOf("/", rootLen); at >= 0 && at < limit; at = path.indexOf("/", at + 1)) dirs.add(path.slice(0, at));
  };

  /** Takes one object; returns the key to jump past when the object lies in a skipped directory. */
  const take = (obj: ObjectInfo): string | null => takePath(obj.key.slice(prefix.length), obj.etag, obj.size, obj.modified.getTime());
  const takePath = (path: string, etag: string, size: number, modified: number): string | null => {
    listed++;
    const skip = staticSkip(path, o.root, o);
    if (o.collectDirs) collectParents(path, skip);
    if (!o.includeIgnored && baseName(path) === ".gitignore" && !(skip?.isDir)) gitignoreFiles.push(path);
    if (skip) {
      skipped.add(skip.reason, skip.entry);
      return skip.isDir ? skip.entry : null;
    }
    if (isDirMarker(path)) return null; // a directory, collected above; never a file
    if (kept.length >= maxFiles) {
      truncated = true;
      return null;
    }
    kept.push({ path, etag, size, modified });
    return null;
  };

  /** Lists keys after `lo` (exclusive; null = from the start) up to `hi` (inclusive; null = to the end). */
  let longestRange = 0;
  const listRange = async (lo: string | null, hi: string | null): Promise<void> => {
    let after = lo;
    for (let n = 1; ; n++) {
      if (truncated) return;
      budget.take("list");
      pages++;
      longestRange = Math.max(longestRange, n);
      const r = await ws.driver.list({ prefix: rootPrefix, limit: PAGE, ...(after !== null ? { startAfter: after } : {}) });
      const objs = r.objects;
      if (objs.length === 0) return;
      const last = objs[objs.length - 1]!.key;
      let jump: string | null = null;
      for (const obj of objs) {
        if (hi !== null && compareKeys(obj.key, hi) > 0) return;
        const dir = take(obj);
        if (dir !== null && last.startsWith(prefix + dir)) {
          jump = prefix + dir + AFTER_ALL;
          break;
        }
      }
      o.onListed?.(listed);
      if (r.cursor === undefined) return;
      pageEnds.push(last.slice(prefix.length));
      after = jump ?? last;
      if (hi !== null && compareKeys(after, hi) >= 0) return;
    }
  };

  /** Lists the tree page by page: the first page, then (when there is more and a hint exists) the rest in parallel. */
  const listPages = async (): Promise<void> => {
    budget.take("list");
    pages++;
    const first = await ws.driver.list({ prefix: rootPrefix, limit: PAGE });
    let jumpFirst: string | null = null;
    const firstLastKey = first.objects[first.objects.length - 1]?.key ?? "";
    for (const obj of first.objects) {
      const dir = take(obj);
      const last = firstLastKey;
      if (dir !== null && last.startsWith(prefix + dir)) {
        jumpFirst = prefix + dir + AFTER_ALL;
        break;
      }
    }
    o.onListed?.(listed);
    let sequential = false;
    if (first.cursor !== undefined && first.objects.length > 0) {
      const firstLast = first.objects[first.objects.length - 1]!.key;
      pageEnds.push(firstLast.slice(prefix.length));
      const start = jumpFirst ?? firstLast;
      const bounds = (await store.readBounds()) ?? [];
      const inside = bounds.map((b) => prefix + b).filter((k) => k.startsWith(rootPrefix) && compareKeys(k, start) > 0).sort(compareKeys);
      if (inside.length === 0) {
        sequential = true;
        await listRange(start, null);
      } else {
        const ranges: [string, string | null][] = [];
        let lo = start;
        for (const b of inside) {
          ranges.push([lo, b]);
          lo = b;
        }
        ranges.push([lo, null]);
        let next = 0;
        await Promise.all(
          Array.from({ length: Math.min(PARALLEL, ranges.length) }, async () => {
            while (next < ranges.length) {
              const [a, b] = ranges[next++]!;
              await listRange(a, b);
            }
          }),
        );
      }
    }
    // Remember split points for next time when the listing of the whole workspace was long.
    if (listRoot === "" && !truncated && pageEnds.length >= 2 && (sequential || longestRange >= 3)) {
      await store.writeBounds(pageEnds.sort(compareKeys)).catch(() => undefined);
    }
  };

  /** Walks a driver that knows most keys without listing them (a layered workspace: its manifest, and one listing of its upper layer). */
  const walkKeys = async (walk: KeyWalk): Promise<void> => {
    try {
      while (!truncated) {
        // What the walker knows (a manifest's entries) comes as it is, a run at a time.
        const run = walk.known ? await walk.known() : [];
        if (run.length > 0) {
          let skipping: string | null = null;
          for (let i = 0; i < run.length && !truncated; i++) {
            const e = run[i]!;
            if (skipping !== null && e.path.startsWith(skipping)) continue;
            const dir = takePath(e.path, e.etag, e.size, e.modified);
            if (dir !== null) skipping = dir;
            if (listed % PAGE === 0) o.onListed?.(listed);
          }
          // The run is sorted: only the last skipped directory can reach past it.
          if (skipping !== null) await walk.skipPast(prefix + skipping);
          continue;
        }
        const obj = await walk.next();
        if (obj === null) break;
        const dir = take(obj);
        if (dir !== null) await walk.skipPast(prefix + dir);
        if (listed % PAGE === 0) o.onListed?.(listed);
      }
    } finally {
      budget.take("list", walk.lists);
      pages += walk.lists;
    }
  };

  if (canWalk(ws.driver)) {
    const walk = ws.driver.walk(rootPrefix);
    const version = o.cache && walk.version ? await walk.version() : null;
    const cacheKey = `${rootPrefix}\u0000${o.root}\u0000${o.includeHidden}\u0000${o.includeIgnored}\u0000${o.collectDirs === true}\u0000${maxFiles}`;
    walked = version === null ? undefined : o.cache!.get(cacheKey, version);
    if (walked) {
      // The same tree as a walk this isolate made: its listing (above) is all this call asks of storage.
      budget.take("list", walk.lists);
      pages += walk.lists;
      kept = walked.files as Listed[]; // read-only from here on, as every caller treats a scan's files
      for (const d of walked.dirs) dirs.add(d);
      gitignoreFiles = walked.gitignoreFiles as string[];
      skipped.addAll(walked.skipped);
      truncated = walked.truncated;
      listed = walked.listed;
    } else {
      await walkKeys(walk);
      if (version !== null) {
        walked = { files: kept, dirs: [...dirs], gitignoreFiles, skipped: new SkipReport().addAll(skipped), truncated, listed };
        o.cache!.set(cacheKey, version, walked);
      }
    }
  } else await listPages();

  o.onListed?.(listed, listed);
  // A link implies its directories as a file does; added past the walk's cache, which holds storage's keys only.
  if (o.collectDirs) for (const p of (await links).keys()) if (isWithin(p, listRoot) && p !== listRoot) collectParents(p, staticSkip(p, o.root, o));

  // .gitignore rules: those above the root, and those listed below it.
  let files = kept;
  let dirList = [...dirs];
  if (!o.includeIgnored) {
    const rules = new GitIgnores();
    for (const [dir, text] of await ancestorsIgnores) rules.add(dir, text);
    const listed = gitignoreFiles.slice(0, MAX_GITIGNORES);
    const texts = await Promise.all(listed.map((p) => readGitignore(ws, p, budget)));
    listed.forEach((p, i) => {
      const t = texts[i];
      if (t !== null && t !== undefined) rules.add(parentOf(p), t);
    });
    if (rules.size > 0) {
      files = [];
      for (const f of kept) {
        const entry = rules.ignoredEntry(f.path, o.root);
        if (entry === null) files.push(f);
        else skipped.add("gitignore", entry);
      }
      dirList = dirList.filter((d) => {
        const entry = rules.ignoredEntry(`${d}/x`, o.root);
        if (entry !== null && entry !== `${d}/x`) {
          skipped.add("gitignore", entry);
          return false;
        }
        return true;
      });
    }
  }
  for (const p of (await links).keys()) if (isWithin(p, listRoot) && p !== listRoot && !staticSkip(p, o.root, o) && (!o.linkFilter || o.linkFilter(p))) skipped.add("symlink", p);
  return { files, dirs: dirList, skipped, truncated, pages, ...(walked && files === kept ? { walked } : {}) };
}


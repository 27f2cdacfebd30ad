/**
 * The walk of a layered workspace's tree, kept per isolate (issue #31 §1): at 10,000 files a
 * search's fixed cost was one pass over every listed file (the manifest merged with the upper
 * layer, the skip rules, the join with the index's file tables), the same on every call while
 * nothing changed.
 *
 * What proves an entry current: the walk's version (KeyWalk.version, lib/layers/merge-list.ts), the
 * manifest's id (immutable) and every object of the upper layer as this call's own listing shows it
 * (key, etag, size, time, whiteout or not). The listing is made on every call, so a write through
 * any door, from any isolate, changes the version the next search sees: there is nothing to
 * invalidate and no expiry. What is kept is a pure function of that version and the scan's options.
 * Nothing proves the upper layer unchanged without listing it (its per-file writes bump no shared
 * record: one would be a hot key on every write), so the one listing request stays.
 *
 * Keyed by the listed prefix (tenant and workspace are in it) and the options; one entry per key
 * (a new version replaces the old). A region of the isolate's one cache budget
 * (lib/shared/isolate-memory.ts), least recently used dropped first. Made by createApp.
 */
import { IsolateMemory, type MemoryRegion } from "../shared/isolate-memory.js";
import type { SkipReport } from "./ignore.js";
import type { CoverageSlot } from "./index-coverage.js";

/** A listed file as the walk keeps it (listing.ts Listed: modified in ms since the epoch). */
interface WalkedFile {
  readonly path: string;
  readonly etag: string;
  readonly size: number;
  readonly modified: number;
}

/**
 * What a walk found before the .gitignore rules and symlinks (read again on every call). Read-only
 * once kept, but for its coverage: grep's join of these files with the index's segments, kept
 * beside them (index-coverage.ts).
 */
export interface WalkedTree extends CoverageSlot {
  readonly files: readonly WalkedFile[];
  readonly dirs: readonly string[];
  readonly gitignoreFiles: readonly string[];
  /** The static skip rules' report (copy it before adding to it). */
  readonly skipped: SkipReport;
  readonly truncated: boolean;
  /** Entries walked (progress). */
  readonly listed: number;
}

interface Entry {
  version: string;
  tree: WalkedTree;
}

export class ListingCache {
  private readonly byKey: MemoryRegion<Entry>;
  constructor(memory = new IsolateMemory()) {
    this.byKey = memory.region("listings");
  }

  /** The tree walked at `version` under `key`, when this isolate walked it. */
  get(key: string, version: string): WalkedTree | undefined {
    const e = this.byKey.get(key);
    return e && e.version === version ? e.tree : undefined;
  }

  /** Keeps a walk (replacing any other version under `key`). */
  set(key: string, version: string, tree: WalkedTree): void {
    this.byKey.set(key, { version, tree }, weigh(version, tree));
  }

  /** Bytes held (tests). */
  get bytes(): number {
    return this.byKey.bytes;
  }
}

/** About what an entry holds: each file's object and strings (UTF-16), the directories, the version. */
function weigh(version: string, tree: WalkedTree): number {
  let bytes = 256 + version.length * 2;
  for (const f of tree.files) bytes += 96 + (f.path.length + f.etag.length) * 2;
  for (const d of tree.dirs) bytes += 40 + d.length * 2;
  // The join with the index (grep): two numbers per covered file.
  return bytes + tree.files.length * 16;
}

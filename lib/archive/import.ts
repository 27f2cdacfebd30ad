/**
 * What every import shares, whatever it writes into: the options and the report, the listing of
 * the target (`listTarget`) and the one admission loop over an archive's entries (`admitted`).
 * The writer is lib/layers/import.ts (packs, a manifest, one layer switch: all or nothing); it is
 * the only one (the per-file writer behind `packImport: false` was dropped, #27: no deployment
 * used it, and it could leave half an import behind).
 * Execute bits, empty directories and links follow the archive (import-tree.ts, docs/symlinks.md).
 */
import { ToolError } from "../shared/errors.js";
import { ancestorsOf } from "../layout/paths.js";
import type { ArchiveWorkspace as Workspace } from "./workspace-view.js";
import type { ArchiveLimits } from "./limits.js";
import type { ArchiveFormat } from "./open.js";
import { decodeName, type ArchiveEntry } from "./entry.js";
import { isLinkTarget, MAX_LINK_TARGET_BYTES, MAX_LINKS, type ExecModes, type ModesDelta } from "../layout/modes.js";
import type { EntryPolicy } from "./policy.js";
import type { Spool } from "./spool.js";
import type { ClaimKind } from "./claims.js";

/** Bodies up to this size are read whole (and fed to the search index); larger ones stream straight into a pack. */
export const SMALL_FILE = 1024 * 1024;
/** Most skipped entries and kept paths listed in a report (the counts are exact). */
export const REPORT_MAX = 100;

export type ImportMode = "merge" | "replace";

export interface ImportOptions {
  mode: ImportMode;
  /** Canonical directory the archive lands in ("" = the root). */
  prefix: string;
  limits: ArchiveLimits;
  spool: Spool;
  contentLength?: number;
  /**
   * Records the import's execute bits and links in the workspace's modes table: one merged conditional
   * delta, made by `build` from the table as it is (lib/layout/modes.ts updateModesRevertibly); `revert`
   * takes it back when the layer switch fails.
   */
  recordModes(build: (now: ExecModes) => ModesDelta): Promise<{ revert(): Promise<void> }>;
}

export interface Target {
  /** path → etag of the files under the prefix when the import began. */
  existing: Map<string, string>;
  /** path → size of the same files (what the storage quotas give back for them). */
  sizes: Map<string, number>;
  /** Directories: explicit ones (markers) and those implied by the files. */
  dirs: Set<string>;
  /** The explicit directories (markers) under the prefix: each one entry of the storage quotas' files. */
  markers: Set<string>;
}

export interface ImportReport {
  format: ArchiveFormat;
  mode: ImportMode;
  prefix: string;
  entries: number;
  files: number;
  /** Bytes of the files that landed (hard links' copies included; entries a later one displaced not). */
  bytes: number;
  created: number;
  updated: number;
  /** Files of the workspace removed: by replace (not in the archive), and in either mode where a link of the archive took their path. */
  deleted: number;
  /** The workspace's symlinks removed: by replace (below the prefix, not in the archive), and in either mode where a file or directory of the archive took their path. */
  links_deleted: number;
  /** The workspace's symlinks the archive's links replaced (the same path). */
  links_replaced: number;
  /** replace: files not in the archive left in place because they changed (or appeared) during the import. */
  kept: string[];
  kept_count: number;
  /** Directory entries in the archive. */
  directories: number;
  /** Of those, the empty ones, kept as explicit directories. */
  empty_directories: number;
  /** Files that landed with the execute bit. */
  executable: number;
  /** Symlinks kept as links (docs/symlinks.md). */
  symlinks: number;
  skipped: { name: string; reason: string }[];
  skipped_count: number;
  /** The report as text, naming everything not kept (import-tree.ts importMessage). */
  message: string;
  ms: number;
}

/** The files under the prefix (path → etag) and the directories there (explicit ones, and those files imply); the prefix must not be (or lie below) a file. */
export async function listTarget(ws: Workspace, prefix: string, max: number): Promise<Target> {
  if (prefix) {
    const files = await Promise.all([prefix, ...ancestorsOf(prefix)].map((p) => ws.head(p)));
    const file = files.find((f) => f !== null);
    if (file) throw new ToolError("NOT_A_DIRECTORY", `Cannot import into ${prefix}: ${file.path} is a file. Choose another prefix, or delete the file first.`, { prefix, file: file.path });
  }
  const existing = new Map<string, string>();
  const sizes = new Map<string, number>();
  const dirs = new Set<string>();
  const markers = new Set<string>();
  for await (const f of ws.walkEntries(prefix)) {
    if (f.type === "directory") {
      // An explicit (empty) directory is a place taken like one its files imply.
      for (const a of [f.path, ...ancestorsOf(f.path)]) dirs.add(a);
      markers.add(f.path);
      continue;
    }
    if (existing.size >= max) {
      throw new ToolError("PAYLOAD_TOO_LARGE", `The import's target ${prefix || "/"} already holds more than ${max} files. Import into a narrower prefix.`, { prefix, max });
    }
    existing.set(f.path, f.etag);
    sizes.set(f.path, f.size);
    for (const a of ancestorsOf(f.path)) dirs.add(a);
  }
  return { existing, sizes, dirs, markers };
}

/** Why a hard link is not imported: what it names is not a file the archive landed before it. */
export const HARD_LINK_REFUSED = "a hard link whose target is no file earlier in the archive (hard links land as copies of the file they name)";

/**
 * The one admission loop of every import: each entry through the policy (skipped ones reported,
 * directory entries counted), then `claim` (claims.ts: a path that cannot be placed is skipped
 * with its reason); yields the entries to write, each with its workspace path. Ask for the entry's
 * body before the next one (archive/entry.ts).
 */
export async function* admitted(
  entries: AsyncIterable<ArchiveEntry>,
  policy: EntryPolicy,
  on: {
    claim(name: string, path: string, kind: ClaimKind): string | null;
    skip(name: string, reason: string): void;
    directory(path: string): void;
    link(path: string, target: string): void;
    /** A hard link to `target`: null when a file landed there earlier in the archive (it is copied to `path` once claimed), else the refusal. */
    linkable(target: string): string | null;
    hardlink(path: string, target: string, mode: number | undefined): void;
  },
): AsyncGenerator<{ path: string; entry: ArchiveEntry }> {
  let links = 0;
  for await (const entry of entries) {
    const a = policy.admit(entry);
    if ("skip" in a) {
      on.skip(entry.name, a.skip);
      continue;
    }
    if ("directory" in a) {
      on.directory(a.directory);
      continue;
    }
    if (entry.kind === "symlink") {
      if (++links > MAX_LINKS) throw new ToolError("PAYLOAD_TOO_LARGE", `The archive holds more than ${MAX_LINKS} symbolic links; a workspace keeps at most that many.`, { reason: "links", max: MAX_LINKS });
      // A link is kept as data, never followed (docs/symlinks.md): tar names its target in the header, zip in the body.
      // A zip's body is read only when it declares a target's size (its stream is held to exactly that): a link of 1 GiB is never read into memory.
      const oversized = entry.linkTarget === undefined && entry.size > MAX_LINK_TARGET_BYTES;
      const target = entry.linkTarget ?? (oversized ? null : decodeName(await entry.bytes()));
      const refused = isLinkTarget(target) ? on.claim(entry.name, a.path, "link") : oversized ? `the link's target is ${entry.size} bytes; at most ${MAX_LINK_TARGET_BYTES}` : `the link's target is not 1-${MAX_LINK_TARGET_BYTES} bytes of UTF-8 without NUL`;
      if (refused) on.skip(entry.name, refused);
      else on.link(a.path, target!);
      continue;
    }
    if (entry.kind === "hardlink") {
      const target = entry.linkTarget === undefined ? null : policy.pathOf(entry.linkTarget);
      const refused = (target === null ? HARD_LINK_REFUSED : on.linkable(target)) ?? on.claim(entry.name, a.path, "file");
      if (refused) on.skip(entry.name, refused);
      else on.hardlink(a.path, target!, entry.mode);
      continue;
    }
    const conflict = on.claim(entry.name, a.path, "file");
    if (conflict) {
      on.skip(entry.name, conflict);
      continue;
    }
    yield { path: a.path, entry };
  }
}

/**
 * One archive into one workspace: read entries as they stream in, admit each through the
 * policy, write it through the ImportWriter, then (mode "replace") delete what the archive did
 * not hold.
 *
 * The rule (per file, README "Import and export"): every file is whole or absent, never partial.
 * Files land in archive order, a few at a time. Entries the policy refuses are skipped and
 * reported; anything else that goes wrong (a bound, a damaged or cut archive, a concurrent
 * change to a file being imported, a storage failure) stops the import: what is in flight
 * finishes, the files that landed stay (and are indexed), nothing after them is written, and
 * the error's details say how many landed. "replace" deletes nothing until every file of the
 * archive has landed, and then only files still at the etag it listed when it began.
 * Execute bits and empty directories follow the archive (import-tree.ts): markers are made and
 * the modes delta recorded once the files have landed.
 */
import { isToolError, ToolError } from "../shared/errors.js";
import { ancestorsOf } from "../layout/paths.js";
import type { ArchiveWorkspace as Workspace } from "./workspace-view.js";
import { ObjectWriter, type ImportWriter, type Target } from "./file-writer.js";
import type { ArchiveLimits } from "./limits.js";
import { openArchive, type ArchiveFormat } from "./open.js";
import { decodeName, type ArchiveEntry } from "./entry.js";
import { isLinkTarget, MAX_LINK_TARGET_BYTES, MAX_LINKS, type ModesDelta } from "../layout/modes.js";
import { saveImportedLinks } from "../layout/links.js";
import { EntryPolicy } from "./policy.js";
import { ImportTree, importMessage } from "./import-tree.js";
import type { Spool } from "./spool.js";

/** Bodies up to this size are read whole and written in the background; larger ones stream straight into storage. */
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
  /** The writer to use (default: one conditional PUT per file). */
  writer?: (ws: Workspace, target: Target) => ImportWriter;
  /** Records the import's execute bits in the workspace's list (lib/layout/modes.ts updateModes: merged with concurrent updates). */
  recordModes(delta: ModesDelta): Promise<unknown>;
}

export interface ImportReport {
  format: ArchiveFormat;
  mode: ImportMode;
  prefix: string;
  entries: number;
  files: number;
  bytes: number;
  created: number;
  updated: number;
  deleted: number;
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

/** The files under the prefix (path → etag) and the directories they imply; the prefix must not be (or lie below) a file. */
export async function listTarget(ws: Workspace, prefix: string, max: number): Promise<Target> {
  if (prefix) {
    const files = await Promise.all([prefix, ...ancestorsOf(prefix)].map((p) => ws.head(p)));
    const file = files.find((f) => f !== null);
    if (file) throw new ToolError("NOT_A_DIRECTORY", `Cannot import into ${prefix}: ${file.path} is a file. Choose another prefix, or delete the file first.`, { prefix, file: file.path });
  }
  const existing = new Map<string, string>();
  const dirs = new Set<string>();
  for await (const f of ws.walk(prefix)) {
    if (existing.size >= max) {
      throw new ToolError("PAYLOAD_TOO_LARGE", `The import's target ${prefix || "/"} already holds more than ${max} files. Import into a narrower prefix.`, { prefix, max });
    }
    existing.set(f.path, f.etag);
    for (const a of ancestorsOf(f.path)) dirs.add(a);
  }
  return { existing, dirs };
}

/** replace: deletes the files under the prefix that the archive did not hold and that still have the etag listed at the start. */
async function deleteMissing(ws: Workspace, prefix: string, target: Target, landed: Map<string, string>, markers: ReadonlySet<string>): Promise<{ deleted: string[]; kept: string[] }> {
  const deleted: string[] = [];
  const kept: string[] = [];
  let batch: { path: string; etag: string }[] = [];
  const flush = async () => {
    // Conditional per file: a file changed since it was listed is kept, not deleted.
    if (batch.length) {
      const r = await ws.deleteMany(batch);
      deleted.push(...r.deleted);
      kept.push(...r.refused);
    }
    batch = [];
  };
  const staleMarkers: { path: string; etag: string }[] = [];
  for await (const f of ws.walkEntries(prefix)) {
    if (f.type === "directory") {
      if (!markers.has(f.path)) staleMarkers.push({ path: f.path, etag: f.etag });
      continue;
    }
    if (landed.has(f.path)) continue;
    if (target.existing.get(f.path) === f.etag) batch.push({ path: f.path, etag: f.etag });
    else kept.push(f.path);
    if (batch.length >= 1000) await flush();
  }
  await flush();
  // Explicit directories the archive does not hold go too (each only in the version listed).
  for (let i = 0; i < staleMarkers.length; i += 1000) await ws.deleteMarkers(staleMarkers.slice(i, i + 1000));
  return { deleted, kept };
}

/**
 * The one admission loop of every import: each entry through the policy (skipped ones reported,
 * directory entries counted), then `claim` (a path that cannot be placed is skipped with its
 * reason); yields the entries to write, each with its workspace path. Ask for the entry's body
 * before the next one (archive/entry.ts).
 */
export async function* admitted(
  entries: AsyncIterable<ArchiveEntry>,
  policy: EntryPolicy,
  on: { claim(path: string): string | null; skip(name: string, reason: string): void; directory(path: string): void; link(path: string, target: string): void },
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
    const conflict = on.claim(a.path);
    if (conflict) {
      on.skip(entry.name, conflict);
      continue;
    }
    if (entry.kind === "symlink") {
      if (++links > MAX_LINKS) throw new ToolError("PAYLOAD_TOO_LARGE", `The archive holds more than ${MAX_LINKS} symbolic links; a workspace keeps at most that many.`, { reason: "links", max: MAX_LINKS });
      // A link is kept as data, never followed (docs/symlinks.md): tar names its target in the header, zip in the body.
      const target = entry.linkTarget ?? (entry.size <= MAX_LINK_TARGET_BYTES ? decodeName(await entry.bytes()) : null);
      if (isLinkTarget(target)) on.link(a.path, target);
      else on.skip(entry.name, `the link's target is not 1-${MAX_LINK_TARGET_BYTES} bytes of UTF-8 without NUL`);
      continue;
    }
    yield { path: a.path, entry };
  }
}

export async function importArchive(ws: Workspace, body: ReadableStream<Uint8Array>, opts: ImportOptions): Promise<ImportReport> {
  const started = Date.now();
  const { limits, prefix } = opts;
  const target = await listTarget(ws, prefix, limits.maxEntries);
  const archive = await openArchive(body, { limits, spool: opts.spool, ...(opts.contentLength !== undefined ? { contentLength: opts.contentLength } : {}) });
  const writer = opts.writer ? opts.writer(ws, target) : new ObjectWriter(ws, target);
  const policy = new EntryPolicy(limits, prefix);
  const tree = new ImportTree();
  const skipped: { name: string; reason: string }[] = [];
  let skippedCount = 0;
  let directories = 0;
  const links = new Map<string, string>();
  const skip = (name: string, reason: string) => {
    if (skipped.length < REPORT_MAX) skipped.push({ name: name.slice(0, 300), reason });
    skippedCount++;
  };
  const directory = (path: string) => {
    directories++;
    tree.directory(path);
  };
  let markers: string[] = [];
  try {
    const link = (p: string, t: string) => void links.set(p, t);
    for await (const { path, entry } of admitted(archive.entries, policy, { claim: (p) => writer.claim(p), skip, directory, link })) {
      tree.file(path, entry.mode);
      await writer.write(path, entry.size <= SMALL_FILE ? await entry.bytes() : entry.stream(), entry.size);
    }
    await writer.finish();
    await saveImportedLinks(ws, links, writer.landed.keys(), opts.mode === "replace" ? prefix : null);
    const empty = tree.emptyDirs(writer.landed.keys(), (p) => target.existing.has(p));
    for (const r of empty.refused) skip(r.name, r.reason);
    markers = await makeMarkers(ws, empty.dirs, skip);
  } catch (e) {
    await writer.settle();
    throw stopped(e, writer, skippedCount);
  } finally {
    await archive.close();
  }
  const removal = opts.mode === "replace" ? await deleteMissing(ws, prefix, target, writer.landed, new Set(markers)) : { deleted: [], kept: [] };
  await opts.recordModes(tree.modesDelta(writer.landed.keys(), removal.deleted));
  await ws.flushChanges();
  const report = {
    format: archive.format,
    mode: opts.mode,
    prefix,
    entries: policy.entries,
    files: writer.landed.size,
    ...writer.stats,
    deleted: removal.deleted.length,
    kept: removal.kept.slice(0, REPORT_MAX),
    kept_count: removal.kept.length,
    directories,
    empty_directories: markers.length,
    symlinks: links.size,
    executable: tree.executable(writer.landed.keys()),
    skipped,
    skipped_count: skippedCount,
  };
  return { ...report, message: importMessage(report), ms: Date.now() - started };
}

/** Makes the markers of the archive's empty directories (a few at a time); one that cannot be made (a file took its place meanwhile) is skipped with the reason. */
async function makeMarkers(ws: Workspace, dirs: readonly string[], skip: (name: string, reason: string) => void): Promise<string[]> {
  const made: string[] = [];
  for (let i = 0; i < dirs.length; i += 6) {
    await Promise.all(dirs.slice(i, i + 6).map(async (d) => {
      try {
        await ws.makeDirectory(d);
        made.push(d);
      } catch (e) {
        if (!isToolError(e)) throw e;
        skip(`${d}/`, e.message);
      }
    }));
  }
  return made.sort();
}

/** The error that stopped an import, with what had landed by then. */
function stopped(e: unknown, writer: ImportWriter, skippedCount: number): ToolError {
  const progress = { files_written: writer.landed.size, skipped_count: skippedCount };
  const tail = ` ${writer.landed.size} file(s) had been written, each whole; nothing was deleted. Fix the cause, then import again (mode "merge" overwrites what landed).`;
  if (isToolError(e)) {
    const what = e.code === "FILE_MODIFIED" || e.code === "ALREADY_EXISTS" ? `${e.message.replace(/ Read it.*$/, "")} The import stopped so as not to overwrite that change.` : e.message;
    return new ToolError(e.code, `${what}${tail}`, { ...e.details, ...progress });
  }
  console.error("import failed", e instanceof Error ? e.stack ?? e.message : String(e));
  return new ToolError("INTERNAL", `The import failed on a storage error.${tail}`, progress);
}

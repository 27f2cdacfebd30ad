/**
 * Import into the lower layer: the archive's files are streamed into packs (a few PUTs of ≤ 8 MB,
 * not one per file) and a new manifest = base ⊕ archive ("merge") or base without the prefix ⊕
 * archive ("replace"); then the workspace's layer pointer is switched (If-Match the record read at
 * the start). **All or nothing:** until that switch nothing is visible; a failed or cut import
 * leaves the workspace and its storage exactly as it was: it deletes the packs it wrote and the
 * index segments it staged (what a process that died midway could not delete is unreachable
 * garbage GC collects: packs by the manifests, segments by the file listing, README "GC").
 * An archive past what the storage quotas could accept (the room left plus what the import could
 * replace: lib/archive/import-bound.ts) stops before the entry that would cross it, and fails so.
 * Upper objects that would shadow imported paths (and, for replace, every upper object under the
 * prefix) are then deleted, each only in the version listed just before the switch; one changed
 * meanwhile is kept (the newer write wins) and reported in `kept`.
 * The search index is fed the same bytes in batches (one segment per batch), staged: each
 * segment's key is kept and none is merged with the workspace's others until the switch.
 * Empty directories of the archive become marker entries of the manifest. The execute bits and the
 * links go to the workspace's modes table in one merged conditional delta (archive/import-tree.ts,
 * docs/symlinks.md) just BEFORE the switch, and are taken back if the switch fails: so the links
 * and bits are part of what the switch commits, and a failed import (refused or failed switch)
 * leaves the table as it was (#26). A process that dies between the two leaves the new links and
 * bits over the old files (a link may dangle) until the import is done again.
 */
import { isToolError, ToolError } from "../shared/errors.js";
import { ancestorsOf, filesPrefix, isWithin, manifestKey, packKey } from "../layout/paths.js";
import { compareKeys } from "../layout/key-order.js";
import { PathClaims, type ClaimKind } from "../archive/claims.js";
import type { ArchiveWorkspace as Workspace } from "../archive/workspace-view.js";
import type { StagedUpkeep } from "../layout/files.js";
import { admitted, HARD_LINK_REFUSED, REPORT_MAX, SMALL_FILE, listTarget, type ImportOptions, type ImportReport } from "../archive/import.js";
import { openArchive } from "../archive/open.js";
import { EntryPolicy } from "../archive/policy.js";
import { ImportTree, importMessage } from "../archive/import-tree.js";
import { ImportBound } from "../archive/import-bound.js";
import { md5Hex } from "../storage/md5.js";
import { importedLinksDelta, readLinks } from "../layout/links.js";
import { Manifest, sortEntries, writeManifest, type ManifestEntry } from "./manifest.js";
import { filesDriver, readMeta, switchBase, type LayerDeps, type MetaRecord } from "./open.js";
import { PackWriter } from "./pack-writer.js";
import { listUpper, mergeManifest, removeUpper } from "./seal.js";
import { Whiteouts } from "./whiteout.js";

const BATCH_FILES = 2000;
const BATCH_BYTES = 4 * 1024 * 1024;

export async function importIntoLayers(deps: LayerDeps, ws: Workspace, rec: MetaRecord, body: ReadableStream<Uint8Array>, opts: ImportOptions): Promise<ImportReport> {
  const started = Date.now();
  const { limits, prefix } = opts;
  // The storage quotas' standing beside the listing (one round trip): what the import may write at most (import-bound.ts).
  const [target, workspaceLinks, standing] = await Promise.all([listTarget(ws, prefix, limits.maxEntries), readLinks(ws), ws.quota?.standing?.() ?? null]);
  refuseLinkedPrefix(prefix, workspaceLinks);
  const archive = await openArchive(body, { limits, spool: opts.spool, ...(opts.contentLength !== undefined ? { contentLength: opts.contentLength } : {}) });
  const policy = new EntryPolicy(limits, prefix);
  const bound = standing ? new ImportBound(standing, target.sizes, prefix) : null;
  const tree = new ImportTree();
  const writer = new PackWriter(deps.storage, ws.tenant);
  const skipped: { name: string; reason: string }[] = [];
  let skippedCount = 0;
  let directories = 0;
  const links = new Map<string, string>();
  /** path → the manifest entry of the last file landed there (a hard link's: its target's, under its own path). */
  const written = new Map<string, ManifestEntry>();
  const skip = (name: string, reason: string) => {
    if (skipped.length < REPORT_MAX) skipped.push({ name: name.slice(0, 300), reason });
    skippedCount++;
  };
  const claims = new PathClaims(target, workspaceLinks.keys(), opts.mode === "replace" ? prefix : null, skip);
  const claim = (name: string, path: string, kind: ClaimKind) => claims.claim(name, path, kind);
  let indexing: Promise<void> = Promise.resolve();
  const staged: StagedUpkeep = { keys: [] };
  /** Removes what the import wrote; called on any failure before the layer pointer switched. */
  const undoWrites = async () => {
    await writer.settle();
    await indexing.catch(() => {});
    await dropWrites(deps, writer.packs.map((id) => packKey(ws.tenant, id)), staged.keys);
  };
  try {
    const directory = (path: string) => {
      directories++;
      tree.directory(path);
    };
    // A hard link is a copy of the file its target held when it was linked: the same bytes in the pack, a manifest entry of its own.
    const linkable = (target: string) => (claims.kindOf(target) === "file" && written.has(target) ? null : HARD_LINK_REFUSED);
    const hardlink = (path: string, target: string, mode: number | undefined) => {
      bound?.file(path, path, 0);
      tree.file(path, mode);
      written.set(path, { ...written.get(target)!, path });
    };
    // A zip declares its sizes up front: past the bound, no entry is read.
    if (bound && archive.declared && bound.binds(limits)) await bound.declared(archive.declared(), policy);
    for await (const { path, entry } of admitted(archive.entries, policy, { claim, skip, directory, link: (p, t) => void links.set(p, t), linkable, hardlink })) {
      bound?.file(entry.name, path, entry.size);
      tree.file(path, entry.mode);
      if (entry.size <= SMALL_FILE) {
        const bytes = await entry.bytes();
        const e = await writer.add(path, bytes);
        written.set(path, e);
        await ws.announce(path, { path, size: e.size, etag: e.etag, modified: new Date(e.modified) }, bytes);
        const p = ws.pendingChanges;
        // One index segment per batch, built while the archive keeps streaming (one batch at a time).
        if (p.files >= BATCH_FILES || p.bytes >= BATCH_BYTES) {
          await indexing;
          indexing = ws.flushChanges(staged);
        }
      } else {
        written.set(path, await writer.addStream(path, entry.stream(), entry.size));
      }
    }
    await writer.finish();
    await indexing;
  } catch (e) {
    await undoWrites();
    throw stopped(e);
  } finally {
    await archive.close();
  }

  // One path, one thing (claims.ts): the last entry of each path is kept, a file or a link.
  const fileEntries = [...written.values()].filter((e) => claims.kindOf(e.path) === "file");
  const files = fileEntries.map((e) => e.path);
  for (const p of links.keys()) if (claims.kindOf(p) !== "link") links.delete(p);
  // A link that lands on a file of the workspace replaces it (tar x unlinks the file first).
  const replacedByLinks = new Set([...links.keys()].filter((p) => target.existing.has(p)));
  const empty = tree.emptyDirs(files, (p) => (links.has(p) || claims.isWorkspaceLink(p) ? "symlink" : target.existing.has(p) ? "file" : undefined));
  for (const r of empty.refused) skip(r.name, r.reason);
  const now = Date.now();
  const markers = empty.dirs.map((d) => ({ path: `${d}/`, etag: EMPTY_MD5, size: 0, modified: now, pack: -1, offset: 0 }));
  const imported = sortEntries([...fileEntries, ...markers]);
  // Files, markers and links: an upper object (or whiteout) at any of these paths gives way to the new base.
  const landed = new Set([...imported.map((e) => e.path), ...replacedByLinks]);
  const landedFiles = new Set(files);
  let manifest: Manifest;
  try {
    const base = rec.meta.base ? await deps.manifests.load(deps.storage, ws.tenant, rec.meta.base) : Manifest.empty();
    const changes = [...imported.map((e) => ({ path: e.path, entry: e as ManifestEntry | null })), ...[...replacedByLinks].map((path) => ({ path, entry: null }))];
    changes.sort((a, b) => compareKeys(a.path, b.path));
    manifest = mergeManifest(base, writer.packs, changes, opts.mode === "replace" ? prefix : undefined);
    await writeManifest(deps.storage, deps.manifests, ws.tenant, manifest);
  } catch (e) {
    await undoWrites();
    throw stopped(e);
  }

  // Upper objects the new base must not stay hidden under (listed now, removed after the switch).
  const fp = filesPrefix(ws.tenant, ws.id);
  const whiteouts = Whiteouts.of(deps.storage, rec.meta);
  const upper = await whiteouts.resolve(deps.storage, await listUpper(deps.storage, ws.tenant, ws.id, prefix ? `${prefix}/` : ""));
  const remove: { key: string; etag: string }[] = [];
  const kept: string[] = [];
  let deleted = 0;
  for (const o of upper) {
    const path = o.key.slice(fp.length);
    const isMarker = path.endsWith("/");
    if (whiteouts.is(o)) {
      if (landed.has(path) || opts.mode === "replace") remove.push({ key: o.key, etag: o.etag });
      continue;
    }
    if (!landed.has(path) && opts.mode !== "replace") continue;
    if (isMarker || target.existing.get(path) === o.etag) remove.push({ key: o.key, etag: o.etag });
    else kept.push(path);
  }
  const gone: string[] = [];
  for (const p of target.existing.keys()) if ((replacedByLinks.has(p) || (opts.mode === "replace" && !landed.has(p))) && !kept.includes(p)) gone.push(p);
  deleted = gone.length;
  const dropAll = async () => {
    await undoWrites();
    await dropWrites(deps, [manifestKey(ws.tenant, manifest.id)], []);
  };
  // The storage quotas: the whole change is charged before the switch (exactly: the bound above only stopped writing early); refused, nothing it wrote stays.
  const change = importChange(fileEntries, gone, target.sizes, markerChange(empty.dirs, target.markers, opts.mode === "replace" ? prefix : null));
  try {
    await ws.quota?.charge(change);
  } catch (e) {
    await dropAll();
    throw e;
  }
  const giveBack = () => ws.quota?.settle({ files: -change.files, bytes: -change.bytes });
  // Execute bits and links: one merged delta, before the switch (taken back if the switch fails).
  let modes: { revert(): Promise<void> };
  try {
    modes = await opts.recordModes((now) => ({ ...tree.modesDelta(landedFiles, gone), links: importedLinksDelta(now.links ?? {}, links, landed, opts.mode === "replace" ? prefix : null) }));
  } catch (e) {
    await giveBack();
    await dropAll();
    throw stopped(e);
  }
  let switched: MetaRecord | null = null;
  try {
    switched = await switchBase(deps.storage, ws.tenant, ws.id, rec, manifest.id);
  } catch (e) {
    // Refused (the pointer moved meanwhile): nothing points at what was written; it is removed and
    // the modes delta taken back. Any other failure: the record read again says whether the switch
    // landed after all (then the import goes on); if not, the modes delta is taken back, but the
    // packs stay (a PUT that failed here might still land later: GC collects them if it never does).
    const refusedSwitch = isToolError(e) && e.code === "CONFLICT";
    const now = refusedSwitch ? null : await readMeta(deps.storage, ws.tenant, ws.id).catch(() => undefined);
    if (now === undefined) throw e;
    if (now?.meta.base !== manifest.id) {
      await modes.revert().catch((err: unknown) => console.warn("a failed import could not take back its modes delta", err instanceof Error ? err.message : String(err)));
      if (refusedSwitch) await dropAll();
      await giveBack();
      throw e;
    }
  }
  const refused = new Set(await removeUpper(deps.storage, remove));
  for (const k of refused) kept.push(k.slice(fp.length));
  await ws.flushChanges();
  // The exact count of the new tree (concurrent writers, kept upper objects), through a view of the new base.
  if (ws.quota?.recount) await ws.quota.recount(await filesDriver(deps, ws.tenant, ws.id, switched?.meta ?? { ...rec.meta, base: manifest.id }));
  let updated = 0;
  for (const p of landedFiles) if (target.existing.has(p)) updated++;
  // The workspace's links the import took out (replace: those below the prefix the archive lacks; either mode: one a file or directory landed on) or replaced with the archive's.
  const linksGone = [...workspaceLinks.keys()].filter((p) => !links.has(p) && (landed.has(p) || (opts.mode === "replace" && isWithin(p, prefix)))).sort();
  const linksReplaced = [...links.keys()].filter((p) => workspaceLinks.has(p)).length;
  const report = {
    format: archive.format,
    mode: opts.mode,
    prefix,
    entries: policy.entries,
    files: landedFiles.size,
    created: landedFiles.size - updated,
    updated,
    // The bytes of the files that landed (an entry a later one displaced wrote its bytes to the pack, but is not in the tree).
    bytes: fileEntries.reduce((n, e) => n + e.size, 0),
    deleted,
    links_deleted: linksGone.length,
    links_replaced: linksReplaced,
    kept: kept.slice(0, REPORT_MAX),
    kept_count: kept.length,
    directories,
    empty_directories: markers.length,
    symlinks: links.size,
    executable: tree.executable(landedFiles),
    skipped,
    skipped_count: skippedCount,
  };
  return { ...report, message: importMessage(report, linksGone), ms: Date.now() - started };
}

/** A prefix that is, or lies below, a link of the workspace: nothing is written through a link (claims.ts), so the import is refused before its archive is read. */
function refuseLinkedPrefix(prefix: string, links: ReadonlyMap<string, string>): void {
  const link = prefix ? [prefix, ...ancestorsOf(prefix)].find((p) => links.has(p)) : undefined;
  if (link === undefined) return;
  const target = links.get(link)!;
  throw new ToolError("SYMLINK_REFUSED", `Cannot import into ${prefix}: ${link} is a symlink (-> ${target}); an import never writes through a link. Import into the path of its target instead.`, { prefix, link, target, reason: "is_link" });
}

/**
 * What an import changes in the storage quotas: each landed file's size less the one it replaces (+1 file when new), the files a
 * replace removes, and `markers`: the explicit directories it makes less those it removes (markerChange; one entry each, 0 bytes).
 */
function importChange(landed: readonly { path: string; size: number }[], gone: readonly string[], sizes: ReadonlyMap<string, number>, markers: number): { files: number; bytes: number } {
  const out = { files: markers, bytes: 0 };
  for (const e of landed) {
    const old = sizes.get(e.path);
    out.bytes += e.size - (old ?? 0);
    if (old === undefined) out.files++;
  }
  for (const p of gone) {
    out.bytes -= sizes.get(p) ?? 0;
    out.files--;
  }
  return out;
}

/**
 * The explicit directories an import adds to the workspace's entries: its markers not there before, less (replace, `replaceIn`:
 * the prefix) the workspace's markers there that it does not make again (the new base drops them, and their upper objects go).
 */
function markerChange(made: readonly string[], existing: ReadonlySet<string>, replaceIn: string | null): number {
  let n = 0;
  for (const d of made) if (!existing.has(d)) n++;
  if (replaceIn !== null) {
    const kept = new Set(made);
    for (const d of existing) if (!kept.has(d)) n--;
  }
  return n;
}

/** The etag of an empty marker object (the MD5 of no bytes), as storage gives a marker mkdir makes. */
const EMPTY_MD5 = md5Hex(new Uint8Array(0));

/** A failed import removes the packs (and manifest) it wrote and the index segments it staged: nothing points at them. Best effort: what is left, GC collects. */
async function dropWrites(deps: LayerDeps, keys: readonly string[], segments: readonly string[]): Promise<void> {
  const all = [...keys, ...segments];
  for (let i = 0; i < all.length; i += 1000) {
    await deps.storage.delete(all.slice(i, i + 1000)).catch((e: unknown) => console.warn(`could not remove ${all.length} object(s) a failed import wrote; GC will`, e instanceof Error ? e.message : String(e)));
  }
}

function stopped(e: unknown): ToolError {
  const tail = " Nothing was imported (an import into packs is all or nothing); fix the cause and import again.";
  if (isToolError(e)) return new ToolError(e.code, `${e.message}${tail}`, { ...e.details, files_written: 0 });
  console.error("import failed", e instanceof Error ? e.stack ?? e.message : String(e));
  return new ToolError("INTERNAL", `The import failed on a storage error.${tail}`, { files_written: 0 });
}

/**
 * A workspace as the tools see it: canonical paths in, files and directories out. It builds every storage key (through
 * lib/paths), maps storage conditions to tool errors, and keeps the session's file records (session-files.ts) and tells
 * listeners of changes (change-feed.ts). Tools never see keys or tenants. The class holds the keys and the call's state, and
 * delegates, one line per method, to the files of its seams: what is at a path (lookups.ts), whole-file reads (file-reads.ts),
 * listings (entries.ts), writes (file-writes.ts), explicit directories (directories.ts), deletes (deletes.ts), the session's records (session-files.ts).
 *
 * Directories are implied by the files below them, or explicit: a zero-byte marker at "<dir>/"
 * (lib/layout/paths.ts, dirMarkerKey) keeps an empty one. This class is the one place that reads markers:
 * list, scan, walk, walkEntries, stat and isDirectory turn them into directories, so no caller ever sees one as a file.
 */
import type { ToolError } from "../shared/errors.js";
import { dirMarkerKey, fileKey, filesPrefix } from "../layout/paths.js";
import type { RecordStore } from "./records.js";
import type { GetResult, ObjectInfo, PutBody, StorageDriver } from "../storage/types.js";
import { listPage, scanPage, walkEntries } from "./entries.js";
import type { DeleteItem, FileInfo, StagedUpkeep, Stat, WalkEntry } from "../layout/files.js";
import { deleteMarkers, makeDirectory } from "./directories.js";
import { hasEntries, head, headMarker, isDirectory, notFound, requireFile, stat, walkFiles } from "./lookups.js";
import type { ToolList } from "../layout/workspace-meta.js";
import type { UndoJournal } from "./undo-journal.js";
import { ChangeFeed } from "./change-feed.js";
import { deleteFile, deleteFiles } from "./deletes.js";
import { openForChange, readBytes, readForChange, readMany } from "./file-reads.js";
import { putFile, type PutFileOptions } from "./file-writes.js";
import type { EarlyReads } from "./early.js";
import { SessionFiles } from "./session-files.js";
import type { ListEntry, ScanItem, StorageQuota, WorkspaceOptions } from "./workspace-types.js";
import type { VersionCache } from "./version-cache.js";
export type { ListEntry, ScanItem, StorageDelta, StorageQuota, WorkspaceListener, WorkspaceOptions } from "./workspace-types.js";

export class Workspace {
  readonly driver: StorageDriver;
  readonly records: RecordStore;
  readonly tenant: string;
  readonly id: string;
  /** The tools calls on this workspace may use (absent: all); read from meta.json when the workspace is opened. */
  readonly tools: ToolList | undefined;
  readonly instance: string | undefined; // WorkspaceOptions.instance: the sync tokens of its runs name it
  private readonly prefix: string;
  /** Who hears of changes, and the changes queued for them (deferChanges). */
  private readonly changes: ChangeFeed;
  /** The session's file records (read before write). */
  private readonly session: SessionFiles;
  /** Reads started before the workspace was opened (early.ts), taken by the first GET of their key. */
  private readonly early: EarlyReads | undefined;
  /** The undo journal of the call this Workspace serves (none: changes are not undoable, e.g. raw files route). */
  readonly undo: UndoJournal | undefined;
  readonly quota: StorageQuota | undefined; // charged by every write, given back by every delete (WorkspaceOptions.quota)
  /** The isolate's last seen versions of files (version-cache.ts). */
  private readonly versions: VersionCache | undefined;
  private readonly upkeep: (() => Promise<StorageDriver>) | undefined;
  private upkeepOpened: Promise<StorageDriver> | undefined;
  /** For usage: storage bytes of this request, its foreground commands' sandbox time however they ended (takeRun, lib/exec/tool-support.ts; undefined: none ran), its tools' bytes to and from hosts outside Toolshed (lib/tools/web/net-bytes.ts, takeRun). */
  bytesRead = 0;
  bytesWritten = 0;
  sandboxMs: number | undefined;
  netBytesIn = 0;
  netBytesOut = 0;

  constructor(opts: WorkspaceOptions) {
    this.driver = opts.driver;
    this.records = opts.records;
    this.tenant = opts.tenant;
    this.id = opts.id;
    this.tools = opts.tools;
    if ((this.instance = opts.instance) !== undefined) opts.records.bindInstance(this.instance); // a record of an earlier workspace of this id is none
    this.prefix = filesPrefix(opts.tenant, opts.id);
    this.changes = new ChangeFeed(opts.listeners ?? [], opts.deferChanges ?? false, opts.background);
    this.session = new SessionFiles(opts.records, opts.background);
    this.undo = opts.undo;
    this.quota = opts.quota;
    this.early = opts.early;
    this.versions = opts.versions;
    this.upkeep = opts.upkeep;
  }

  /** The files as work after the call (listeners: index upkeep) sees them: WorkspaceOptions.upkeep, opened once; else `driver`. */
  upkeepDriver(): Promise<StorageDriver> {
    if (!this.upkeep) return Promise.resolve(this.driver);
    return (this.upkeepOpened ??= this.upkeep());
  }

  /** This call saw the whole of `path` at `info` (a read, a change's read): the isolate keeps it (version-cache.ts). */
  noteVersion(path: string, info: Omit<FileInfo, "path">, bytes: Uint8Array): void {
    this.versions?.remember(this.key(path), info, bytes);
  }

  /** Cancels the early reads the call did not take (executeTool, when the call ends). */
  discardEarly(): void {
    void this.early?.discard();
  }

  /** The storage key of a canonical path. */
  key(path: string): string {
    return fileKey(this.tenant, this.id, path);
  }

  /** The storage key of an explicit directory's marker. */
  markerKey(dir: string): string {
    return dirMarkerKey(this.tenant, this.id, dir);
  }

  /** The canonical path of a storage key of this workspace (a marker gives its directory). */
  pathOf(key: string): string {
    return key.slice(this.prefix.length).replace(/\/$/, "");
  }

  /** The listing prefix of a directory's contents (its own marker included, at rel ""). */
  dirPrefix(dir: string): string {
    return dir === "" ? this.prefix : `${this.key(dir)}/`;
  }

  /** A file's info from its storage object. */
  toInfo(o: ObjectInfo): FileInfo {
    return { path: this.pathOf(o.key), size: o.size, etag: o.etag, modified: o.modified, ...(o.contentType ? { contentType: o.contentType } : {}), ...(o.writer ? { writer: o.writer } : {}) };
  }

  // ---- what is at a path (lookups.ts) ----

  head(path: string): Promise<FileInfo | null> {
    return head(this, path);
  }

  isDirectory(path: string): Promise<boolean> {
    return isDirectory(this, path);
  }

  /** The marker of an explicit directory, or null (implied or missing). */
  headMarker(dir: string): Promise<{ etag: string } | null> {
    return headMarker(this, dir);
  }

  /** Whether a directory holds anything besides its own marker. */
  hasEntries(dir: string): Promise<boolean> {
    return hasEntries(this, dir);
  }

  stat(path: string): Promise<Stat | null> {
    return stat(this, path);
  }

  /** A file's info, or NOT_FOUND / IS_DIRECTORY with a hint. */
  requireFile(path: string): Promise<FileInfo> {
    return requireFile(this, path);
  }

  /** NOT_FOUND naming the closest existing paths. */
  notFound(path: string, what = "File"): Promise<ToolError> {
    return notFound(this, path, what);
  }

  async get(path: string, range?: { offset: number; length?: number }): Promise<GetResult | null> {
    const r = await this.driver.get(this.key(path), range ? { range } : undefined);
    if (r) this.bytesRead += r.range.length;
    return r;
  }

  // ---- whole files: the bytes of files about to be searched, shown or changed (file-reads.ts) ----

  /** The bytes of many small listed files (null for one gone since); packed ones in a few range reads. */
  readMany(files: readonly FileInfo[]): Promise<(Uint8Array | null)[]> {
    return readMany(this, files);
  }

  /** The whole of a file the caller has looked up, as bytes; FILE_TOO_LARGE past maxBytes. */
  readBytes(file: FileInfo, maxBytes: number): Promise<{ bytes: Uint8Array; info: FileInfo }> {
    return readBytes(this, file, maxBytes);
  }

  /** A file about to be changed, in one GET, `check` (read-before-write) first; its bytes up to holdBytes; null when there is none. */
  openForChange(path: string, holdBytes: number, check: (info: FileInfo) => Promise<void>): Promise<{ info: FileInfo; bytes: Uint8Array | null } | null> {
    return openForChange(this, path, holdBytes, check);
  }

  /** The whole of a file about to be changed: NOT_FOUND / IS_DIRECTORY with a hint, FILE_TOO_LARGE past maxBytes (after `check`). */
  readForChange(path: string, maxBytes: number, check: (info: FileInfo) => Promise<void>): Promise<{ bytes: Uint8Array; info: FileInfo }> {
    return readForChange(this, path, maxBytes, check);
  }

  /**
   * Writes a file. `ifMatch` guards an overwrite, `create` makes it create-only.
   * Refuses a path that is a directory or lies below a file.
   * `record`: the session knows the version written: it is written with the session as its
   * `writer` (read-before-write: session-files.ts), no KV record.
   * `last`: this is the call's last change: its undo record is written BESIDE the file's PUT when
   * the storage's etags are content hashes (StorageDriver.contentEtags), one round trip for both;
   * UndoJournal.commit() deletes it when the PUT was refused or landed at another etag.
   */
  put(path: string, body: PutBody, opts: PutFileOptions = {}): Promise<FileInfo> {
    return putFile(this, path, body, opts, { writer: this.session.id, landed: (p, info, bytes) => this.notify(p, info, bytes) });
  }

  /**
   * Makes `dir` an explicit directory (mkdir -p: its ancestors need nothing, they are implied).
   * Refuses a path that is a file or lies below one. created: false when the marker was there.
   * Markers are not files: listeners (the search index) are not told.
   */
  makeDirectory(dir: string, opts: { placeChecked?: boolean } = {}): Promise<{ created: boolean; etag: string }> {
    return makeDirectory(this, dir, opts);
  }

  /**
   * Removes the marker of an explicit directory (rmdir). `ifMatch`: only the marker version
   * the caller saw (false when it changed; true when it is already gone). The caller checks
   * emptiness where it matters (the directory then stays, implied by what is below it).
   */
  async removeDirectory(dir: string, opts: { ifMatch?: string } = {}): Promise<boolean> {
    return (await this.deleteMarkers([{ path: dir, etag: opts.ifMatch ?? null }])).refused.length === 0;
  }

  /**
   * Removes the markers of explicit directories (recursive delete, move, undo of a copy), each
   * only if it is still the version given (`etag`; null: whatever is there), like deleteMany for
   * files. A marker already gone counts as removed; one in another version is refused and kept.
   */
  deleteMarkers(dirs: readonly DeleteItem[]): Promise<{ refused: string[]; gone: string[] }> {
    return deleteMarkers(this, dirs);
  }

  /** Deletes one file if it is still the version `etag` (null: whatever is there); FILE_MODIFIED, and nothing deleted, when it changed or went since (deletes.ts). */
  delete(path: string, etag: string | null): Promise<void> {
    return deleteFile(this, path, etag, (p) => this.notify(p, null));
  }

  /** Deletes files, each only if it is still the version given; the one way files are deleted (deletes.ts). */
  deleteMany(items: readonly DeleteItem[]): Promise<{ deleted: string[]; refused: string[] }> {
    return deleteFiles(this, items, (p) => this.notify(p, null));
  }

  /** Tells listeners about a file a bulk writer stored itself (packs: lib/layers/import.ts); queued with deferChanges. */
  announce(path: string, info: FileInfo, content?: Uint8Array): Promise<void> {
    return this.changes.notify(this, path, info, content);
  }

  /** Every change made through this Workspace: the isolate's versions learn it, listeners hear of it. */
  private notify(path: string, info: FileInfo | null, content?: Uint8Array): Promise<void> {
    if (info) this.versions?.remember(this.key(path), info, content);
    else this.versions?.forget(this.key(path));
    return this.changes.notify(this, path, info, content);
  }

  /** Changes queued by a deferChanges workspace (files, bytes of content held). */
  get pendingChanges(): { files: number; bytes: number } {
    return this.changes.pending;
  }

  /** Hands the queued changes to every listener as one batch; `staged` lists what they store for it (an all-or-nothing writer: WorkspaceListener.changedBatch). */
  flushChanges(staged?: StagedUpkeep): Promise<void> {
    return this.changes.flush(this, staged);
  }

  /**
   * One page of a directory. Non-recursive pages list files and subdirectories;
   * recursive pages list every file below and the directories they and markers imply.
   */
  list(dir: string, opts: { recursive?: boolean; cursor?: string; limit?: number } = {}): Promise<{ entries: ListEntry[]; cursor?: string }> {
    return listPage(this, dir, opts);
  }

  /**
   * One raw page below a directory in storage order, as paths relative to it (a directory,
   * rolled-up or explicit, ends with "/"). `after` resumes after such a relative position;
   * listings that page by position (ls) use it instead of storage cursors.
   */
  scan(dir: string, opts: { recursive?: boolean; after?: string; cursor?: string; limit?: number } = {}): Promise<{ items: ScanItem[]; cursor?: string }> {
    return scanPage(this, dir, opts);
  }

  /** Every file below a directory, page by page (bounded by maxFiles); markers are skipped. */
  walk(dir: string, maxFiles = Infinity): AsyncGenerator<FileInfo> {
    return walkFiles(this, dir, maxFiles);
  }

  /**
   * Every file and explicit directory below `dir` (the directory's own marker first, when it
   * has one), in storage order, bounded by maxEntries: what a recursive delete, move or copy
   * must carry. Directories implied by files are not entries.
   */
  walkEntries(dir: string, maxEntries = Infinity): AsyncGenerator<WalkEntry> {
    return walkEntries(this, dir, maxEntries);
  }

  // ---- session records (session-files.ts) ----

  /** Starts what recordRead(path) will need on the call's path (session-files.ts: prefetchForRead). */
  prefetchReadRecord(path: string): void {
    this.session.prefetchForRead(path);
  }

  /** The session read `path` at `etag` (`writer`: the version's, when known: the session's own needs no record). */
  recordRead(path: string, etag: string, writer?: string): Promise<void> {
    return this.session.recordRead(path, etag, writer);
  }

  /** Before changing an existing file: the session must have read it, and it must not have changed since. */
  requireReadUnchanged(path: string, current: FileInfo): Promise<void> {
    return this.session.requireReadUnchanged(path, current);
  }
}

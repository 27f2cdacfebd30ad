/**
 * What the Workspace (workspace.ts) takes and gives: file info, directory stats, delete items, the
 * change feed's listeners and changes, the options a Workspace is opened with, and WorkspaceCore: what
 * its parts (reads, writes, deletes, entries, the change feed, links) use of it. Declarations only.
 */
import type { RecordStore } from "./records.js";
import type { GetResult, ObjectInfo, StorageDriver } from "../storage/types.js";
import type { ToolError } from "../shared/errors.js";
import type { ToolList } from "../layout/workspace-meta.js";
import type { UndoJournal } from "./undo-journal.js";
import type { EarlyReads } from "./early.js";
import type { VersionCache } from "./version-cache.js";
import type { FileChange, FileInfo, StagedUpkeep } from "../layout/files.js";
import type { QuotaStanding } from "../limits/fields.js";

export interface ListEntry {
  name: string;
  path: string;
  type: "file" | "directory";
  size?: number;
  modified?: string;
  etag?: string;
}

export interface ScanItem {
  /** Path relative to the scanned directory; a directory (rolled-up or explicit) ends with "/". */
  rel: string;
  dir: boolean;
  size?: number;
  modified?: Date;
  etag?: string;
}

/**
 * The Workspace (workspace.ts) as its parts and its listeners see it: declared here, not imported
 * from workspace.ts, so the class and the modules it delegates to do not import each other.
 */
export interface WorkspaceCore {
  readonly driver: StorageDriver;
  readonly records: RecordStore;
  readonly tenant: string;
  readonly id: string;
  readonly undo: UndoJournal | undefined;
  readonly quota: StorageQuota | undefined;
  bytesRead: number;
  bytesWritten: number;
  key(path: string): string;
  markerKey(dir: string): string;
  pathOf(key: string): string;
  dirPrefix(dir: string): string;
  toInfo(o: ObjectInfo): FileInfo;
  upkeepDriver(): Promise<StorageDriver>;
  noteVersion(path: string, info: Omit<FileInfo, "path">, bytes: Uint8Array): void;
  head(path: string): Promise<FileInfo | null>;
  isDirectory(path: string): Promise<boolean>;
  requireFile(path: string): Promise<FileInfo>;
  notFound(path: string, what?: string): Promise<ToolError>;
  get(path: string, range?: { offset: number; length?: number }): Promise<GetResult | null>;
  list(dir: string, opts?: { recursive?: boolean; cursor?: string; limit?: number }): Promise<{ entries: ListEntry[]; cursor?: string }>;
}

/** A change of a workspace's stored files and bytes (negative: fewer). */
export interface StorageDelta {
  files: number;
  bytes: number;
}

/**
 * The tenant's storage quotas as a Workspace sees them (lib/limits/storage-quota.ts makes one;
 * docs/limits-and-quotas.md): every write charges its change before anything is written, every
 * delete and every failed write gives back.
 */
export interface StorageQuota {
  /** Before a write: charges `delta`; QUOTA_EXCEEDED (naming quota, usage, limit) when it would cross a quota, and nothing is charged. */
  charge(delta: StorageDelta): Promise<void>;
  /** After the fact (a delete, a failed write's charge, a size learnt only after writing): applied, never refused. */
  settle(delta: StorageDelta): Promise<void>;
  /** After a bulk change (an import): sets the workspace's exact count from a listing of its tree (`driver`: a view of the new tree). */
  recount?(driver?: StorageDriver): Promise<void>;
  /** Where each quota stands for this caller (usage with room held ahead, and limit): a bulk writer's bound before it writes (lib/archive/import-bound.ts); null when not known. */
  standing?(): Promise<QuotaStanding | null>;
}

/** Told about every change made through a Workspace (search indexes listen here). */
export interface WorkspaceListener {
  /** `content` is the file's bytes when the writer had them in hand (saves a re-read). */
  changed(ws: WorkspaceCore, path: string, info: FileInfo | null, content?: Uint8Array): Promise<void>;
  /**
   * Many changes at once (a Workspace with `deferChanges`); without it, `changed` is called for each.
   * `staged`: the writer may still fail as a whole (an import into packs): the keys of what the
   * listener stores for this batch are added to it, and nothing of it is merged with other data,
   * so the writer can remove exactly that if it fails.
   */
  changedBatch?(ws: WorkspaceCore, changes: FileChange[], staged?: StagedUpkeep): Promise<void>;
  /**
   * A change told after the response (the Workspace has `background`): the listener may hold it
   * briefly to handle it with others (lib/shared/held-batches.ts); settles once handled. Without it, `changed`.
   */
  changedSoon?(ws: WorkspaceCore, change: FileChange): Promise<void>;
}

export interface WorkspaceOptions {
  driver: StorageDriver;
  records: RecordStore;
  tenant: string;
  id: string;
  listeners?: WorkspaceListener[];
  /** Queue changes instead of telling listeners one by one; flushChanges() hands them over as one batch (bulk writers). */
  deferChanges?: boolean;
  /** The workspace's tool list (meta.json `tools`; lib/run/toolset.ts): executeTool refuses tools outside it. */
  tools?: ToolList | undefined;
  /** Which instance of the workspace id this is (meta.json `created_at`): a run's sync token names it (lib/sync/token.ts workspaceClaims). */
  instance?: string | undefined;
  /**
   * The runtime's waitUntil (Workers): listeners (index upkeep) run after the response instead of
   * on it. Safe for search: grep reads every file no segment covers at its listed version directly.
   */
  background?: (p: Promise<unknown>) => void;
  /** The call's undo journal (lib/run/undo/): every write and delete keeps its before-image there. */
  undo?: UndoJournal;
  /** The tenant's storage quotas: every write is charged before it is written, every delete gives back. Absent: not counted. */
  quota?: StorageQuota;
  /** Reads started before the workspace was opened (lib/workspace/early.ts); `driver` reads through its storage. */
  early?: EarlyReads;
  /** The isolate's last seen versions of files (version-cache.ts): told of every write, delete and whole read. */
  versions?: VersionCache;
  /**
   * The workspace's files for work after the call (listeners: index upkeep), when `driver` is
   * limited to what the call itself may do (a call on a known record: lib/api/routes/known-workspace.ts).
   * Absent: `driver`.
   */
  upkeep?: () => Promise<StorageDriver>;
}

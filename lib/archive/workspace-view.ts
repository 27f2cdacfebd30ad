/**
 * The workspace an import writes and an export reads (a Workspace, lib/workspace/workspace.ts, is
 * one), declared here because archive sits below the workspace: what archive and the pack import
 * (lib/layers/import.ts) call on it.
 */
import type { ToolError } from "../shared/errors.js";
import type { GetResult, PutBody, StorageDriver } from "../storage/types.js";
import type { DeleteItem, FileInfo, StagedUpkeep, WalkEntry } from "../layout/files.js";
import type { LinkStore } from "../layout/links.js";
import type { QuotaStanding } from "../limits/fields.js";

export interface ArchiveWorkspace extends LinkStore {
  head(path: string): Promise<FileInfo | null>;
  headMarker(dir: string): Promise<{ etag: string } | null>;
  notFound(path: string, what?: string): Promise<ToolError>;
  get(path: string, range?: { offset: number; length?: number }): Promise<GetResult | null>;
  readMany(files: readonly FileInfo[]): Promise<(Uint8Array | null)[]>;
  walk(dir: string, maxFiles?: number): AsyncGenerator<FileInfo>;
  walkEntries(dir: string, maxEntries?: number): AsyncGenerator<WalkEntry>;
  put(path: string, body: PutBody, opts?: { ifMatch?: string; create?: boolean; length?: number; placeChecked?: boolean }): Promise<FileInfo>;
  makeDirectory(dir: string, opts?: { placeChecked?: boolean }): Promise<{ created: boolean; etag: string }>;
  deleteMany(items: readonly DeleteItem[]): Promise<{ deleted: string[]; refused: string[] }>;
  deleteMarkers(dirs: readonly DeleteItem[]): Promise<{ refused: string[] }>;
  /** Tells listeners about a file a bulk writer stored itself (packs); queued with deferChanges. */
  announce(path: string, info: FileInfo, content?: Uint8Array): Promise<void>;
  readonly pendingChanges: { files: number; bytes: number };
  /** The tenant's storage quotas (the Workspace's StorageQuota): a bulk writer bounds what it writes by their standing (import-bound.ts), charges its whole change before it switches, and recounts after. */
  readonly quota?: { charge(delta: { files: number; bytes: number }): Promise<void>; settle(delta: { files: number; bytes: number }): Promise<void>; recount?(view?: StorageDriver): Promise<void>; standing?(): Promise<QuotaStanding | null> } | undefined;
  flushChanges(staged?: StagedUpkeep): Promise<void>;
}

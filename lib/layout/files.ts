/**
 * What a file of a workspace is, as every layer sees it: its info, a stat, an item to delete, a
 * change told to listeners, an entry of a walk. Declarations only (the Workspace, lib/workspace/,
 * gives and takes them; the stores below it read and write them).
 */

export interface FileInfo {
  path: string;
  size: number;
  etag: string;
  modified: Date;
  contentType?: string;
  /** The session that wrote this version through a tool (from a HEAD or GET; listings may omit it). */
  writer?: string;
}

/** A file (or, for deleteMarkers, a directory's marker) to delete, and the version it must still be (null: whatever is there). */
export interface DeleteItem {
  path: string;
  etag: string | null;
  /** The size of that version, when the caller has it (the storage quotas need no HEAD then). */
  size?: number;
}

export type Stat = ({ type: "file" } & FileInfo) | { type: "directory"; path: string };

/** What listeners stored for the batches of an all-or-nothing writer: storage keys to remove if it fails (WorkspaceListener.changedBatch, lib/workspace/workspace-types.ts). */
export interface StagedUpkeep {
  keys: string[];
}

export interface FileChange {
  path: string;
  info: FileInfo | null;
  content?: Uint8Array;
}

/** An entry of walkEntries: a file, or an explicit directory (its marker's etag). */
export type WalkEntry = ({ type: "file" } & FileInfo) | { type: "directory"; path: string; etag: string };

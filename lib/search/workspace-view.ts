/**
 * What search takes of the layers above it, declared here because search sits below them: the
 * workspace it reads (a Workspace, lib/workspace/workspace.ts, is one) and the progress reporter a
 * tool hands it (lib/contract/progress.ts statusReporter gives one).
 */
import type { ToolError } from "../shared/errors.js";
import type { GetResult, StorageDriver } from "../storage/types.js";
import type { Stat } from "../layout/files.js";

/** The workspace grep, glob and the index read. */
export interface SearchedWorkspace {
  readonly driver: StorageDriver;
  readonly tenant: string;
  readonly id: string;
  /** Bytes the call read (usage): bytes taken from the index's segments count too. */
  bytesRead: number;
  key(path: string): string;
  stat(path: string): Promise<Stat | null>;
  notFound(path: string, what?: string): Promise<ToolError>;
  get(path: string, range?: { offset: number; length?: number }): Promise<GetResult | null>;
}

/** The workspace whose changes the indexer is told: where its upkeep writes. */
export interface IndexedWorkspace {
  readonly tenant: string;
  readonly id: string;
  upkeepDriver(): Promise<StorageDriver>;
}

/** A stage's counts as the status a client sees (called only when an event goes out). */
export type DescribeProgress = (done: number, total: number | undefined) => { message: string; done?: number; total?: number };

/** Reports a long search's progress, throttled by the caller. */
export interface ProgressReporter {
  /** Starts a stage: later counts are described by `describe`. */
  stage(describe: DescribeProgress): void;
  /** The latest counts. */
  update(done: number, total?: number): void;
  /** Sends the latest counts once more. */
  finish(): void;
}

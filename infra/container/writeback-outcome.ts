/**
 * What a write-back did (writeback.ts), and the one place where it records that the storage quotas
 * refused it whole: then none of the run's changes is written back, and its markers, execute bits
 * and symlinks are not saved either (sync-out.ts).
 */
import { isToolError, type ToolError } from "../../lib/shared/errors.js";
import type { Conflict, Skipped, UnsyncedReason } from "../../lib/exec/types.js";
import type { Change } from "./changes.js";
import type { FileState } from "./tree.js";

export interface WriteBackOutcome {
  written: Map<string, FileState>;
  created: string[];
  modified: string[];
  deleted: string[];
  conflicts: Conflict[];
  skipped: Skipped[];
  uploaded_bytes: number;
  /** Changes not written back (path order): over maxFiles, or not started before the deadline. */
  unsynced: { paths: string[]; reasons: UnsyncedReason[] };
  /**
   * The storage quotas refused the write-back whole (its hold, its fill, a packed write-back's stage
   * or commit, its only batch's plan, its one change's charge): the API's message, as each change's
   * skip says it; null when they did not. Set only by `refuse` (recorder).
   */
  refused: string | null;
}

export const emptyOutcome = (): WriteBackOutcome => ({ written: new Map(), created: [], modified: [], deleted: [], conflicts: [], skipped: [], uploaded_bytes: 0, unsynced: { paths: [], reasons: [] }, refused: null });

/** The storage quotas' refusal (QUOTA_EXCEEDED), as every write-back request answers it. */
export const quotaRefusal = (e: unknown): e is ToolError => isToolError(e) && e.code === "QUOTA_EXCEEDED";

/** A change skipped with its error; `refuse`: the quotas refused the write-back whole, `cs` skipped with their message. */
export function recorder(out: WriteBackOutcome): { skip(c: Change, e: unknown): void; refuse(cs: Change[], e: unknown): void } {
  // 900: a quota's refusal (the API's QUOTA_EXCEEDED) says which quota, its usage and limit, how far the write-back got and what to do,
  // and, refused at the hold, which deletes were not counted as room (writeback-held.ts notCounted: up to ~450 characters more).
  const detail = (e: unknown) => String((e as Error)?.message ?? e).slice(0, 900);
  const skip = (c: Change, e: unknown) => void out.skipped.push({ path: c.path, reason: "error", detail: detail(e) });
  return {
    skip,
    refuse(cs, e) {
      out.refused ??= detail(e);
      for (const c of cs) skip(c, e);
    },
  };
}

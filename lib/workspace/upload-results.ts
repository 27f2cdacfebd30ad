/**
 * What a batch upload (upload-batch.ts) takes and answers: its mode, each file's result or error,
 * what it needs of the workspace, and the errors it makes of a change that landed meanwhile.
 */
import { isToolError, ToolError, ERROR_CODES, type ErrorCode } from "../shared/errors.js";
import type { StagedFile } from "../layers/commit-staged.js";
import type { LayerDeps } from "../layers/open.js";
import type { StorageDriver } from "../storage/types.js";
import type { StorageQuotaHandle } from "../limits/storage-quota.js";
import type { Workspace } from "./workspace.js";

export type UploadMode = "all" | "each";
export interface UploadError {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}
export type UploadResult = { path: string; ok: true; etag: string; size: number; created: boolean } | { path: string; ok: false; error: UploadError };

export interface UploadDeps {
  layers: LayerDeps;
  /** The workspace's merged view (what a read sees). */
  view: StorageDriver;
  /** The workspace, without a quota (the batch charges it once) and with deferred index changes. */
  ws: Workspace;
  quota?: StorageQuotaHandle;
}

export interface Staged {
  i: number;
  path: string;
  cond: { ifMatch: string } | { create: true } | null;
  file: StagedFile;
}

export const errorOf = (e: unknown): UploadError => (isToolError(e) ? { code: e.code, message: e.message, ...(Object.keys(e.details).length ? { details: e.details } : {}) } : { code: "INTERNAL", message: String(e) });

export function changedMeanwhile(path: string, error: { code: string; message: string } | null): ToolError {
  if (error) return new ToolError(isCode(error.code) ? error.code : "INTERNAL", error.message, { path });
  return new ToolError("FILE_MODIFIED", `${path} changed while the batch was written (another call wrote it); its version stays. Read it, then retry.`, { path });
}

const isCode = (c: string): c is ErrorCode => c in ERROR_CODES;

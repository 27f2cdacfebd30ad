/**
 * Whether a run's workspace still exists as the one it was minted for: the one rule, followed by the
 * sync server (a token's workspace: lib/sync/server.ts) and by the run path (a foreground run's
 * workspace deleted while it ran: lib/exec/runs.ts workspaceGone). A workspace deleted and made
 * again under the same id is another one (its record's `created_at`, the token's `i` claim).
 */
import { readMeta, type MetaRecord } from "../layers/open.js";
import type { StorageDriver } from "../storage/types.js";
import type { SyncClaims } from "./token.js";

/**
 * The record of the workspace `claims` name (tenant `t`, id `w`) if it is the instance they were
 * minted for (`i`: its record's created_at; absent, any instance), else null: deleted, or deleted
 * and made again under the same id. One read of the record; a failed read throws.
 */
export async function workspaceAsMinted(storage: StorageDriver, claims: Pick<SyncClaims, "t" | "w" | "i">): Promise<MetaRecord | null> {
  const rec = await readMeta(storage, claims.t, claims.w);
  return rec && (claims.i === undefined || claims.i === rec.meta.created_at) ? rec : null;
}

import type { StorageDriver } from "../storage/types.js";
import { UndoJournal } from "../workspace/undo-journal.js";
import { parseCallId } from "../workspace/undo-record.js";
import type { SyncClaims } from "./token.js";

/**
 * The undo journal of one sync request: the call that started the run (token claim `u`), so a
 * write-back is undone with that call's call_id. Each request commits its own record part under
 * the call's prefix (lib/run/undo/apply.ts merges them). None when the token names no call.
 */
export function syncJournal(storage: StorageDriver, claims: SyncClaims): UndoJournal | undefined {
  const u = claims.u;
  if (!u || typeof u.s !== "string" || typeof u.c !== "string" || !parseCallId(`${u.s}~${u.c}`)) return undefined;
  const j = new UndoJournal(storage, claims.t, claims.w, u.s, u.c);
  if (typeof u.n === "string" && u.n) j.tool = u.n;
  return j;
}

/** Commits a sync request's record part; a failure loses that part's undo data, never the write-back's answer. */
export async function commitSyncJournal(undo: UndoJournal | undefined): Promise<void> {
  await undo?.commit().catch(() => null);
}


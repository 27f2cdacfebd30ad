/**
 * Whether an undo fits the storage quotas before it writes anything (docs/limits-and-quotas.md:
 * undo is refused 413 QUOTA_EXCEEDED before anything is written). Its writes go one by one in a
 * fixed order (apply.ts: the files in the record's order, then markers removed, then markers made),
 * each charged as it goes, so what must fit is the highest its running change reaches on the way,
 * not only its net change: a deleted file gives its entry back once deleted, a file put back takes
 * one, a restored version takes its size less the current one's. A delete's bytes are not credited
 * (the record does not keep them; the check is then stricter, never looser). Before (2026-12-02)
 * nothing was checked ahead: an undo of `rm` of 5 files beside room for 2 restored 2, then answered
 * CONFLICT (storage changed by a failed call, the undo claimed for good).
 */
import { quotaExceeded } from "../../limits/fields.js";
import type { StorageDelta, Workspace } from "../../workspace/workspace.js";
import type { UndoChange, UndoDirChange } from "../../workspace/undo-record.js";

/** The highest the running change of an undo reaches, in files and in bytes (each from 0, in the order apply.ts writes). */
export function undoPeak(changes: readonly UndoChange[], currentSizes: ReadonlyMap<string, number>, dirs: readonly UndoDirChange[]): StorageDelta {
  const run = { files: 0, bytes: 0 };
  const peak = { files: 0, bytes: 0 };
  const step = (files: number, bytes: number) => {
    run.files += files;
    run.bytes += bytes;
    peak.files = Math.max(peak.files, run.files);
    peak.bytes = Math.max(peak.bytes, run.bytes);
  };
  for (const c of changes) {
    if (c.before === null) step(-1, 0); // a file the call made, deleted
    else if (c.after === null) step(1, c.before.size); // a file the call deleted, made again
    else step(0, c.before.size - (currentSizes.get(c.path) ?? 0)); // a version put back over the one the call left
  }
  for (const d of dirs) if (d.before === null) step(-1, 0); // markers the call made, removed first
  for (const d of dirs) if (d.before !== null) step(1, 0); // markers it removed, made again
  return peak;
}

/** Refuses (QUOTA_EXCEEDED, nothing written) an undo whose peak does not fit where the quotas stand for this caller; passes when the workspace counts nothing or the limits object cannot say. */
export async function checkUndoRoom(ws: Workspace, callId: string, peak: StorageDelta): Promise<void> {
  if (peak.files <= 0 && peak.bytes <= 0) return;
  const standing = await ws.quota?.standing?.();
  if (!standing) return;
  const f = standing.files_per_workspace;
  if (peak.files > 0 && f.usage + peak.files > f.limit) throw quotaExceeded("files_per_workspace", f.usage, f.limit, `Undo of call ${callId} needs ${peak.files} more file${peak.files === 1 ? "" : "s"} (explicit directories count as files) in this workspace`, true, { call_id: callId, needed: peak.files });
  const b = standing.storage_bytes;
  if (peak.bytes > 0 && b.usage + peak.bytes > b.limit) throw quotaExceeded("storage_bytes", b.usage, b.limit, `Undo of call ${callId} needs ${peak.bytes} more bytes`, true, { call_id: callId, needed: peak.bytes });
}

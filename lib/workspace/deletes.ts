/**
 * Deleting files through a Workspace: each only if it is still the version the caller saw,
 * with undo's before-image captured first; `gone` tells the workspace's listeners. The
 * Workspace's delete and deleteMany are these functions.
 */
import { ToolError } from "../shared/errors.js";
import { isConditionFailed } from "../storage/types.js";
import type { WorkspaceCore as Workspace } from "./workspace-types.js";
import type { DeleteItem } from "../layout/files.js";

/**
 * Deletes one file if it is still the version `etag` (null: whatever is there).
 * FILE_MODIFIED, and nothing deleted, when it changed or went since.
 */
export async function deleteFile(ws: Workspace, path: string, etag: string | null, gone: (path: string) => Promise<void>): Promise<void> {
  const { refused } = await deleteFiles(ws, [{ path, etag }], gone);
  if (refused.length === 0) return;
  const current = await ws.head(path);
  throw new ToolError("FILE_MODIFIED", `${path} ${current ? "was modified" : "was deleted"} by another call since it was looked up; nothing was deleted. ${current ? "Read it again, then retry if you still want it gone." : "It is already gone."}`, { path, current_etag: current?.etag ?? null });
}

/**
 * Deletes files, each only if it is still the version given (`etag`; null: whatever is there).
 * A file changed or deleted since (refused) is left exactly as it is; all others are deleted.
 * This is the one way files are deleted, so every multi-step change deletes only what it saw.
 */
export async function deleteFiles(ws: Workspace, items: readonly DeleteItem[], gone: (path: string) => Promise<void>): Promise<{ deleted: string[]; refused: string[] }> {
  const refusedKeys = new Set<string>();
  let files = items;
  if (ws.undo) {
    // Undo needs the version deleted: an unconditional delete becomes conditional on what is there now.
    const undo = ws.undo;
    const known: DeleteItem[] = [];
    for (let i = 0; i < items.length; i += 6) {
      known.push(...(await Promise.all(items.slice(i, i + 6).map(async (f): Promise<DeleteItem | null> => {
        const etag = f.etag ?? (await ws.head(f.path))?.etag ?? null;
        if (etag === null) return null; // already gone: nothing to delete or undo
        if (!(await undo.capture(ws.driver, ws.key(f.path), f.path, etag))) refusedKeys.add(ws.key(f.path));
        return { path: f.path, etag };
      }))).filter((f): f is DeleteItem => f !== null && !refusedKeys.has(ws.key(f.path))));
    }
    files = known;
  }
  // The storage quotas get back what the deletes free: each deleted version's size (one HEAD each, unless the caller knows it).
  const sizes = ws.quota ? await sizesOf(ws, files) : undefined;
  try {
    if (files.length) await ws.driver.delete(files.map((f) => (f.etag === null ? ws.key(f.path) : { key: ws.key(f.path), ifMatch: f.etag })));
  } catch (e) {
    if (!isConditionFailed(e)) throw e;
    for (const k of e.keys) refusedKeys.add(k);
  }
  const deleted: string[] = [];
  const refused: string[] = [];
  for (const f of items) (refusedKeys.has(ws.key(f.path)) ? refused : deleted).push(f.path);
  if (sizes && ws.quota) {
    const freed = deleted.map((p) => sizes.get(p)).filter((n): n is number => n !== undefined);
    if (freed.length) await ws.quota.settle({ files: -freed.length, bytes: -freed.reduce((a, b) => a + b, 0) });
  }
  for (const p of refused) await ws.undo?.refused(p);
  for (const p of deleted) ws.undo?.landed(p, null);
  for (const p of deleted) await gone(p);
  return { deleted, refused };
}


/** The size of each file about to be deleted (the version named, when its etag is given), six HEADs at a time; absent: none there. */
async function sizesOf(ws: Workspace, items: readonly DeleteItem[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (let i = 0; i < items.length; i += 6) {
    await Promise.all(items.slice(i, i + 6).map(async (f) => {
      if (f.size !== undefined) return void out.set(f.path, f.size);
      const h = await ws.head(f.path);
      if (h && (f.etag === null || h.etag === f.etag)) out.set(f.path, h.size);
    }));
  }
  return out;
}

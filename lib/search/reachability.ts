/**
 * Which index segments a workspace still reaches. The workspace's file listing is the index's
 * root (README "Search"): a segment entry counts only while its (path, etag) is the file's
 * current version, so a segment none of whose entries is current is reached by nothing. Such
 * orphans come from files deleted or rewritten since (vacuum drops them as it goes), and from
 * bulk writers that stopped midway: an import into packs whose process died before it switched
 * the layer pointer or removed its staged segments (lib/layers/import.ts), a packed write-back
 * never committed. GC (lib/layers/gc.ts) removes those older than its grace period.
 *
 * Removing a segment is always safe for answers: grep reads every file no segment covers directly.
 */
import { filesPrefix, isDirMarker } from "../layout/paths.js";
import { canWalk, type StorageDriver } from "../storage/types.js";
import type { SegmentFile } from "./segment.js";
import { IndexStore, type SegmentRef } from "./store.js";

/**
 * path → etag of every file of the workspace, as `driver` (its files view: upper over lower) lists
 * them. A layered workspace's driver walks its manifest and lists only its upper layer (KeyWalk):
 * what the manifest knows is never listed, nor re-listed page by page.
 */
export async function liveFiles(driver: StorageDriver, tenant: string, workspace: string): Promise<Map<string, string>> {
  const prefix = filesPrefix(tenant, workspace);
  const live = new Map<string, string>();
  if (canWalk(driver)) {
    const walk = driver.walk(prefix);
    for (let o = await walk.next(); o !== null; o = await walk.next()) if (!isDirMarker(o.key)) live.set(o.key.slice(prefix.length), o.etag);
    return live;
  }
  let cursor: string | undefined;
  do {
    const r = await driver.list({ prefix, ...(cursor ? { cursor } : {}) });
    for (const o of r.objects) if (!isDirMarker(o.key)) live.set(o.key.slice(prefix.length), o.etag);
    cursor = r.cursor;
  } while (cursor);
  return live;
}

export interface SegmentTable {
  ref: SegmentRef;
  files: SegmentFile[];
}

/** The segments created before `before` (ms) with their file tables (one ranged GET each); ones gone meanwhile are left out. */
export async function segmentsBefore(store: IndexStore, before: number): Promise<SegmentTable[]> {
  const refs = (await store.listSegments()).filter((r) => IndexStore.timeOf(r.id) < before);
  const out: SegmentTable[] = [];
  for (let i = 0; i < refs.length; i += 16) {
    const tables = await Promise.all(refs.slice(i, i + 16).map((r) => store.readFileTable(r)));
    tables.forEach((files, k) => files && out.push({ ref: refs[i + k]!, files }));
  }
  return out;
}

/** Whether any entry of a segment is a current file version. */
export const isReached = (files: readonly SegmentFile[], live: ReadonlyMap<string, string>): boolean => files.some((f) => live.get(f.path) === f.etag);

export interface OrphanSweep {
  /** Segments deleted (with dryRun: that would be). */
  deleted: number;
  bytes: number;
  /** More orphans than `max` were found: call again. */
  more: boolean;
}

/**
 * Deletes the workspace's segments created before `before` (the caller's grace period: an import
 * in flight writes younger ones) that no current file reaches, at most `max`. A segment's entries
 * never change, so the order of the two listings does not matter; a workspace with no segment that
 * old costs one LIST and no file listing.
 */
export async function sweepOrphanSegments(driver: StorageDriver, tenant: string, workspace: string, opts: { before: number; max: number; dryRun?: boolean }): Promise<OrphanSweep> {
  const store = new IndexStore(driver, tenant, workspace);
  const old = await segmentsBefore(store, opts.before);
  if (old.length === 0) return { deleted: 0, bytes: 0, more: false };
  const live = await liveFiles(driver, tenant, workspace);
  const orphans = old.filter((s) => !isReached(s.files, live)).map((s) => s.ref);
  const batch = orphans.slice(0, Math.max(0, opts.max));
  for (let i = 0; !opts.dryRun && i < batch.length; i += 1000) await store.deleteSegments(batch.slice(i, i + 1000));
  return { deleted: batch.length, bytes: batch.reduce((n, r) => n + r.size, 0), more: batch.length < orphans.length };
}

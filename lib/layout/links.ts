/**
 * The workspace's symlinks as path → target maps, over the modes table (modes.ts): read, set or
 * dropped, and the links an import brings (docs/symlinks.md). Following links is the workspace's
 * (lib/workspace/links.ts, link-resolve.ts).
 */
import { isWithin } from "./paths.js";
import { readModes, updateModes, type LinkJournal } from "./modes.js";
import type { StorageDriver } from "../storage/types.js";

/** The workspace whose links are read or written (a Workspace is one), and the call's undo journal (absent: not undoable). */
export interface LinkStore {
  readonly driver: StorageDriver;
  readonly tenant: string;
  readonly id: string;
  readonly undo?: LinkJournal | undefined;
}

/** The workspace's links: path → target. */
export async function readLinks(ws: LinkStore): Promise<Map<string, string>> {
  return new Map(Object.entries((await readModes(ws.driver, ws.tenant, ws.id)).links ?? {}));
}

/** Sets (target) or drops (null) links, merged with concurrent changes; journaled in the call's undo journal (the store's). */
export async function saveLinks(ws: LinkStore, delta: Record<string, string | null>): Promise<void> {
  if (Object.keys(delta).length) await updateModes(ws.driver, ws.tenant, ws.id, { add: [], remove: [], links: delta }, { undo: ws.undo });
}

/**
 * An import's links delta against the links there are (`now`): the archive's links are set; a link
 * an imported file or directory now stands at is dropped (it replaces the link); in replace mode,
 * every other link below the prefix goes too.
 */
export function importedLinksDelta(now: Readonly<Record<string, string>>, imported: ReadonlyMap<string, string>, landed: Iterable<string>, replaceBelow: string | null): Record<string, string | null> {
  const delta: Record<string, string | null> = {};
  for (const p of landed) if (p in now) delta[p] = null;
  if (replaceBelow !== null) for (const p of Object.keys(now)) if (!imported.has(p) && isWithin(p, replaceBelow)) delta[p] = null;
  for (const [p, t] of imported) delta[p] = t;
  return delta;
}

/**
 * The workspace's symlinks as the tools, import and export see them (docs/symlinks.md). They
 * live in the workspace's modes table (lib/exec/modes.ts), never as file objects, so no bytes a
 * tenant writes can read as a link. A link's target is data: nothing here ever follows one in
 * storage; resolution is lexical, inside the workspace (links-resolve.ts).
 */
import { readModes, updateModes } from "../exec/modes.js";
import { isWithin } from "../paths.js";
import type { Workspace } from "./workspace.js";

type LinkStore = Pick<Workspace, "driver" | "tenant" | "id">;

/** The workspace's links: path → target. */
export async function readLinks(ws: LinkStore): Promise<Map<string, string>> {
  return new Map(Object.entries((await readModes(ws.driver, ws.tenant, ws.id)).links ?? {}));
}

/** Sets (target) or drops (null) links, merged with concurrent changes. */
export async function saveLinks(ws: LinkStore, delta: Record<string, string | null>): Promise<void> {
  if (Object.keys(delta).length) await updateModes(ws.driver, ws.tenant, ws.id, { add: [], remove: [], links: delta });
}

/**
 * After an import landed: the archive's links are set; a link an imported file now stands at is
 * dropped (the file replaces it); in replace mode, every other link below the prefix goes too.
 */
export async function saveImportedLinks(ws: LinkStore, imported: Map<string, string>, landed: Iterable<string>, replaceBelow: string | null): Promise<void> {
  const now = await readLinks(ws);
  const delta: Record<string, string | null> = {};
  for (const p of landed) if (now.has(p)) delta[p] = null;
  if (replaceBelow !== null) for (const p of now.keys()) if (!imported.has(p) && isWithin(p, replaceBelow)) delta[p] = null;
  for (const [p, t] of imported) delta[p] = t;
  await saveLinks(ws, delta);
}

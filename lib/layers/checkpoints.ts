/**
 * Checkpoints, restore and fork over the layer pointer (README "Versions").
 * - checkpoint: seal the upper layer into base ⊕ upper, switch the pointer (If-Match), write the
 *   record (create-only), then delete each sealed upper object only in the version sealed
 *   (seal.ts settleSealed, shared with the automatic seal: auto-seal.ts).
 * - restore: switch the pointer to the checkpoint's manifest (If-Match the record seen), then delete
 *   every upper object listed before the switch, each only in the version listed; a writer that
 *   changed one, or created one, around the switch is reported in `conflicts`, never overwritten.
 * - fork: checkpoint the origin (or take a checkpoint of it), create the new workspace on that manifest.
 * - delete: remove the record only in the version read (If-Match); its manifest and packs stay until
 *   GC (gc.ts) finds no base, checkpoint record or undo record referencing them.
 */
import { ToolError } from "../shared/errors.js";
import { workspaceNotFound } from "../layout/workspace-meta.js";
import { isConditionFailed } from "../storage/types.js";
import { checkpointKey, checkpointsPrefix } from "../layout/paths.js";
import type { Manifest } from "./manifest.js";
import { readMeta, switchBase, type LayerDeps, type MetaRecord } from "./open.js";
import { newLayerId } from "./pack-writer.js";
import { readModes, updateModes } from "../layout/modes.js";
import { dropSeal, listUpper, removeUpper, seal, settleSealed } from "./seal.js";
import { Whiteouts } from "./whiteout.js";

export interface CheckpointRecord {
  id: string;
  name: string;
  workspace: string;
  manifest: string;
  created_at: string;
  files: number;
  bytes: number;
  /** The executable files at the checkpoint (x/modes.json, lib/layout/modes.ts): restored and forked with it. */
  exec?: string[];
  /** The symlinks at the checkpoint (path → target, docs/symlinks.md): restored and forked with it. */
  links?: Record<string, string>;
}


export async function requireMeta(deps: LayerDeps, tenant: string, ws: string): Promise<MetaRecord> {
  const rec = await readMeta(deps.storage, tenant, ws);
  if (!rec) throw workspaceNotFound(ws);
  return rec;
}

/** Whether two reads of a workspace's record are of one life of its id (one made again has its own time and random whiteout mark; a record made before marks gets one at its first switch). */
const sameLife = (a: MetaRecord, b: MetaRecord) => a.meta.created_at === b.meta.created_at && (a.meta.whiteout === undefined || a.meta.whiteout === b.meta.whiteout);

const countFiles = (m: Manifest) => {
  let files = 0;
  let bytes = 0;
  for (const e of m.entries) if (!e.path.endsWith("/")) (files++, (bytes += e.size));
  return { files, bytes };
};

/**
 * Checkpoints workspace `ws`. `room`: the checkpoints quota (lib/api/routes/quotas.ts
 * reserveCheckpointSlot), asked with the new checkpoint's id once the workspace is known to exist and
 * before anything is sealed; what it answers (its slot's release) is called once the checkpoint is
 * made or failed, after its record was written.
 */
export async function createCheckpoint(deps: LayerDeps, tenant: string, ws: string, name: string, room?: (id: string) => Promise<() => Promise<void>>): Promise<CheckpointRecord & { sealed: number; kept: number }> {
  const rec = await requireMeta(deps, tenant, ws);
  const id = newLayerId();
  const release = await room?.(id);
  try {
    return await checkpointOn(deps, tenant, ws, name, id, rec);
  } finally {
    await release?.();
  }
}

async function checkpointOn(deps: LayerDeps, tenant: string, ws: string, name: string, id: string, rec: MetaRecord): Promise<CheckpointRecord & { sealed: number; kept: number }> {
  const s = await seal(deps, tenant, ws, rec.meta);
  const { manifest, sealed } = s;
  let now = rec;
  if (manifest.id !== rec.meta.base) {
    try {
      now = await switchBase(deps.storage, tenant, ws, rec, manifest.id);
    } catch (e) {
      // Refused: nothing points at what this seal wrote; it goes now rather than at the next GC.
      if (e instanceof ToolError && e.code === "CONFLICT") await dropSeal(deps.storage, tenant, s);
      throw e;
    }
  }
  const { exec, links } = await readModes(deps.storage, tenant, ws);
  const cp: CheckpointRecord = { id, name, workspace: ws, manifest: manifest.id, created_at: new Date().toISOString(), ...countFiles(manifest), ...(exec.length ? { exec } : {}), ...(links && Object.keys(links).length ? { links } : {}) };
  const key = checkpointKey(tenant, ws, cp.id);
  const stored = await deps.storage.put(key, JSON.stringify(cp), { ifNoneMatch: "*", contentType: "application/json" });
  // A delete of the workspace may have listed its objects before this record landed (and a create may
  // have made the id again): a record of a workspace that is gone goes too, or a new workspace of that
  // id would list, restore and fork the old one's files. Once the record is seen here, a later delete lists it.
  const still = await readMeta(deps.storage, tenant, ws);
  if (!still || !sameLife(rec, still)) {
    await deps.storage.delete([{ key, ifMatch: stored.etag }]).catch(() => {}); // missed: GC's leftovers sweep, or the next delete
    throw workspaceNotFound(ws);
  }
  const refused = await settleSealed(deps.storage, tenant, ws, s, Whiteouts.of(deps.storage, now.meta));
  return { ...cp, sealed: sealed.length, kept: refused.length };
}

const cpNotFound = (ws: string, id: string) => new ToolError("NOT_FOUND", `Checkpoint not found: ${id}. List checkpoints with GET /v1/workspaces/${ws}/checkpoints.`, { checkpoint: id });

async function readCheckpoint(deps: LayerDeps, tenant: string, ws: string, id: string): Promise<{ record: CheckpointRecord; etag: string }> {
  const r = await deps.storage.get(checkpointKey(tenant, ws, id));
  if (!r) throw cpNotFound(ws, id);
  return { record: JSON.parse(await new Response(r.body).text()) as CheckpointRecord, etag: r.etag };
}

export async function getCheckpoint(deps: LayerDeps, tenant: string, ws: string, id: string): Promise<CheckpointRecord> {
  return (await readCheckpoint(deps, tenant, ws, id)).record;
}

/**
 * Deletes the checkpoint record, only in the version read: of concurrent deletes one wins and the
 * others answer NOT_FOUND, as for a checkpoint already gone. Nothing else is touched: forks made
 * from it have the manifest as their own base, and GC reclaims what nothing references any more.
 */
export async function deleteCheckpoint(deps: LayerDeps, tenant: string, ws: string, id: string): Promise<CheckpointRecord> {
  const { record, etag } = await readCheckpoint(deps, tenant, ws, id);
  try {
    await deps.storage.delete([{ key: checkpointKey(tenant, ws, id), ifMatch: etag }]);
  } catch (e) {
    if (isConditionFailed(e)) throw cpNotFound(ws, id);
    throw e;
  }
  return record;
}

export async function listCheckpoints(deps: LayerDeps, tenant: string, ws: string): Promise<CheckpointRecord[]> {
  const prefix = checkpointsPrefix(tenant, ws);
  const keys: string[] = [];
  let cursor: string | undefined;
  do {
    const r = await deps.storage.list({ prefix, ...(cursor ? { cursor } : {}) });
    keys.push(...r.objects.map((o) => o.key));
    cursor = r.cursor;
  } while (cursor && keys.length < 10_000);
  const out: CheckpointRecord[] = [];
  for (let i = 0; i < keys.length; i += 16) {
    const got = await Promise.all(keys.slice(i, i + 16).map(async (k) => {
      const r = await deps.storage.get(k);
      return r ? (JSON.parse(await new Response(r.body).text()) as CheckpointRecord) : null;
    }));
    for (const g of got) if (g) out.push(g);
  }
  return out.sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0));
}

export interface RestoreReport {
  checkpoint: CheckpointRecord;
  removed: number;
  /** Files a concurrent writer changed or created around the restore: their version stays over the restored base. */
  conflicts: string[];
}

export async function restoreCheckpoint(deps: LayerDeps, tenant: string, ws: string, id: string): Promise<RestoreReport> {
  const cp = await getCheckpoint(deps, tenant, ws, id);
  const rec = await requireMeta(deps, tenant, ws);
  const before = await listUpper(deps.storage, tenant, ws);
  await switchBase(deps.storage, tenant, ws, rec, cp.manifest);
  const refused = new Set(await removeUpper(deps.storage, before.map((o) => ({ key: o.key, etag: o.etag }))));
  // Objects that appeared between the listing and the switch were written against the old base
  // and acknowledged: they stay, and are reported.
  const listed = new Set(before.map((o) => o.key));
  const after = await listUpper(deps.storage, tenant, ws);
  for (const o of after) if (!listed.has(o.key)) refused.add(o.key);
  // Executable bits and symlinks as at the checkpoint (merged with concurrent updates, like any modes update).
  const now = await readModes(deps.storage, tenant, ws);
  const want = new Set(cp.exec ?? []);
  const remove = now.exec.filter((p) => !want.has(p));
  const links: Record<string, string | null> = { ...cp.links };
  for (const p of Object.keys(now.links ?? {})) if (!(p in links)) links[p] = null;
  const linksChanged = Object.keys(links).length > 0;
  if (remove.length || want.size || linksChanged) await updateModes(deps.storage, tenant, ws, { add: [...want], remove, ...(linksChanged ? { links } : {}) });
  const cut = (k: string) => k.slice(k.indexOf("/f/") + 3);
  return { checkpoint: cp, removed: before.length - [...refused].filter((k) => listed.has(k)).length, conflicts: [...refused].map(cut).sort() };
}

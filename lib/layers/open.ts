/**
 * The one place a workspace's files are opened: the workspace record (meta.json, which every
 * request reads anyway) says whether it has a lower layer; if it does, its storage is the merged
 * view (layered-driver.ts) over the manifest (cached per isolate). A workspace without `base`
 * gets the plain storage (plus the re-read after a create: plain-driver.ts). Also the one place the layer pointer is switched (If-Match).
 */
import { ToolError } from "../shared/errors.js";
import { workspaceNotFound } from "../layout/workspace-meta.js";
import { filesPrefix, ID_PATTERN, workspaceMetaKey } from "../layout/paths.js";
import { isConditionFailed, type StorageDriver } from "../storage/types.js";
import type { WorkspaceMeta } from "../layout/workspace-meta.js";
import { layeredDriver } from "./layered-driver.js";
import type { Manifest, ManifestCache } from "./manifest.js";
import { plainDriver } from "./plain-driver.js";
import { markFor, Whiteouts } from "./whiteout.js";

export interface LayerDeps {
  storage: StorageDriver;
  manifests: ManifestCache;
  /**
   * The isolate's last seen versions of files (lib/workspace/version-cache.ts), where the caller has
   * them: a seal takes an upper object's bytes from there when the listing names the same etag (an
   * etag names one content), instead of a GET.
   */
  versions?: { peek(key: string): { info: { etag: string; size: number }; bytes: Uint8Array } | undefined };
}

export interface MetaRecord {
  meta: WorkspaceMeta;
  etag: string;
}

export interface OpenedWorkspace extends MetaRecord {
  /** Storage as this workspace's files must be read and written: the merged view when layered. */
  driver: StorageDriver;
}


export async function readMeta(storage: StorageDriver, tenant: string, ws: string): Promise<MetaRecord | null> {
  if (!ID_PATTERN.test(ws)) return null;
  const r = await storage.get(workspaceMetaKey(tenant, ws));
  if (!r) return null;
  return { meta: JSON.parse(await new Response(r.body).text()) as WorkspaceMeta, etag: r.etag };
}

/** The workspace (NOT_FOUND when missing or another tenant's) and the driver its files are read through. */
export async function openWorkspace(deps: LayerDeps, tenant: string, ws: string): Promise<OpenedWorkspace> {
  const rec = await readMeta(deps.storage, tenant, ws);
  if (!rec) throw workspaceNotFound(ws);
  return { ...rec, driver: await filesDriver(deps, tenant, ws, rec.meta) };
}

/** The lower layer a workspace record points at: the manifest's id (immutable) and the pointer's seq. */
export interface LowerLayer {
  base: string;
  seq: number;
  manifest: Manifest;
}

/** The workspace's files: the driver they are read through and, when layered, the lower layer under it. */
export async function openFiles(deps: LayerDeps, tenant: string, ws: string, meta: WorkspaceMeta): Promise<{ driver: StorageDriver; layer: LowerLayer | null }> {
  if (!meta.base) {
    // Plain; a packed write-back or a seal may give it a lower layer meanwhile (plain-driver.ts re-checks creates and deletes).
    const driver = plainDriver(deps.storage, {
      filesPrefix: filesPrefix(tenant, ws),
      currentLayer: async () => {
        const now = await readMeta(deps.storage, tenant, ws);
        if (!now?.meta.base) return null;
        const { driver, layer } = await openLayered(deps, tenant, ws, { ...now.meta, base: now.meta.base });
        return { manifest: layer.manifest, driver };
      },
    });
    return { driver, layer: null };
  }
  return openLayered(deps, tenant, ws, { ...meta, base: meta.base });
}

/** The lower layer a workspace record points at, its manifest loaded (through the isolate's cache); null when plain. */
export async function lowerLayerOf(deps: LayerDeps, tenant: string, meta: WorkspaceMeta): Promise<LowerLayer | null> {
  if (!meta.base) return null;
  return { base: meta.base, seq: meta.seq ?? 0, manifest: await deps.manifests.load(deps.storage, tenant, meta.base) };
}

async function openLayered(deps: LayerDeps, tenant: string, ws: string, meta: WorkspaceMeta & { base: string }) {
  const layer = (await lowerLayerOf(deps, tenant, meta))!;
  const { manifest, seq } = layer;
  const whiteouts = Whiteouts.of(deps.storage, meta);
  let marked: Promise<Whiteouts> | null = whiteouts.body === null ? null : Promise.resolve(whiteouts);
  const driver = layeredDriver(deps.storage, {
    tenant,
    filesPrefix: filesPrefix(tenant, ws),
    manifest,
    whiteouts,
    markedWhiteouts: () => {
      marked ??= ensureWhiteoutMark(deps.storage, tenant, ws).catch((e: unknown) => {
        marked = null;
        throw e;
      });
      return marked;
    },
    stillCurrent: async () => {
      const now = await readMeta(deps.storage, tenant, ws);
      return !!now && (now.meta.seq ?? 0) === seq && now.meta.base === meta.base;
    },
  });
  return { driver, layer };
}

export async function filesDriver(deps: LayerDeps, tenant: string, ws: string, meta: WorkspaceMeta): Promise<StorageDriver> {
  return (await openFiles(deps, tenant, ws, meta)).driver;
}

/**
 * Points the workspace at another lower layer, only if its record is still the one seen
 * (If-Match): a concurrent import, checkpoint or restore is detected (CONFLICT), never overwritten.
 * A record made before whiteout marks gets its mark here (whiteout.ts).
 */
export async function switchBase(storage: StorageDriver, tenant: string, ws: string, seen: MetaRecord, base: string | null): Promise<MetaRecord> {
  const meta: WorkspaceMeta = { ...seen.meta, base, seq: (seen.meta.seq ?? 0) + 1, whiteout: markFor(seen.meta) };
  try {
    const o = await storage.put(workspaceMetaKey(tenant, ws), JSON.stringify(meta), { ifMatch: seen.etag, contentType: "application/json" });
    return { meta, etag: o.etag };
  } catch (e) {
    if (isConditionFailed(e)) throw new ToolError("CONFLICT", `Workspace ${ws} was changed by another import, checkpoint or restore meanwhile; nothing was switched. Retry.`, { workspace: ws });
    throw e;
  }
}

/** Attempts at giving a record its mark while other writers of meta.json move it. */
const MARK_ATTEMPTS = 5;

/**
 * The workspace's whiteouts, able to write one: a record made before whiteout marks (whiteout.ts)
 * gets its mark first, If-Match the record read (seq and base unchanged, so no layered view in
 * flight goes stale); of concurrent callers one mark wins and every caller uses it.
 */
export async function ensureWhiteoutMark(storage: StorageDriver, tenant: string, ws: string): Promise<Whiteouts> {
  for (let attempt = 0; attempt < MARK_ATTEMPTS; attempt++) {
    const rec = await readMeta(storage, tenant, ws);
    if (!rec) throw workspaceNotFound(ws);
    const now = Whiteouts.of(storage, rec.meta);
    if (now.body !== null) return now;
    const meta: WorkspaceMeta = { ...rec.meta, whiteout: markFor(rec.meta) };
    try {
      await storage.put(workspaceMetaKey(tenant, ws), JSON.stringify(meta), { ifMatch: rec.etag, contentType: "application/json" });
      return Whiteouts.of(storage, meta);
    } catch (e) {
      if (!isConditionFailed(e)) throw e;
    }
  }
  throw new ToolError("CONFLICT", `Workspace ${ws}'s record kept changing meanwhile (other checkpoints, restores or imports); retry the call.`, { workspace: ws });
}

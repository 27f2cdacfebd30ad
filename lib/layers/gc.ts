/**
 * Garbage collection of a tenant's packs and manifests (README "Versions", "GC").
 *
 * Mark: roots = every workspace's meta.json `base`, every checkpoint record's `manifest`, every
 * manifest younger than the grace period (an import or checkpoint in flight has written it and
 * not yet switched a pointer to it), and the packs undo records name (`before.lower.pack`: undo
 * reads the replaced version's bytes there). The packs of every root manifest are live.
 * Sweep: manifests and packs of t/<tenant>/ that are not live and whose LastModified is older than
 * the grace period are deleted, each conditional on the etag listed (If-Match), at most
 * `maxDeletions` per call (`more: true`: call again). Only keys below t/<tenant>/ are read or deleted.
 * A root manifest that cannot be read stops the pack sweep (its packs are unknown): nothing is
 * guessed dead.
 * A caller may prune undo retention in the mark (`pruneUndo`, the scheduled tick's: lib/runtime/housekeeping.ts):
 * it is given each workspace's listing of its undo prefix before the records are read, so one listing
 * serves both, and a pack only a pruned record named is swept in the same call.
 * Then each workspace's search-index segments: one none of whose entries is a current file (the
 * workspace's listing is the index's root: lib/search/reachability.ts) and older than the grace
 * period is deleted, within the same deletion budget; a failed import's staged segments that its
 * process could not remove end here. A workspace that cannot be opened keeps all of its segments.
 * A prefix without a record is a deleted workspace's (the delete removes the record first, a create
 * writes it first: lib/workspace/registry.ts): what is under it landed after the delete listed it (an
 * index batch or an audit entry written past a call's answer), nothing reads it, and every object of
 * it older than the grace period goes (`leftovers_deleted`), so the prefix stops counting as a workspace.
 */
import { ToolError } from "../shared/errors.js";
import { checkpointsPrefix, LAYER_ID_PATTERN, manifestKey, packKey, tenantWorkspacesPrefix, undoPrefix, workspaceMetaKey, workspacePrefix } from "../layout/paths.js";
import { isConditionFailed, type ObjectInfo, type StorageDriver } from "../storage/types.js";
import { listAll } from "../storage/list-all.js";
import { sweepOrphanSegments } from "../search/reachability.js";
import { Manifest, ManifestCache } from "./manifest.js";
import { filesDriver, readMeta } from "./open.js";

export const GC_DEFAULT_GRACE_SECONDS = 3600;
export const GC_MIN_GRACE_SECONDS = 60;
export const GC_DEFAULT_MAX_DELETIONS = 1000;

export interface GcOptions {
  graceSeconds?: number;
  dryRun?: boolean;
  maxDeletions?: number;
  /** Milliseconds since the epoch (tests). */
  now?: number;
  /** Undo retention, run on each workspace's undo listing before its records are read (the scheduled tick's). */
  pruneUndo?: UndoPrune;
}

/**
 * Given a workspace's listing of its undo prefix before GC reads the records there: deletes what is
 * past retention and answers the objects left (`now`: GC's clock). The records it answers are GC's roots.
 */
export type UndoPrune = (tenant: string, ws: string, listed: ObjectInfo[], now: number) => Promise<ObjectInfo[]>;

export interface GcReport {
  manifests_deleted: number;
  packs_deleted: number;
  /** Search-index segments no current file reaches (lib/search/reachability.ts). */
  segments_deleted: number;
  /** Objects under a deleted workspace's prefix (no record), written after its delete. */
  leftovers_deleted: number;
  bytes_freed: number;
  /** Unreferenced manifests and packs left because they are younger than the grace period. */
  kept_young: number;
  /** What the mark started from. */
  roots: { workspaces: number; manifests: number; undo_packs: number };
  live: { manifests: number; packs: number };
  /** Root manifests that could not be read: the pack sweep was skipped. */
  missing_manifests: string[];
  /** More garbage is left than one call deletes: call again. */
  more: boolean;
  dry_run: boolean;
}

const PARALLEL = 16;

async function readJson<T>(storage: StorageDriver, key: string): Promise<T | null> {
  const r = await storage.get(key);
  if (!r) return null;
  try {
    return JSON.parse(await new Response(r.body).text()) as T;
  } catch {
    throw new ToolError("INTERNAL", `GC stopped: ${key} is not valid JSON, so what it references is unknown. Nothing was deleted; repair or remove that record, then run GC again.`, { key });
  }
}

async function inBatches<T>(items: readonly T[], fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += PARALLEL) await Promise.all(items.slice(i, i + PARALLEL).map(fn));
}

const idOf = (key: string): string => key.slice(key.lastIndexOf("/") + 1);

/** What GC reads of an undo record (lib/workspace/undo-journal.ts UndoRecord): the packs its before-images point into. */
interface UndoPackRefs {
  changes?: { before: null | { lower: { pack: string | null } } | { inline: string } | { blob: string } }[];
}

/** Root manifest ids and pack ids named by undo records, over every workspace of the tenant. */
async function findRoots(storage: StorageDriver, tenant: string, now: number, pruneUndo: UndoPrune | undefined, seen: ReadonlySet<string> = new Set()) {
  const wsPrefix = tenantWorkspacesPrefix(tenant);
  const workspaces = (await listAll(storage, wsPrefix, "/")).prefixes.map((p) => p.slice(wsPrefix.length, -1)).filter((ws) => !seen.has(ws));
  const manifests = new Set<string>();
  const packs = new Set<string>();
  await inBatches(workspaces, async (ws) => {
    const meta = await readJson<{ base?: string | null }>(storage, workspaceMetaKey(tenant, ws));
    if (meta?.base) manifests.add(meta.base);
    const cps = (await listAll(storage, checkpointsPrefix(tenant, ws))).objects;
    await inBatches(cps, async (o) => {
      const cp = await readJson<{ manifest?: string }>(storage, o.key);
      if (cp?.manifest) manifests.add(cp.manifest);
    });
    const listed = (await listAll(storage, undoPrefix(tenant, ws))).objects;
    const records = (pruneUndo ? await pruneUndo(tenant, ws, listed, now) : listed).filter((o) => /\/r-[^/]+\.json$/.test(o.key));
    await inBatches(records, async (o) => {
      const rec = await readJson<UndoPackRefs>(storage, o.key);
      for (const c of rec?.changes ?? []) if (c.before && "lower" in c.before && c.before.lower.pack) packs.add(c.before.lower.pack);
    });
  });
  return { workspaces, manifests, packs };
}

export async function collectGarbage(storage: StorageDriver, tenant: string, opts: GcOptions = {}): Promise<GcReport> {
  const graceSeconds = opts.graceSeconds ?? GC_DEFAULT_GRACE_SECONDS;
  const maxDeletions = opts.maxDeletions ?? GC_DEFAULT_MAX_DELETIONS;
  const dryRun = opts.dryRun ?? false;
  const now = opts.now ?? Date.now();
  const cutoff = now - graceSeconds * 1000;
  const young = (o: ObjectInfo) => o.modified.getTime() > cutoff;

  // List the layer objects first: anything written after this listing is not seen, so not deleted.
  const manifestPrefix = manifestKey(tenant, "00000000").slice(0, -8);
  const packPrefix = packKey(tenant, "00000000").slice(0, -8);
  const [manifestObjs, packObjs] = [(await listAll(storage, manifestPrefix)).objects, (await listAll(storage, packPrefix)).objects];
  const roots = await findRoots(storage, tenant, now, opts.pruneUndo);
  // A workspace created during the mark (a fork of a checkpoint whose origin is deleted meanwhile)
  // holds a base the first pass may not have seen: list the workspaces again and add the new ones.
  const late = await findRoots(storage, tenant, now, opts.pruneUndo, new Set(roots.workspaces));
  for (const m of late.manifests) roots.manifests.add(m);
  for (const p of late.packs) roots.packs.add(p);
  // Young manifests are written by an import or checkpoint in flight: kept, and so are their packs.
  const youngManifests = manifestObjs.filter((o) => young(o) && !roots.manifests.has(idOf(o.key))).map((o) => idOf(o.key));

  const livePacks = new Set(roots.packs);
  const youngPacks = new Set<string>();
  const missing: string[] = [];
  const mark = (into: Set<string>) => async (id: string) => {
    if (!LAYER_ID_PATTERN.test(id)) return void missing.push(id);
    const r = await storage.get(manifestKey(tenant, id));
    if (!r) return void missing.push(id);
    for (const p of Manifest.decode(id, await new Response(r.body).text()).packs) into.add(p);
  };
  await inBatches([...roots.manifests], mark(livePacks));
  await inBatches(youngManifests, mark(youngPacks));

  const report: GcReport = {
    manifests_deleted: 0, packs_deleted: 0, segments_deleted: 0, leftovers_deleted: 0, bytes_freed: 0, kept_young: 0,
    roots: { workspaces: roots.workspaces.length + late.workspaces.length, manifests: roots.manifests.size, undo_packs: roots.packs.size },
    live: { manifests: roots.manifests.size, packs: livePacks.size },
    missing_manifests: missing.sort(), more: false, dry_run: dryRun,
  };
  const pick = (objs: ObjectInfo[], live: Set<string>, inFlight: Set<string>): ObjectInfo[] => {
    const out: ObjectInfo[] = [];
    for (const o of objs) {
      const id = idOf(o.key);
      if (live.has(id)) continue;
      if (young(o) || inFlight.has(id)) report.kept_young++;
      else out.push(o);
    }
    return out;
  };
  const deadManifests = pick(manifestObjs, roots.manifests, new Set());
  const deadPacks = missing.length ? [] : pick(packObjs, livePacks, youngPacks);
  let budget = maxDeletions;
  const sweep = async (dead: ObjectInfo[]): Promise<number> => {
    const batch = dead.slice(0, budget);
    if (batch.length < dead.length) report.more = true;
    budget -= batch.length;
    if (dryRun || batch.length === 0) {
      report.bytes_freed += batch.reduce((n, o) => n + o.size, 0);
      return batch.length;
    }
    let refused = new Set<string>();
    for (let i = 0; i < batch.length; i += 1000) {
      try {
        await storage.delete(batch.slice(i, i + 1000).map((o) => ({ key: o.key, ifMatch: o.etag })));
      } catch (e) {
        if (!isConditionFailed(e)) throw e;
        refused = new Set([...refused, ...e.keys]);
      }
    }
    const done = batch.filter((o) => !refused.has(o.key));
    report.bytes_freed += done.reduce((n, o) => n + o.size, 0);
    return done.length;
  };
  // Manifests first: while the budget lasts, a dead manifest goes before the dead packs it used.
  report.manifests_deleted = await sweep(deadManifests);
  report.packs_deleted = await sweep(deadPacks);
  const layerDeps = { storage, manifests: new ManifestCache() };
  for (const ws of [...roots.workspaces, ...late.workspaces]) {
    if (budget <= 0) {
      report.more = true;
      break;
    }
    const rec = await readMeta(storage, tenant, ws);
    if (rec === null) {
      // No record: the workspace was deleted, and what is under its prefix landed after the delete listed it.
      const left = (await listAll(storage, workspacePrefix(tenant, ws))).objects.filter((o) => !young(o));
      report.leftovers_deleted += await sweep(left);
      continue;
    }
    const driver = await filesDriver(layerDeps, tenant, ws, rec.meta).catch((e: unknown) => {
      // Its files cannot be listed (a missing manifest): its segments are left.
      console.warn(`gc: workspace ${ws} of ${tenant} not opened; its index segments are kept`, e instanceof Error ? e.message : String(e));
      return null;
    });
    if (!driver) continue;
    const swept = await sweepOrphanSegments(driver, tenant, ws, { before: cutoff, max: budget, dryRun });
    report.segments_deleted += swept.deleted;
    report.bytes_freed += swept.bytes;
    budget -= swept.deleted;
    if (swept.more) report.more = true;
  }
  return report;
}

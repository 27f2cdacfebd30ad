/**
 * Quotas checked by routes before they write (docs/limits-and-quotas.md):
 * - `workspaces` at create, fork and create-with-archive: a slot is taken in the tenant's limits
 *   object FIRST, then the workspaces are counted in storage (one list per 1,000, stopped at the
 *   limit); the create passes when that count + the slots other creates hold stays under the limit.
 *   A create that landed is in the count, one in flight holds a slot: two creates racing for the last
 *   slot never both pass. The slot is released once the create answered (or its lease ends), saying
 *   how it ended: the object keeps a lone create's count and adds the creates told since, and for
 *   WORKSPACE_COUNT_MS a create takes that count with its slot instead of listing (lib/limits/usage.ts).
 * - `storage_bytes` / `files_per_workspace` of the route-level bulk changes: a fork (the new workspace
 *   starts with its origin's files) and a restore (the tree becomes the checkpoint's), charged before
 *   they write, and counted exactly after.
 * - `checkpoints_per_workspace` when a checkpoint is made (POST checkpoints, a fork without a given
 *   checkpoint; asked by createCheckpoint): a slot named by the checkpoint's id is taken in the tenant's
 *   limits object FIRST, then the workspace's checkpoint records are listed, before anything is sealed.
 */
import type { AppDeps } from "../deps.js";
import type { AuthInfo } from "../../contract/caller.js";
import { quotaExceeded } from "../../limits/fields.js";
import { checkpointKey, checkpointsPrefix, tenantWorkspacesPrefix } from "../../layout/paths.js";
import type { StorageDriver } from "../../storage/types.js";
import type { StorageUsage } from "../../limits/usage.js";
import { getCheckpoint } from "../../layers/checkpoints.js";
import { openWorkspace as openLayers } from "../../layers/open.js";
import { layerDeps } from "../../run/run-tool.js";
import { callerOf, quotaOf } from "../../workspace/quota.js";
import type { StorageQuotaHandle } from "../../limits/storage-quota.js";
import { ToolError } from "../../shared/errors.js";

/** How long a create's (or a checkpoint's) slot is held at most (one that dies mid-way frees it then). */
const SLOT_LEASE_MS = 120_000;

/** The tenant's workspaces, counted up to `atMost` (a listing of workspace prefixes, 1,000 a page). */
export async function countWorkspaces(storage: StorageDriver, tenant: string, atMost: number): Promise<number> {
  let n = 0;
  let cursor: string | undefined;
  do {
    const r = await storage.list({ prefix: tenantWorkspacesPrefix(tenant), delimiter: "/", limit: 1000, ...(cursor ? { cursor } : {}) });
    n += r.prefixes.length;
    cursor = r.cursor;
  } while (cursor && n < atMost);
  return n;
}

/**
 * Room for checkpoint `id` of `ws` (QUOTA_EXCEEDED, before anything is sealed or written, when the
 * workspace holds, or is making, `checkpoints_per_workspace` of them). Checkpoints keep every version
 * they name, which `storage_bytes` (the current trees) does not count: this bounds them. A slot named
 * by `id` is taken in the tenant's limits object FIRST, then the workspace's checkpoint records are
 * listed (one list per 1,000, up to the limit): the checkpoint passes when the records and the other
 * checkpoints being made (their ids: one that landed meanwhile is counted once) stay under the limit.
 * Of two checkpoints racing for the last place, the later to take its slot sees the earlier's, or its
 * record: they never both pass. Returns the release (call it once the checkpoint answered, whatever
 * its outcome; missed, the slot's lease ends on its own).
 */
export async function reserveCheckpointSlot(deps: AppDeps, auth: AuthInfo, ws: string, id: string): Promise<() => Promise<void>> {
  const limits = deps.limits;
  if (!limits) return async () => {};
  let d;
  try {
    d = await limits.reserveCheckpoint(auth.tenant, callerOf(auth), ws, id, SLOT_LEASE_MS);
  } catch (e) {
    console.error("limits: the tenant's limits object did not answer; the checkpoint goes on uncounted", e instanceof Error ? e.message : String(e));
    return async () => {};
  }
  const release = () => limits.releaseCheckpoint(auth.tenant, id).catch(() => {});
  // Counted by record key (the one key function, checkpointKey): a checkpoint being made whose record landed meanwhile counts once.
  const counted = new Set(d.pending.map((p) => checkpointKey(auth.tenant, ws, p)));
  const prefix = checkpointsPrefix(auth.tenant, ws);
  try {
    let cursor: string | undefined;
    do {
      const r = await deps.storage.list({ prefix, limit: 1000, ...(cursor ? { cursor } : {}) });
      for (const o of r.objects) counted.add(o.key);
      cursor = r.cursor;
    } while (cursor && counted.size < d.limit);
  } catch (e) {
    await release();
    throw e;
  }
  if (counted.size >= d.limit) {
    await release();
    const making = d.pending.length ? ` (${d.pending.length} other checkpoint${d.pending.length === 1 ? " is" : "s are"} being made)` : "";
    throw quotaExceeded("checkpoints_per_workspace", counted.size, d.limit, `No checkpoint of ${ws} was made${making} (list them with GET /v1/workspaces/${ws}/checkpoints and delete old ones with DELETE /v1/workspaces/${ws}/checkpoints/{id}; a fork can start from an existing one: from_workspace with checkpoint)`, false, {}, undefined, auth.limits);
  }
  return release;
}

/**
 * A slot of the `workspaces` quota for one create: QUOTA_EXCEEDED when the tenant (or the key)
 * already has, or is creating, as many workspaces as its limit allows. Returns the release (call it
 * once the create answered, whatever its outcome).
 */
export async function reserveWorkspaceSlot(deps: AppDeps, auth: AuthInfo): Promise<(created?: boolean) => Promise<void>> {
  const limits = deps.limits;
  if (!limits) return async () => {};
  let d;
  try {
    d = await limits.reserveWorkspace(auth.tenant, callerOf(auth), SLOT_LEASE_MS);
  } catch (e) {
    console.error("limits: the tenant's limits object did not answer; the create goes on uncounted", e instanceof Error ? e.message : String(e));
    return async () => {};
  }
  // The count the object holds (an earlier lone create's listing and the creates since), else a listing.
  const listed = d.known === undefined ? await countWorkspaces(deps.storage, auth.tenant, d.limit).catch(async (e: unknown) => {
    await limits.releaseWorkspace(auth.tenant, d.slot).catch(() => {});
    throw e;
  }) : undefined;
  const counted = d.known ?? listed!;
  // `created`: whether this create made its workspace (absent: unknown, e.g. a fork or an archive, and the object counts again).
  // The release stays before the answer (#31 §4 weighed it): until it lands the slot still counts this create as pending,
  // so a next create that must list (no trusted count yet: this one listed) would count the new workspace twice, in the
  // listing and in the pending slot, and be refused at the limit's edge; nothing orders its reserve after this release.
  // It is also what gives the object the count that spares the next creates their listing.
  const release = (created?: boolean) => limits.releaseWorkspace(auth.tenant, d.slot, created === undefined ? undefined : { created, ...(listed !== undefined ? { listed } : {}) }).catch(() => {}); // missed: the lease ends on its own
  if (counted + d.pending >= d.limit) {
    await release(false);
    throw quotaExceeded("workspaces", counted + d.pending, d.limit, `No workspace was created${d.pending ? ` (${d.pending} other create${d.pending === 1 ? " is" : "s are"} under way)` : ""}`, false, {}, undefined, auth.limits);
  }
  return release;
}

/** The files and bytes a workspace (or one of its checkpoints) holds, as its quotas see them. */
async function usageOf(deps: AppDeps, auth: AuthInfo, ws: string, checkpoint?: string): Promise<StorageUsage | null> {
  if (checkpoint !== undefined) {
    const ld = layerDeps(deps);
    const cp = await getCheckpoint(ld, auth.tenant, ws, checkpoint);
    const m = await ld.manifests.load(deps.storage, auth.tenant, cp.manifest);
    const out = { files: 0, bytes: 0 };
    for (const e of m.entries) (out.files++, (out.bytes += e.size)); // files and explicit directories' markers (0 bytes), as countStored counts them
    return out;
  }
  const opened = await openLayers(layerDeps(deps), auth.tenant, ws);
  return (await quotaFor(deps, auth, ws, opened.driver)!.usage());
}

const quotaFor = (deps: AppDeps, auth: AuthInfo, ws: string, driver: StorageDriver): StorageQuotaHandle | undefined => quotaOf({ ...(deps.limits ? { limits: deps.limits } : {}) }, auth.tenant, ws, callerOf(auth), driver);

/**
 * A fork's files, charged to the new workspace `id` before it is made (QUOTA_EXCEEDED: nothing is
 * written). Returns what to call if the fork then fails (the new workspace's count is dropped).
 */
export async function chargeFork(deps: AppDeps, auth: AuthInfo, from: string, id: string, checkpoint?: string): Promise<() => Promise<void>> {
  if (!deps.limits) return async () => {};
  const limits = deps.limits;
  const usage = await usageOf(deps, auth, from, checkpoint);
  if (!usage) return async () => {};
  const d = await limits.chargeStorage(auth.tenant, callerOf(auth), id, usage, { init: { files: 0, bytes: 0 } }).catch(() => null);
  if (d && !d.ok && !("unknown" in d)) throw quotaExceeded(d.quota, d.usage, d.limit, `The fork of ${from} holds ${usage.files} files and ${usage.bytes} bytes; no workspace was created`, false, {}, undefined, auth.limits);
  return () => limits.setStorage(auth.tenant, id, null).catch(() => {});
}

/**
 * A restore's change (the checkpoint's tree less the current one), charged before it switches;
 * returns what to call after it: the exact count of the restored tree (or the charge given back when it failed).
 */
export async function chargeRestore(deps: AppDeps, auth: AuthInfo, ws: string, checkpoint: string): Promise<(ok: boolean) => Promise<void>> {
  if (!deps.limits) return async () => {};
  const opened = await openLayers(layerDeps(deps), auth.tenant, ws);
  const quota = quotaFor(deps, auth, ws, opened.driver)!;
  const [now, then] = await Promise.all([quota.usage(), usageOf(deps, auth, ws, checkpoint)]);
  if (!now || !then) return async () => {};
  const delta = { files: then.files - now.files, bytes: then.bytes - now.bytes };
  try {
    await quota.charge(delta);
  } catch (e) {
    if (e instanceof ToolError) throw new ToolError(e.code, e.message.replace("This change", `Restoring ${checkpoint}`), e.details);
    throw e;
  }
  return async (ok) => {
    if (!ok) return quota.settle({ files: -delta.files, bytes: -delta.bytes });
    await quota.recount((await openLayers(layerDeps(deps), auth.tenant, ws)).driver);
  };
}

/** A deleted workspace's count goes (its bytes leave the tenant's). */
export async function dropWorkspaceUsage(deps: AppDeps, tenant: string, ws: string): Promise<void> {
  await deps.limits?.setStorage(tenant, ws, null).catch(() => {});
}

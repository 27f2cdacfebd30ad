/**
 * Workspaces of a tenant. The record lives in object storage (strongly consistent)
 * beside the files: t/<tenant>/w/<ws>/meta.json.
 */
import { ToolError } from "../shared/errors.js";
import { workspaceNotFound } from "../layout/workspace-meta.js";
import { newWhiteoutMark } from "../layers/whiteout.js";
import { randomId } from "../shared/hash.js";
import { ID_PATTERN, tenantWorkspacesPrefix, workspacePrefix } from "../layout/paths.js";
import { listPageAt } from "../layout/page-cursor.js";
import { listCoveredWorkspaces, WORKSPACES_LISTING } from "./covered-listing.js";
import { isConditionFailed, type StorageDriver } from "../storage/types.js";
import type { ToolList, WorkspaceMeta } from "../layout/workspace-meta.js";

/** The record as a tenant sees it: without the whiteout mark. */
export function publicMeta(meta: WorkspaceMeta): WorkspaceMeta {
  if (meta.whiteout === undefined) return meta;
  const { whiteout: _, ...rest } = meta;
  return rest;
}

const metaKey = (tenant: string, id: string) => `${workspacePrefix(tenant, id)}meta.json`;
const alreadyExists = (id: string) => new ToolError("ALREADY_EXISTS", `Workspace ${id} already exists. Pick another id, or use it.`, { id });

/**
 * ALREADY_EXISTS when `id` is a workspace now: for a create that does work before its record's
 * create-only write (a fork checkpoints its origin), so that work is not done for nothing. The write
 * stays the guard (another create can land after this check).
 */
export async function assertWorkspaceFree(driver: StorageDriver, tenant: string, id: string): Promise<void> {
  if (ID_PATTERN.test(id) && (await driver.head(metaKey(tenant, id)))) throw alreadyExists(id);
}

/** Creates the record (create-only), with its own whiteout mark; returns it as a tenant sees it (publicMeta). */
export async function createWorkspace(driver: StorageDriver, tenant: string, input: { id?: string; name?: string; base?: string; tools?: ToolList }): Promise<WorkspaceMeta> {
  return publicMeta((await createWorkspaceRecord(driver, tenant, input)).meta);
}

/** createWorkspace, answering the record as stored and its version (the isolate that made it knows it: lib/api/routes/known-workspace.ts). */
export async function createWorkspaceRecord(driver: StorageDriver, tenant: string, input: { id?: string; name?: string; base?: string; tools?: ToolList }): Promise<{ meta: WorkspaceMeta; etag: string }> {
  const id = input.id ?? `ws_${randomId(16)}`;
  if (!ID_PATTERN.test(id)) {
    throw new ToolError("INVALID_ARGUMENT", `Invalid workspace id ${JSON.stringify(id)}: use 1-63 lower-case letters, digits, '-' or '_', starting with a letter or digit.`, { id });
  }
  const meta: WorkspaceMeta = { id, name: input.name ?? id, created_at: new Date().toISOString(), ...(input.base ? { base: input.base, seq: 1 } : {}), ...(input.tools !== undefined ? { tools: input.tools } : {}), whiteout: newWhiteoutMark() };
  try {
    const stored = await driver.put(metaKey(tenant, id), JSON.stringify(meta), { ifNoneMatch: "*", contentType: "application/json" });
    return { meta, etag: stored.etag };
  } catch (e) {
    if (isConditionFailed(e)) throw alreadyExists(id);
    throw e;
  }
}

/** The workspace record as a tenant sees it (publicMeta), or NOT_FOUND (the same answer whether it never existed or is another tenant's). */
export async function getWorkspace(driver: StorageDriver, tenant: string, id: string): Promise<WorkspaceMeta> {
  const r = ID_PATTERN.test(id) ? await driver.get(metaKey(tenant, id)) : null;
  if (!r) throw workspaceNotFound(id);
  return publicMeta(JSON.parse(await new Response(r.body).text()) as WorkspaceMeta);
}

/** `covered`: the workspace patterns of a key limited to some; only what they cover is listed (covered-listing.ts), its pages and cursors included. */
export async function listWorkspaces(driver: StorageDriver, tenant: string, opts: { cursor?: string; limit?: number; covered?: readonly string[] | undefined }): Promise<{ workspaces: WorkspaceMeta[]; cursor?: string }> {
  const limit = Math.min(opts.limit ?? 100, 1000);
  const read = (id: string) => getWorkspace(driver, tenant, id).catch(() => null);
  if (opts.covered) return listCoveredWorkspaces(driver, tenant, opts.covered, { cursor: opts.cursor, limit }, read);
  const { result: r, cursor } = await listPageAt(driver, { prefix: tenantWorkspacesPrefix(tenant), delimiter: "/", limit }, { ...WORKSPACES_LISTING, cursor: opts.cursor });
  const metas = await Promise.all(r.prefixes.map((p) => read(p.slice(tenantWorkspacesPrefix(tenant).length, -1))));
  return { workspaces: metas.filter((m): m is WorkspaceMeta => m !== null), ...(cursor ? { cursor } : {}) };
}

/** What a workspace's delete tells its caller (lib/exec/workspace-gone.ts ends what runs there). */
export interface WorkspaceDeleteHooks {
  /** The record is gone (no call finds the workspace now); before any other object is deleted. */
  recordGone?: () => Promise<void>;
  /** A page of keys about to be deleted (full keys). */
  deleting?: (keys: readonly string[]) => void;
}

/** Deletes the record first (the workspace is gone at once), then every object below it. */
export async function deleteWorkspace(driver: StorageDriver, tenant: string, id: string, hooks: WorkspaceDeleteHooks = {}): Promise<{ deleted_objects: number }> {
  await getWorkspace(driver, tenant, id);
  await driver.delete(metaKey(tenant, id));
  await hooks.recordGone?.();
  let count = 0;
  for (;;) {
    const r = await driver.list({ prefix: workspacePrefix(tenant, id), limit: 1000 });
    if (r.objects.length === 0) break;
    hooks.deleting?.(r.objects.map((o) => o.key));
    await driver.delete(r.objects.map((o) => o.key));
    count += r.objects.length;
  }
  return { deleted_objects: count };
}

/** Forking a workspace: a new one whose lower layer is a checkpoint of another (lib/layers/checkpoints.ts). */
import { readModes, updateModes } from "../layout/modes.js";
import type { ToolList, WorkspaceMeta } from "../layout/workspace-meta.js";
import { createCheckpoint, deleteCheckpoint, getCheckpoint, requireMeta } from "../layers/checkpoints.js";
import type { LayerDeps, MetaRecord } from "../layers/open.js";
import { dropSeal, seal } from "../layers/seal.js";
import { ToolError } from "../shared/errors.js";
import { assertWorkspaceFree, createWorkspace, deleteWorkspace } from "./registry.js";

export interface ForkInput {
  id?: string;
  name?: string;
  from: string;
  checkpoint?: string;
  /** Whether a workspace with these tools may be written to (a checkpoint made of it); absent: any may. */
  writable?: (tools: ToolList | undefined) => boolean;
  /** The checkpoints quota, asked by createCheckpoint when the fork makes a checkpoint of its origin (never when one is given or none is made); may refuse. */
  room?: (id: string) => Promise<() => Promise<void>>;
  /** Called once the new id is known free, before anything is written: the storage quotas, which may refuse; answers what undoes the charge when the fork then fails. */
  charge?: () => Promise<() => Promise<void>>;
}

/**
 * A new workspace on the manifest of `checkpoint` of the origin, or of a checkpoint made of it now.
 * An origin that may not be written to (its tools need no `write`: no key may make a checkpoint of it)
 * is forked without writing to it: its files are sealed into a manifest of the fork's own (the
 * tenant's packs), its record, upper layer and checkpoints stay as they were, and no checkpoint is named.
 */
export async function forkWorkspace(deps: LayerDeps, tenant: string, input: ForkInput): Promise<WorkspaceMeta & { checkpoint?: string }> {
  const origin = await requireMeta(deps, tenant, input.from);
  // A failed fork leaves storage as it was: an id already taken is refused before anything is charged or written.
  if (input.id !== undefined) await assertWorkspaceFree(deps.storage, tenant, input.id);
  const uncharge = (await input.charge?.()) ?? (async () => {});
  try {
    if (input.checkpoint === undefined && input.writable && !input.writable(origin.meta.tools)) return await forkUnwritten(deps, tenant, input, origin);
    return await forkOn(deps, tenant, input, origin);
  } catch (e) {
    await uncharge();
    throw e;
  }
}

async function forkOn(deps: LayerDeps, tenant: string, input: ForkInput, origin: MetaRecord): Promise<WorkspaceMeta & { checkpoint: string }> {
  const cp = input.checkpoint ? await getCheckpoint(deps, tenant, input.from, input.checkpoint) : await createCheckpoint(deps, tenant, input.from, `fork ${input.id ?? ""}`.trim(), input.room);
  let meta: WorkspaceMeta;
  try {
    meta = await createWorkspace(deps.storage, tenant, forkRecord(input, origin, cp.manifest)); // a fork keeps its origin's tools
  } catch (e) {
    // Another create took the id meanwhile: the checkpoint made for this fork goes (it would hold its versions and a place of the quota).
    if (input.checkpoint === undefined) await deleteCheckpoint(deps, tenant, input.from, cp.id).catch(() => {});
    throw e;
  }
  // The checkpoint still there once this record landed: GC (which lists the workspaces again after reading
  // the checkpoints) kept its manifest, or sees this fork. Gone: its manifest may be collected, so the fork goes.
  await getCheckpoint(deps, tenant, input.from, cp.id).catch(async (e: unknown) => {
    if (e instanceof ToolError && e.code === "NOT_FOUND") await deleteWorkspace(deps.storage, tenant, meta.id).catch(() => {});
    throw e;
  });
  if (cp.exec?.length || cp.links) await updateModes(deps.storage, tenant, meta.id, { add: cp.exec ?? [], remove: [], ...(cp.links ? { links: cp.links } : {}) });
  return { ...meta, checkpoint: cp.id };
}

const forkRecord = (input: ForkInput, origin: MetaRecord, base: string) => ({
  ...(input.id !== undefined ? { id: input.id } : {}), ...(input.name !== undefined ? { name: input.name } : {}), base, ...(origin.meta.tools !== undefined ? { tools: origin.meta.tools } : {}),
});

async function forkUnwritten(deps: LayerDeps, tenant: string, input: ForkInput, origin: MetaRecord): Promise<WorkspaceMeta> {
  const [sealed, modes] = await Promise.all([seal(deps, tenant, input.from, origin.meta), readModes(deps.storage, tenant, input.from)]);
  let meta: WorkspaceMeta;
  try {
    meta = await createWorkspace(deps.storage, tenant, forkRecord(input, origin, sealed.manifest.id));
  } catch (e) {
    await dropSeal(deps.storage, tenant, sealed); // nothing points at it
    throw e;
  }
  const links = modes.links && Object.keys(modes.links).length ? modes.links : undefined;
  if (modes.exec.length || links) await updateModes(deps.storage, tenant, meta.id, { add: modes.exec, remove: [], ...(links ? { links } : {}) });
  return meta;
}

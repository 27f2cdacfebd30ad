/** Forking a workspace: a new one whose lower layer is a checkpoint of another (lib/layers/checkpoints.ts). */
import { updateModes } from "../layout/modes.js";
import type { WorkspaceMeta } from "../layout/workspace-meta.js";
import { createCheckpoint, getCheckpoint, requireMeta } from "../layers/checkpoints.js";
import type { LayerDeps } from "../layers/open.js";
import { createWorkspace } from "./registry.js";

/** A new workspace on the manifest of `checkpoint` of the origin, or of a checkpoint made of it now. */
export async function forkWorkspace(deps: LayerDeps, tenant: string, input: { id?: string; name?: string; from: string; checkpoint?: string }): Promise<WorkspaceMeta & { checkpoint: string }> {
  const origin = await requireMeta(deps, tenant, input.from);
  const cp = input.checkpoint ? await getCheckpoint(deps, tenant, input.from, input.checkpoint) : await createCheckpoint(deps, tenant, input.from, `fork ${input.id ?? ""}`.trim());
  const meta = await createWorkspace(deps.storage, tenant, { ...(input.id !== undefined ? { id: input.id } : {}), ...(input.name !== undefined ? { name: input.name } : {}), base: cp.manifest, ...(origin.meta.tools !== undefined ? { tools: origin.meta.tools } : {}) }); // a fork keeps its origin's tools
  if (cp.exec?.length || cp.links) await updateModes(deps.storage, tenant, meta.id, { add: cp.exec ?? [], remove: [], ...(cp.links ? { links: cp.links } : {}) });
  return { ...meta, checkpoint: cp.id };
}

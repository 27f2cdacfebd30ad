/** A workspace's record as storage holds it (t/<tenant>/w/<ws>/meta.json: paths.ts workspaceMetaKey), and the one answer for a workspace that has none. */
import { ToolError } from "../shared/errors.js";

/**
 * The refusal of a workspace that does not exist, or is not the caller's to see (another tenant's, one its key may not
 * name): the same text either way, so a caller never learns that another tenant's exists. Every door and layer throws this one.
 */
export const workspaceNotFound = (ws: string): ToolError => new ToolError("NOT_FOUND", `Workspace not found: ${ws}. List your workspaces with GET /v1/workspaces.`, { workspace: ws });

/** The presets a tool list may name; their tools: lib/run/toolset.ts PRESETS. No custom tool takes one of these names (lib/tools/custom/definition.ts). */
export const PRESET_NAMES = ["coding", "readonly", "web", "all", "none"] as const;
export type PresetName = (typeof PRESET_NAMES)[number];
/** A stored tool list (a workspace's, a key's): a preset name, or tool names (and preset names, whose tools join). Absent: all. */
export type ToolList = PresetName | string[];

export interface WorkspaceMeta {
  id: string;
  name: string;
  created_at: string;
  /** The lower layer: a manifest id (lib/layers/), or absent/null for a plain workspace. */
  base?: string | null;
  /** Bumped by every switch of `base` (import, checkpoint, restore); writes over the lower layer re-check it. */
  seq?: number;
  /** The tools calls on this workspace may use (lib/run/toolset.ts): a preset or names; absent: all. Set at creation. */
  tools?: ToolList;
  /**
   * The workspace's whiteout mark (lib/layers/whiteout.ts): what makes a deletion's body one no
   * tenant can write. Never shown to a tenant (publicMeta). Absent in records made before it.
   */
  whiteout?: string;
}

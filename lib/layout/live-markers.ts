/**
 * A live sandbox's marker in its workspace (lib/exec/live/markers.ts): t/<tenant>/w/<ws>/x/live/<session>/<generation>,
 * an empty object, there from its runner's start until its end is accounted. A workspace's delete lists
 * them to find the live sandboxes to end (lib/exec/workspace-gone.ts).
 */
import { ToolError } from "../shared/errors.js";
import { checkSessionId, internalPrefix } from "./paths.js";

/** A generation id (lib/exec/live/session-generation.ts newGeneration). */
const GENERATION_PATTERN = /^g_[A-Za-z0-9_-]{1,64}$/;

export const liveMarkersPrefix = (tenant: string, workspace: string): string => `${internalPrefix(tenant, workspace)}live/`;

export function liveMarkerKey(tenant: string, workspace: string, session: string, generation: string): string {
  if (!GENERATION_PATTERN.test(generation)) throw new ToolError("INTERNAL", "Bad live generation id.");
  return `${liveMarkersPrefix(tenant, workspace)}${checkSessionId(session)}/${generation}`;
}

/** The session and generation a marker's key (below liveMarkersPrefix) names; null for anything else. */
export function liveMarkerOf(rest: string): { session: string; generation: string } | null {
  const cut = rest.lastIndexOf("/");
  const session = rest.slice(0, cut);
  const generation = rest.slice(cut + 1);
  if (cut <= 0 || !GENERATION_PATTERN.test(generation)) return null;
  try {
    return { session: checkSessionId(session), generation };
  } catch {
    return null;
  }
}

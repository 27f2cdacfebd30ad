/** "Did you mean": existing paths close to a missing one, for NOT_FOUND messages. */
import { baseName, parentOf } from "../layout/paths.js";
import { editDistance } from "../shared/suggest.js";
import type { WorkspaceCore as Workspace } from "./workspace-types.js";

/** Up to 5 existing paths close to `path`: same directory, nearest names first. */
export async function similarPaths(ws: Workspace, path: string): Promise<string[]> {
  let dir = parentOf(path);
  // Walk up to the nearest directory that exists.
  for (;;) {
    if (await ws.isDirectory(dir)) break;
    dir = parentOf(dir);
  }
  const page = await ws.list(dir, { limit: 200 });
  const target = baseName(path).toLowerCase();
  return page.entries
    .map((e) => ({ e, d: editDistance(e.name.toLowerCase(), target) }))
    // A typo's distance: 2 edits, or one in four characters of a longer name (half the name let `nope.txt` suggest `runs.txt`).
    .filter(({ e, d }) => d <= Math.max(2, Math.floor(target.length / 4)) || e.name.toLowerCase().includes(target) || target.includes(e.name.toLowerCase()))
    .sort((a, b) => a.d - b.d)
    .slice(0, 5)
    .map(({ e }) => (e.type === "directory" ? `${e.path}/` : e.path));
}

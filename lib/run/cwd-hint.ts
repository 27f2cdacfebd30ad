/**
 * A file tool's miss when the session's bash works in another directory. File tools take paths from
 * the workspace's root; bash keeps its working directory from call to call (docs/bash.md). A model
 * that ran `cd src` and then asks `read` for `app.ts` meant `src/app.ts`: when the missing path is a
 * file below the session's saved working directory, the NOT_FOUND names it, so the model retries
 * with the right path instead of searching. Asked only on a NOT_FOUND of the opened path (one GET of
 * the saved shell, one HEAD); a call that finds its file costs nothing more.
 */
import { savedWorkingDirectory } from "../exec/shell-session.js";
import { normalizeFilePath } from "../layout/paths.js";
import { ToolError } from "../shared/errors.js";

/** `caught` again, or, when `args[key]` is a file below the session's working directory, a NOT_FOUND that names it. */
export async function cwdHint(ctx: Parameters<typeof savedWorkingDirectory>[0] & { ws: { head(path: string): Promise<unknown> } }, args: Record<string, unknown>, key: string, caught: unknown): Promise<unknown> {
  const raw = args[key];
  if (!(caught instanceof ToolError && caught.code === "NOT_FOUND") || typeof raw !== "string") return caught;
  try {
    const path = normalizeFilePath(raw);
    const cwd = await savedWorkingDirectory(ctx);
    if (!cwd || path === cwd || path.startsWith(`${cwd}/`)) return caught;
    const there = `${cwd}/${path}`;
    if (!(await ctx.ws.head(there))) return caught;
    const similar = Array.isArray(caught.details.similar) ? caught.details.similar : [];
    return new ToolError("NOT_FOUND", `File not found: ${path}. Paths are from the workspace's root, not from bash's working directory (${cwd}/, where this session's last command ended): did you mean ${there}?`, { ...caught.details, path, similar: [there, ...similar.filter((p) => p !== there)], working_directory: cwd });
  } catch {
    return caught; // the hint is a courtesy: any failure of its own leaves the miss as it was
  }
}

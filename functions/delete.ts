import { z } from "@hono/zod-openapi";
import { ToolError } from "../lib/shared/errors.js";
import { normalizePath } from "../lib/layout/paths.js";
import { defineTool } from "../lib/contract/tool.js";
import { linksBelow } from "../lib/workspace/links.js";
import { readLinks, saveLinks } from "../lib/layout/links.js";
import { counted } from "../lib/shared/text.js";

/** Most files one recursive delete removes; the rest waits for the next call. */
export const MAX_DELETE_FILES = 10_000;
/** Deleted paths shown in the text for the model (data.deleted has them all). */
const SHOWN_PATHS = 20;

const description = `Delete a file, an empty directory, or a directory with everything in it.
- path: the file or directory to delete. The workspace root cannot be deleted (INVALID_PATH).
- recursive: needed to delete a directory that is not empty, with all files and subdirectories below it, hidden ones included (default: false); without it such a directory gives IS_DIRECTORY. An empty directory is deleted without it.
- A recursive delete removes at most ${MAX_DELETE_FILES} entries per call; when truncated is true, call delete again with the same arguments to continue.
- A missing path gives NOT_FOUND with similar paths. Deleting cannot be undone.
- A recursive delete of a directory that is not empty is destructive: by default it waits for a human's approval (NEEDS_APPROVAL with a pending_id; get the outcome with the pending_result tool), and nothing is deleted before.
- A symlink is deleted as a link (its target stays); a recursive delete removes the links below the directory too.
Returns: {path, type: "file"|"directory"|"symlink", deleted: [paths; directories end with "/"], count, truncated}`;

export default defineTool({
  name: "delete",
  description,
  category: "file",
  permission: "write",
  summary: "Delete a file, an empty directory, or (with recursive: true) a directory and everything in it. Large directories may need repeated calls while truncated is true.",
  annotations: { title: "Delete", readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  output: z.object({ path: z.string(), type: z.enum(["file", "directory", "symlink"]), deleted: z.array(z.string()), count: z.number().int(), truncated: z.boolean() }),
  input: z.object({
    path: z.string().min(1).describe("Path of the file or directory to delete"),
    recursive: z.boolean().optional().describe("Delete a directory and everything in it (default: false)"),
  }),
  async execute(args, { ws }) {
    const path = normalizePath(args.path);
    if (path === "") {
      throw new ToolError("INVALID_PATH", "The workspace root cannot be deleted. Delete the files and directories inside it one at a time (ls shows them); the app can delete the whole workspace with DELETE /v1/workspaces/{ws}.", { path: "/" });
    }
    const stat = await ws.stat(path);
    if (!stat) {
      // Not a file nor a directory of files: a symlink, or a directory that only links make (docs/symlinks.md).
      const links = await readLinks(ws);
      const target = links.get(path);
      if (target !== undefined) {
        await saveLinks(ws, { [path]: null });
        return { title: path, output: `Deleted the symlink ${path} -> ${target} (its target is untouched).`, data: { path, type: "symlink", deleted: [path], count: 1, truncated: false } };
      }
      const below = linksBelow(links, path, true).links.map((l) => l.path);
      if (!below.length) throw await ws.notFound(path, "Path");
      if (!args.recursive) throw new ToolError("IS_DIRECTORY", `${path} is a directory (${below.length} symlink${below.length === 1 ? "" : "s"}). To delete it and everything in it, call delete again with recursive: true.`, { path, files: 0 });
      await saveLinks(ws, Object.fromEntries(below.map((p) => [p, null])));
      return { title: `${path}/`, output: `Deleted ${path}/ (${below.length} symlink${below.length === 1 ? "" : "s"}).`, data: { path, type: "directory", deleted: below, count: below.length, truncated: false } };
    }
    if (stat.type === "file") {
      // Deleting is "remove whatever is there": a write landing just before is then deleted, as in
      // any serial order of the two calls, so the delete is unconditional (etag null).
      await ws.delete(path, null);
      return { title: path, output: `Deleted ${path} (${counted(stat.size, "byte")}).`, data: { path, type: "file", deleted: [path], count: 1, truncated: false } };
    }
    if (!args.recursive) {
      // An empty directory is an explicit one (an implied directory has files below it): rmdir.
      if (!(await ws.hasEntries(path))) {
        await ws.removeDirectory(path);
        return { title: `${path}/`, output: `Deleted the empty directory ${path}/.`, data: { path, type: "directory", deleted: [`${path}/`], count: 1, truncated: false } };
      }
      let files = 0;
      let dirs = 0;
      for await (const e of ws.walkEntries(path, 101)) if (e.type === "file") files++;
      else if (e.path !== path) dirs++;
      const count = files + dirs > 100 ? "more than 100 entries" : [files ? `${files} file${files === 1 ? "" : "s"}` : "", dirs ? `${dirs} director${dirs === 1 ? "y" : "ies"}` : ""].filter(Boolean).join(", ");
      throw new ToolError("IS_DIRECTORY", `${path} is a directory (${count}). To delete it and everything in it, call delete again with recursive: true.`, { path, files: Math.min(files, 100) });
    }
    const files: string[] = [];
    const dirs: string[] = [];
    let truncated = false;
    for await (const e of ws.walkEntries(path, MAX_DELETE_FILES + 1)) {
      if (files.length + dirs.length === MAX_DELETE_FILES) {
        truncated = true;
        break;
      }
      (e.type === "file" ? files : dirs).push(e.path);
    }
    await ws.deleteMany(files.map((p) => ({ path: p, etag: null })));
    if (!truncated) {
      // The links below the directory go with it (docs/symlinks.md).
      const links = linksBelow(await readLinks(ws), path, true).links.map((l) => l.path);
      if (links.length) await saveLinks(ws, Object.fromEntries(links.map((p) => [p, null])));
      files.push(...links);
    }
    await ws.deleteMarkers(dirs.map((d) => ({ path: d, etag: null })));
    const paths = [...files, ...dirs.map((d) => `${d}/`)];
    const shown = paths.slice(0, SHOWN_PATHS).map((p) => `  ${p}`).join("\n");
    const rest = paths.length > SHOWN_PATHS ? `\n  ... and ${paths.length - SHOWN_PATHS} more` : "";
    const note = truncated
      ? `\n[Stopped after ${MAX_DELETE_FILES} files and directories; more remain in ${path}/. Call delete again with the same arguments to continue.]`
      : "";
    const sub = dirs.filter((d) => d !== path).length;
    const what = `${files.length} file${files.length === 1 ? "" : "s"}${sub ? ` and ${sub} director${sub === 1 ? "y" : "ies"}` : ""}`;
    return {
      title: `${path}/`,
      output: `${truncated ? `Deleted ${what} in ${path}/ (not all of them)` : `Deleted ${path}/ and the ${what} in it`}:\n${shown}${rest}${note}`,
      data: { path, type: "directory", deleted: paths, count: paths.length, truncated },
    };
  },
});

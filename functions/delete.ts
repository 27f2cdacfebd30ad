import { z } from "@hono/zod-openapi";
import { ToolError } from "../lib/errors.js";
import { normalizePath } from "../lib/paths.js";
import { defineTool } from "../lib/tool.js";

/** Most files one recursive delete removes; the rest waits for the next call. */
export const MAX_DELETE_FILES = 10_000;
/** Deleted paths shown in the text for the model (data.deleted has them all). */
const SHOWN_PATHS = 20;

const description = `Delete a file, or a directory with everything in it.
- path: the file or directory to delete. The workspace root cannot be deleted (INVALID_PATH).
- recursive: needed to delete a directory and all files below it, hidden ones included (default: false); without it a directory gives IS_DIRECTORY.
- A recursive delete removes at most ${MAX_DELETE_FILES} files per call; when truncated is true, call delete again with the same arguments to continue.
- A missing path gives NOT_FOUND with similar paths. Deleting cannot be undone.
Returns: {path, type: "file"|"directory", deleted: [paths], count, truncated}`;

export default defineTool({
  name: "delete",
  description,
  category: "file",
  permission: "write",
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
    if (!stat) throw await ws.notFound(path, "Path");
    if (stat.type === "file") {
      // Deleting is "remove whatever is there": a write landing just before is then deleted, as in
      // any serial order of the two calls, so the delete is unconditional (etag null).
      await ws.delete(path, null);
      return { title: path, output: `Deleted ${path} (${stat.size} bytes).`, data: { path, type: "file", deleted: [path], count: 1, truncated: false } };
    }
    if (!args.recursive) {
      const sample: string[] = [];
      for await (const f of ws.walk(path, 101)) sample.push(f.path);
      const count = sample.length > 100 ? "more than 100 files" : `${sample.length} file${sample.length === 1 ? "" : "s"}`;
      throw new ToolError("IS_DIRECTORY", `${path} is a directory (${count}). To delete it and everything in it, call delete again with recursive: true.`, { path, files: Math.min(sample.length, 100) });
    }
    const paths: string[] = [];
    let truncated = false;
    for await (const f of ws.walk(path, MAX_DELETE_FILES + 1)) {
      if (paths.length === MAX_DELETE_FILES) {
        truncated = true;
        break;
      }
      paths.push(f.path);
    }
    await ws.deleteMany(paths.map((p) => ({ path: p, etag: null })));
    const shown = paths.slice(0, SHOWN_PATHS).map((p) => `  ${p}`).join("\n");
    const rest = paths.length > SHOWN_PATHS ? `\n  ... and ${paths.length - SHOWN_PATHS} more` : "";
    const note = truncated
      ? `\n[Stopped after ${MAX_DELETE_FILES} files; more remain in ${path}/. Call delete again with the same arguments to continue.]`
      : "";
    return {
      title: `${path}/`,
      output: `${truncated ? `Deleted ${paths.length} files in ${path}/ (not all of them)` : `Deleted ${path}/ and the ${paths.length} file${paths.length === 1 ? "" : "s"} in it`}:\n${shown}${rest}${note}`,
      data: { path, type: "directory", deleted: paths, count: paths.length, truncated },
    };
  },
});

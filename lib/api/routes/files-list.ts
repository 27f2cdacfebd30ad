/**
 * Directory listings of the raw files route: GET /v1/workspaces/{ws}/files/ (the root),
 * GET .../files/<dir>/ and GET of a path that is a directory answer
 * `{path, entries: [{name, path, type, size?, etag?, modified?, target?}], cursor?}`, one page
 * (one storage list request) at a time. Symlinks are listed as the ls tool lists them (never
 * followed): on the first page, beside what storage lists, with the directories they lie in.
 */
import { z } from "@hono/zod-openapi";
import { ToolError } from "../../shared/errors.js";
import { readLinks } from "../../layout/links.js";
import { listedName } from "../../workspace/entries.js";
import { linksBelow } from "../../workspace/links.js";
import type { Workspace } from "../../workspace/workspace.js";

export const MAX_LIST_LIMIT = 1000;

export const LISTING_DOC = `A listing is one page: \`{path, entries: [{name, path, type: "file"|"directory"|"symlink", size?, etag?, modified?, target?}], cursor?}\`, hidden names included: the directory's files, subdirectories and symlinks, or with \`recursive=true\` every file, empty directory and symlink below it and the directories they lie in (each \`name\` then its path below the listed directory). A symlink is never followed (\`target\`: as stored). Symlinks, and the directories they lie in, come on the first page, not counted in \`limit\`: a directory can come again on a later page, as can, recursive, one whose files span pages. \`limit\`: entries per page (default and max ${MAX_LIST_LIMIT}). Pass \`cursor\` back unchanged for the next page of the same listing; another listing's is INVALID_ARGUMENT.`;

export const ListQuery = z.object({
  cursor: z.string().max(8192).optional().openapi({ description: "The cursor of the previous page" }),
  limit: z.string().optional().openapi({ description: `Entries per page, 1-${MAX_LIST_LIMIT} (default: ${MAX_LIST_LIMIT})` }),
  recursive: z.enum(["true", "false"]).optional().openapi({ description: "List everything below (default: false)" }),
});

const Entry = z.object({
  name: z.string(),
  path: z.string(),
  type: z.enum(["file", "directory", "symlink"]),
  size: z.number().optional(),
  etag: z.string().optional(),
  modified: z.string().optional(),
  target: z.string().optional().openapi({ description: "A symlink's target, as stored (never followed)" }),
});
type Entry = z.infer<typeof Entry>;
export const ListingSchema = z.object({ path: z.string(), entries: z.array(Entry), cursor: z.string().optional() }).openapi("DirectoryListing");

function parseQuery(q: Record<string, string>): { cursor?: string; limit: number; recursive: boolean } {
  const limit = q.limit === undefined || q.limit === "" ? MAX_LIST_LIMIT : Number(q.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new ToolError("INVALID_ARGUMENT", `limit must be a whole number from 1 to ${MAX_LIST_LIMIT}, not ${JSON.stringify(q.limit)}.`, { limit: q.limit });
  }
  const r = q.recursive;
  if (r !== undefined && !["true", "false", "1", "0", ""].includes(r)) throw new ToolError("INVALID_ARGUMENT", `recursive must be true or false, not ${JSON.stringify(r)}.`, { recursive: r });
  if (q.cursor !== undefined && q.cursor.length > 8192) throw new ToolError("INVALID_ARGUMENT", "cursor is too long: pass back the cursor of the previous page as it was.");
  return { ...(q.cursor ? { cursor: q.cursor } : {}), limit, recursive: r === "true" || r === "1" };
}

/**
 * One page of `dir` (canonical; "" is the root); an empty explicit directory lists no entries.
 * A directory that does not exist is NOT_FOUND;
 * `explicit` (the URL ended in "/") on a file is NOT_A_DIRECTORY.
 */
export async function listDirectory(ws: Workspace, dir: string, query: Record<string, string>, opts: { explicit?: boolean } = {}) {
  const q = parseQuery(query);
  // A cursor this listing did not give is INVALID_ARGUMENT (lib/layout/page-cursor.ts); it never lists outside `dir`.
  const [page, links] = await Promise.all([ws.list(dir, q), q.cursor ? null : readLinks(ws)]);
  const entries: Entry[] = [...page.entries];
  if (links) {
    // The links of this directory (docs/symlinks.md), as ls shows them: on the first page, beside what storage lists.
    const below = linksBelow(links, dir, q.recursive);
    const listed = new Set(entries.map((e) => e.path));
    for (const d of below.dirs) if (!listed.has(d)) entries.push({ name: listedName(dir, d, q.recursive), path: d, type: "directory" });
    for (const l of below.links) entries.push({ name: listedName(dir, l.path, q.recursive), path: l.path, type: "symlink", target: l.target });
  }
  // Nothing listed: an empty explicit directory (only its marker, f/<dir>/) is still a directory.
  if (dir !== "" && entries.length === 0 && !q.cursor && !(await ws.isDirectory(dir))) {
    if (opts.explicit && (await ws.head(dir))) {
      throw new ToolError("NOT_A_DIRECTORY", `${dir} is a file, not a directory. GET it without the trailing slash to download it.`, { path: dir });
    }
    throw await ws.notFound(dir, "File or directory");
  }
  return { path: dir === "" ? "/" : dir, entries, ...(page.cursor ? { cursor: page.cursor } : {}) };
}

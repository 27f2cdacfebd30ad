import { z } from "@hono/zod-openapi";
import { ToolError } from "../lib/shared/errors.js";
import { ancestorsOf, baseName, isHidden, joinPath, normalizePath } from "../lib/layout/paths.js";
import { decodeBase64, encodeBase64, utf8 } from "../lib/shared/text.js";
import { defineTool } from "../lib/contract/tool.js";
import { openJournals, unfinishedMoveNotes } from "../lib/workspace/move-journal.js";
import { linksBelow } from "../lib/workspace/links.js";
import { readLinks } from "../lib/layout/links.js";
import type { ScanItem } from "../lib/workspace/workspace.js";
import { compareKeys } from "../lib/layout/key-order.js";

export const DEFAULT_LS_LIMIT = 1000;
export const MAX_LS_LIMIT = 5000;
/** The listing text stops near this size (the cursor continues it). */
export const MAX_LS_OUTPUT_CHARS = 80_000;
/** Storage pages one call may scan (hidden entries are skipped page by page). */
const MAX_SCAN_PAGES = 20;

const description = `List a directory of the workspace: its files (with sizes) and subdirectories (ending in "/").
- path: the directory (default: "/", the workspace root). A path that is a file lists just that file.
- recursive: list everything below the directory, one full workspace path per line, each directory before its contents (default: false).
- show_hidden: include names starting with "." such as .git or .env (default: false). A note says how many were hidden.
- limit: most entries to return (default: ${DEFAULT_LS_LIMIT}, at most ${MAX_LS_LIMIT}); the text also stops near ${MAX_LS_OUTPUT_CHARS / 1000} KB.
- Sorted directories first, then by name (recursive: in path order). When truncated is true, call ls again with the same path and recursive plus the returned cursor for the next entries; each page is sorted on its own.
- A symlink is shown as "name -> target" (type "symlink", its target as data); ls never follows it.
- An empty workspace or directory gives an empty listing. A missing directory gives NOT_FOUND with similar paths; a path below a file gives NOT_A_DIRECTORY.
Returns: {path, type, entries: [{name, path, type: "file"|"directory"|"symlink", size?, modified?, target?}], count, truncated, cursor, hidden_skipped}`;

interface Entry {
  name: string;
  path: string;
  type: "file" | "directory" | "symlink";
  size?: number;
  modified?: string;
  target?: string;
}

/** The continuation of a listing: where the scan stopped, and the last entry it returned. */
interface Cursor {
  v: 1;
  /** Listed directory and mode: a cursor only continues the listing that made it. */
  p: string;
  r: boolean;
  /** Scan position, relative to the directory ("sub/" for a directory). */
  a: string;
  /** Position of the last returned entry (tells which directories were already listed). */
  d: string;
}

const encodeCursor = (c: Cursor): string => encodeBase64(utf8.encode(JSON.stringify(c)));

function decodeCursor(s: string, dir: string, recursive: boolean): Cursor {
  const bad = (why: string) => new ToolError("INVALID_ARGUMENT", `Invalid cursor: ${why}. Pass the cursor exactly as a previous ls call returned it, with the same path and recursive, or omit it to start from the beginning.`);
  const bytes = decodeBase64(s);
  let c: Partial<Cursor> | null = null;
  try {
    c = bytes ? (JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes)) as Partial<Cursor>) : null;
  } catch {
    c = null;
  }
  if (!c || c.v !== 1 || typeof c.p !== "string" || typeof c.r !== "boolean" || typeof c.a !== "string" || typeof c.d !== "string") throw bad("it is not a cursor returned by ls");
  if (c.p !== dir || c.r !== recursive) throw bad(`it continues the listing of "${c.p || "/"}"${c.r ? " (recursive)" : ""}, not this one`);
  return c as Cursor;
}

const sizeText = (n: number) => `${n} byte${n === 1 ? "" : "s"}`;

export default defineTool({
  name: "ls",
  description,
  category: "file",
  permission: "read",
  summary: "List a workspace directory: files with sizes and subdirectories (ending in '/'), optionally recursive or with hidden entries; pages with a cursor.",
  annotations: { title: "List directory", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  output: z.object({ path: z.string(), type: z.enum(["file", "directory", "symlink"]), entries: z.array(z.object({ name: z.string(), path: z.string(), type: z.enum(["file", "directory", "symlink"]), size: z.number().int().optional(), modified: z.string().optional(), target: z.string().optional() })), count: z.number().int(), truncated: z.boolean(), cursor: z.string().nullable(), hidden_skipped: z.number().int(), unfinished_moves: z.array(z.string()).optional() }),
  input: z.object({
    path: z.string().optional().describe('Directory to list (default: "/", the workspace root)'),
    recursive: z.boolean().optional().describe("List everything below the directory (default: false)"),
    show_hidden: z.boolean().optional().describe('Include names starting with "." (default: false)'),
    limit: z.number().int().min(1).max(MAX_LS_LIMIT).optional().describe(`Most entries to return (default: ${DEFAULT_LS_LIMIT})`),
    cursor: z.string().min(1).max(8192).optional().describe("The cursor of a truncated listing, to continue it"),
  }),
  async execute(args, { ws }) {
    const dir = normalizePath(args.path ?? "");
    const recursive = args.recursive ?? false;
    const showHidden = args.show_hidden ?? false;
    const limit = args.limit ?? DEFAULT_LS_LIMIT;
    const links = await readLinks(ws);
    const below = linksBelow(links, dir, recursive);

    const linkTarget = dir === "" ? undefined : links.get(dir);
    if (linkTarget !== undefined) {
      const entry: Entry = { name: baseName(dir), path: dir, type: "symlink", target: linkTarget };
      return {
        title: dir,
        output: `${dir} -> ${linkTarget} (a symlink; ls does not follow it: ls ${linkTarget} to list its target)`,
        data: { path: dir, type: "symlink", entries: [entry], count: 1, truncated: false, cursor: null, hidden_skipped: 0 },
      };
    }
    if (dir !== "") {
      const stat = (await ws.stat(dir)) ?? (below.links.length || below.dirs.length ? { type: "directory" as const } : null);
      if (stat?.type === "file") {
        const entry: Entry = { name: baseName(dir), path: dir, type: "file", size: stat.size, modified: stat.modified.toISOString() };
        return {
          title: dir,
          output: `${dir} is a file (${sizeText(stat.size)}, modified ${entry.modified}). Use read to see its content.`,
          data: { path: dir, type: "file", entries: [entry], count: 1, truncated: false, cursor: null, hidden_skipped: 0 },
        };
      }
      if (!stat) {
        const parents = await Promise.all(ancestorsOf(dir).map((p) => ws.head(p)));
        const file = parents.find((p) => p !== null);
        if (file) throw new ToolError("NOT_A_DIRECTORY", `Cannot list ${dir}: ${file.path} is a file, not a directory. Use read to see ${file.path}, or ls its directory.`, { path: dir, file: file.path });
        throw await ws.notFound(dir, "Directory");
      }
    }

    const start = args.cursor ? decodeCursor(args.cursor, dir, recursive) : null;
    const entries: Entry[] = [];
    /** Scan position: everything up to it was returned or skipped as hidden. */
    let pos = start?.a ?? "";
    /** Position of the last returned entry: directories it lies in were already listed. */
    let last = start?.d ?? "";
    let chars = 0;
    let hiddenSkipped = 0;
    let full = false;
    let more = false;
    /**
     * Not recursive, the subdirectories links make (storage may list them too, for a file beside the links) are the
     * first page's: listed, or counted as hidden, with the links below. The scan passes over them on every page.
     */
    const linkDirs = new Set(recursive ? [] : below.dirs);

    /** Adds an entry, or (once the page is full) notes that more remain. Returns false to stop. */
    const add = (e: Entry, position: string): boolean => {
      if (full) {
        more = true;
        return false;
      }
      entries.push(e);
      chars += e.path.length + 24;
      pos = last = position;
      if (entries.length >= limit || chars >= MAX_LS_OUTPUT_CHARS) full = true;
      return true;
    };
    const visit = (item: ScanItem): boolean => {
      const rel = item.dir ? item.rel.slice(0, -1) : item.rel;
      if (linkDirs.has(joinPath(dir, rel))) {
        if (!full) pos = item.rel;
        return true;
      }
      if (!showHidden && isHidden(rel)) {
        if (!full) {
          hiddenSkipped++;
          pos = item.rel;
        }
        return true;
      }
      if (recursive) {
        // Each directory is listed just before its first entry (it was listed already if the last
        // returned entry lies in it). An explicit directory (item.dir) comes before its contents.
        const segments = rel.split("/");
        for (let i = 1; i < segments.length; i++) {
          const d = segments.slice(0, i).join("/");
          if (last.startsWith(`${d}/`)) continue;
          if (!add({ name: segments[i - 1]!, path: joinPath(dir, d), type: "directory" }, `${d}/`)) return false;
        }
      }
      if (item.dir) return add({ name: baseName(rel), path: joinPath(dir, rel), type: "directory" }, item.rel);
      return add({ name: baseName(rel), path: joinPath(dir, rel), type: "file", size: item.size!, modified: item.modified!.toISOString() }, item.rel);
    };

    let storageCursor: string | undefined;
    let pages = 0;
    scan: for (;;) {
      if (pages++ >= MAX_SCAN_PAGES) {
        more = true;
        break;
      }
      const page = await ws.scan(dir, {
        recursive,
        ...(storageCursor ? { cursor: storageCursor } : pos ? { after: pos } : {}),
        // A small first page for a small limit; full pages after it (hidden entries may need skipping).
        limit: pages === 1 ? Math.min(1000, Math.max(limit + 2, 10)) : 1000,
      });
      for (const item of page.items) {
        // A rolled-up directory can come again on the next page (or after its own position).
        if (pos && compareKeys(item.rel, pos) <= 0) continue;
        if (!visit(item)) break scan;
      }
      if (!page.cursor) break;
      storageCursor = page.cursor;
    }

    if (!start) {
      // The links of this directory (docs/symlinks.md): on the first page, beside what storage lists.
      const listed = new Set(entries.map((e) => e.path));
      const hidden = (p: string) => !showHidden && isHidden(p.slice(dir ? dir.length + 1 : 0));
      for (const d of below.dirs) {
        if (listed.has(d)) continue;
        // A hidden directory is one skipped entry of a level; recursive, its hidden links are counted instead (as storage's files are).
        if (!hidden(d)) entries.push({ name: baseName(d), path: d, type: "directory" });
        else if (!recursive) hiddenSkipped++;
      }
      for (const l of below.links) {
        if (hidden(l.path)) hiddenSkipped++;
        else entries.push({ name: baseName(l.path), path: l.path, type: "symlink", target: l.target });
      }
      if (recursive) entries.sort((a, b) => compareKeys(a.path, b.path));
    }
    const rank = (e: Entry) => (e.type === "directory" ? 0 : 1);
    if (!recursive) entries.sort((a, b) => rank(a) - rank(b) || compareKeys(a.name, b.name));
    const cursor = more ? encodeCursor({ v: 1, p: dir, r: recursive, a: pos, d: last }) : null;
    const label = dir === "" ? "/" : `${dir}/`;
    const lines = entries.map((e) => {
      const shown = recursive ? e.path : e.name;
      return e.type === "directory" ? `${shown}/` : e.type === "symlink" ? `${shown} -> ${e.target}` : `${shown} (${sizeText(e.size!)})`;
    });
    let output: string;
    if (entries.length === 0 && !more) {
      output = dir === "" ? "The workspace is empty." : `${label} is empty.`;
      if (hiddenSkipped) output = `${label} has no entries other than hidden ones.`;
    } else {
      const dirs = entries.filter((e) => e.type === "directory").length;
      const linkCount = entries.filter((e) => e.type === "symlink").length;
      const files = entries.length - dirs - linkCount;
      output = `${label}${recursive ? " (recursive)" : ""}: ${dirs} director${dirs === 1 ? "y" : "ies"}, ${files} file${files === 1 ? "" : "s"}${linkCount ? `, ${linkCount} symlink${linkCount === 1 ? "" : "s"}` : ""}${start ? " (continued)" : ""}\n${lines.join("\n")}`;
    }
    if (hiddenSkipped) output += `\n[${hiddenSkipped} hidden entr${hiddenSkipped === 1 ? "y" : "ies"} (names starting with ".") not shown; pass show_hidden: true to include them.]`;
    if (more) output += `\n[Truncated after ${entries.length} entries. To continue, call ls again with the same path${recursive ? " and recursive: true" : ""} and cursor: "${cursor}".]`;
    // An unfinished directory move touching this directory (lib/workspace/move-journal.ts): say so, and how to finish it.
    const moves = start ? [] : await unfinishedMoveNotes(ws, await openJournals(ws), [dir]);
    if (moves.length) output += `\n[${moves.join(" ")}]`;
    return {
      title: label,
      output,
      data: { path: dir, type: "directory", entries, count: entries.length, truncated: more, cursor, hidden_skipped: hiddenSkipped, ...(moves.length ? { unfinished_moves: moves } : {}) },
    };
  },
});

import { z } from "@hono/zod-openapi";
import { assertEditSize, utf8Length } from "../lib/workspace/edit.js";
import { ToolError } from "../lib/shared/errors.js";
import { applyHunks, type AppliedHunk } from "../lib/tools/patch/apply.js";
import { parsePatch, type FileOp } from "../lib/tools/patch/parse.js";
import { normalizeFileToWrite } from "../lib/layout/write-path.js";
import { utf8 } from "../lib/shared/text.js";
import { defineTool } from "../lib/contract/tool.js";
import { commitBatch, type FileStep } from "../lib/workspace/file-batch.js";
import { loadText, MAX_EDIT_BYTES } from "../lib/workspace/text-file.js";
import type { Workspace } from "../lib/workspace/workspace.js";

/** Longest patch one call takes. */
export const MAX_PATCH_BYTES = 10 * 1024 * 1024;

const description = `Apply a patch in the V4A format (OpenAI's apply_patch, codex) to one or more files, all or nothing.
- patch: '*** Begin Patch', then file sections, then '*** End Patch':
  '*** Add File: <path>' then the new file's lines, each prefixed with '+';
  '*** Delete File: <path>';
  '*** Update File: <path>', optionally '*** Move to: <new path>', then hunks: '@@ <a line to find first, e.g. a function header>' (or a bare '@@'), then lines prefixed ' ' (context), '-' (remove) or '+' (add); '*** End of File' after a hunk that ends the file.
- Give about 3 lines of context around each change; hunks go in file order. Context matches exactly, else ignoring trailing whitespace, else ignoring indentation (the result says so).
- All or nothing: every hunk of every file is checked before anything is written; each write is conditional on the version checked, and if one fails the files already written are put back.
- A hunk that does not match gives NO_MATCH naming the hunk and showing the nearest lines. Add File on an existing path gives ALREADY_EXISTS; Update or Delete of a missing file gives NOT_FOUND. A file may appear in one section only.
- A patch with a '*** Delete File' section is destructive: by default it waits for a human's approval (NEEDS_APPROVAL with a pending_id; get the outcome with the pending_result tool), and nothing is written before.
- No prior read is needed (the context lines show what you saw); files you add or update count as read for later edits. CRLF files stay CRLF. Text files up to 10 MiB.
Returns: {files: [{path, action: "add"|"update"|"delete", from?, etag?, hunks?}], added, updated, deleted}`;

interface Planned {
  op: FileOp;
  path: string;
  /** Where the file ends up (a move's target). */
  to: string;
  steps: FileStep[];
  hunks?: AppliedHunk[];
}

export default defineTool({
  name: "apply_patch",
  description,
  category: "file",
  permission: "write",
  summary: "Apply a V4A patch ('*** Begin Patch' ... '*** End Patch' with Add/Update/Delete File sections, moves allowed) to one or more files, all or nothing.",
  annotations: { title: "Apply patch", readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  output: z.object({ files: z.array(z.object({ path: z.string(), action: z.enum(["add", "update", "delete"]), from: z.string().optional(), etag: z.string().optional(), hunks: z.array(z.object({ hunk: z.number().int(), line: z.number().int(), fuzz: z.number() })).optional() })), added: z.number().int(), updated: z.number().int(), deleted: z.number().int() }),
  input: z.object({
    patch: z.string().min(1).describe("The patch, from '*** Begin Patch' to '*** End Patch'"),
  }),
  async execute(args, { ws }) {
    if (utf8Length(args.patch) > MAX_PATCH_BYTES) throw new ToolError("PAYLOAD_TOO_LARGE", `The patch is over ${MAX_PATCH_BYTES} bytes; split it into several calls.`, { max: MAX_PATCH_BYTES });
    const ops = parsePatch(args.patch);
    const seen = new Map<string, number>();
    const claim = (path: string, line: number) => {
      const prev = seen.get(path);
      if (prev !== undefined) throw new ToolError("INVALID_ARGUMENT", `${path} appears in two sections of the patch (lines ${prev} and ${line}); put all its changes in one section.`, { path });
      seen.set(path, line);
    };
    const plans: Planned[] = [];
    for (const op of ops) {
      const path = normalizeFileToWrite(op.path, `The patch's path (line ${op.line})`);
      claim(path, op.line);
      const to = op.type === "update" && op.moveTo !== undefined ? normalizeFileToWrite(op.moveTo, `The patch's "*** Move to" path (line ${op.line})`) : path;
      if (to !== path) claim(to, op.line);
      plans.push(await plan(ws, op, path, to));
    }
    // Writes first, deletions last: a failed write then never leaves a file deleted.
    const steps = [...plans.flatMap((p) => p.steps.filter((s) => s.op === "put")), ...plans.flatMap((p) => p.steps.filter((s) => s.op === "delete"))];
    const { written } = await commitBatch(ws, steps); // the files it wrote count as read (their writer is the session)

    const files = plans.map((p) => ({
      path: p.to,
      action: p.op.type,
      ...(p.to !== p.path ? { from: p.path } : {}),
      ...(written.get(p.to) ? { etag: written.get(p.to)!.etag } : {}),
      ...(p.hunks ? { hunks: p.hunks } : {}),
    }));
    const letter = { add: "A", update: "M", delete: "D" } as const;
    const lines = files.map((f) => `${letter[f.action]} ${f.from ? `${f.from} -> ${f.path}` : f.path}`);
    const loose = plans.flatMap((p) => (p.hunks ?? []).filter((h) => h.fuzz > 0).map((h) => `hunk ${h.hunk} of ${p.to} (line ${h.line})`));
    const note = loose.length ? `\nMatched loosely (whitespace, punctuation or the Unicode spelling of accented letters differed): ${loose.join(", ")}. Read those lines to check the result.` : "";
    const count = (a: FileOp["type"]) => files.filter((f) => f.action === a).length;
    return {
      title: files.length === 1 ? files[0]!.path : `${files.length} files`,
      output: `Success. Updated the following files:\n${lines.join("\n")}${note}`,
      data: { files, added: count("add"), updated: count("update"), deleted: count("delete") },
    };
  },
});

/** One section checked against the workspace as it is now, and the conditional steps that apply it. */
async function plan(ws: Workspace, op: FileOp, path: string, to: string): Promise<Planned> {
  if (op.type === "add") {
    await requireAbsent(ws, path, "Add File");
    assertEditSize(utf8Length(op.content), path);
    return { op, path, to, steps: [{ op: "put", path, bytes: utf8.encode(op.content), etag: null, previous: null }] };
  }
  if (op.type === "delete") {
    const stat = await ws.stat(path);
    if (!stat) throw await ws.notFound(path);
    if (stat.type === "directory") throw new ToolError("IS_DIRECTORY", `${path} is a directory; '*** Delete File' deletes files only. Use the delete tool for directories.`, { path });
    if (stat.size > MAX_EDIT_BYTES) throw new ToolError("FILE_TOO_LARGE", `${path} is ${stat.size} bytes; a patch deletes files up to ${MAX_EDIT_BYTES} bytes (it keeps them to put back if the patch fails). Use the delete tool.`, { path, size: stat.size });
    const { bytes, info } = await ws.readBytes(stat, MAX_EDIT_BYTES);
    return { op, path, to, steps: [{ op: "delete", path, etag: info.etag, previous: bytes }] };
  }
  const { text, info, bytes } = await loadText(ws, path);
  const { text: next, applied } = applyHunks(text, op.hunks, path);
  const nextBytes = utf8.encode(next);
  assertEditSize(nextBytes.length, to);
  if (to === path) {
    return { op, path, to, hunks: applied, steps: [{ op: "put", path, bytes: nextBytes, etag: info.etag, previous: bytes }] };
  }
  await requireAbsent(ws, to, "Move to");
  return {
    op,
    path,
    to,
    hunks: applied,
    steps: [
      { op: "put", path: to, bytes: nextBytes, etag: null, previous: null },
      { op: "delete", path, etag: info.etag, previous: bytes },
    ],
  };
}

async function requireAbsent(ws: Workspace, path: string, what: string): Promise<void> {
  const stat = await ws.stat(path);
  if (!stat) return;
  if (stat.type === "directory") throw new ToolError("IS_DIRECTORY", `${path} is a directory; '*** ${what}' needs a file path.`, { path });
  throw new ToolError("ALREADY_EXISTS", `${path} already exists; '*** ${what}' only creates new files. Change it with '*** Update File: ${path}', or delete it first.`, { path });
}

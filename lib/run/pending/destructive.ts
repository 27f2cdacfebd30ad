/**
 * What is destructive: the one rule the approval gate's `destructive` condition applies
 * (lib/run/pending/gate.ts), whichever door the call came through (the tool route, MCP, SSE, the
 * Anthropic and OpenAI compat routes: they all run the same tools through executeTool).
 *
 *   bash         a command matching the tenant's caution guard rails (lib/exec/guard.ts:
 *                rm -r, git reset --hard, git clean -f, find -delete, chmod -R, force-push, ...)
 *   delete       recursive: true over a directory that holds files or directories
 *   move, copy   overwrite: true where the target exists (a file replaced, a directory merged into)
 *   apply_patch  a '*** Delete File' section (OpenAI's delete_file operation)
 *
 * Each verdict names its rule (rule ids below, the guard rule's id for bash), so the reason the
 * agent and the approver read says which rule held the call. No I/O beyond the workspace's own
 * reads (a HEAD or a short listing) and the guard rails' KV read (cached per call).
 */
import { guardVerdict } from "../../exec/tool-support.js";
import { parsePatch } from "../../tools/patch/parse.js";
import { baseName, joinPath, normalizeFilePath, normalizePath } from "../../layout/paths.js";
import type { ToolContext } from "../../contract/tool.js";
import { statWithLinks } from "../../workspace/links.js";
import { readLinks } from "../../layout/links.js";
import type { DESTRUCTIVE_TOOLS } from "../../tools/pending/gate-policy.js";

export interface DestructiveVerdict {
  /** The rule's id: delete-recursive, move-overwrite, copy-overwrite, patch-delete, or bash's guard rule (rm-recursive, git-reset-hard, ...). */
  rule: string;
  /** What the call would destroy, in words for the agent and the approver. */
  reason: string;
}

type Check = (args: Record<string, unknown>, ctx: ToolContext) => Promise<DestructiveVerdict | null>;

/** Entries counted to say how much a recursive delete would remove. */
const COUNTED_ENTRIES = 1000;

const pathOr = (p: unknown, normalize: (s: string) => string): string | null => {
  if (typeof p !== "string") return null;
  try {
    return normalize(p);
  } catch {
    return null; // the tool answers INVALID_PATH itself
  }
};

const bash: Check = async (args, ctx) => {
  if (typeof args.command !== "string") return null;
  const v = await guardVerdict(ctx, args.command);
  if (v.action !== "confirm") return null; // blocked commands are refused by the tool itself
  return { rule: v.rule.id, reason: `${v.rule.message} (rule ${v.rule.id})` };
};

const deleteRecursive: Check = async (args, { ws }) => {
  const path = pathOr(args.path, normalizePath);
  if (args.recursive !== true || !path || !(await ws.isDirectory(path))) return null;
  let files = 0;
  let dirs = 0;
  for await (const e of ws.walkEntries(path, COUNTED_ENTRIES + 1)) if (e.type === "file") files++;
  else if (e.path !== path) dirs++;
  if (files + dirs === 0) return null; // an empty directory: nothing but itself goes
  const many = files + dirs > COUNTED_ENTRIES ? `more than ${COUNTED_ENTRIES} files and directories` : `${files} file${files === 1 ? "" : "s"}${dirs ? ` and ${dirs} director${dirs === 1 ? "y" : "ies"}` : ""}`;
  return { rule: "delete-recursive", reason: `deleting ${path}/ with the ${many} in it (rule delete-recursive)` };
};

/** move and copy: like mv, an existing directory (or a `to` ending in "/") receives the source inside it. */
const overwriting =
  (tool: "move" | "copy"): Check =>
  async (args, { ws }) => {
    const from = pathOr(args.from, normalizePath);
    const to = pathOr(args.to, normalizePath);
    if (args.overwrite !== true || !from || to === null) return null;
    // Links count as entries, as the tools count them (transfer.ts): a link at the target is replaced.
    const [toStat, links] = await Promise.all([ws.stat(to), readLinks(ws)]);
    const dst = statWithLinks(toStat, links, to);
    const into = dst?.type === "directory" || (dst === null && /\/\s*$/.test(String(args.to)));
    const target = into ? joinPath(to, baseName(from)) : to;
    const existing = target === to ? dst : statWithLinks(await ws.stat(target), links, target);
    if (!existing) return null;
    const what = existing.type === "directory" ? `merging into the existing directory ${target}/ (files with the same paths are replaced)` : `replacing the existing ${existing.type === "symlink" ? "symlink" : "file"} ${target}`;
    return { rule: `${tool}-overwrite`, reason: `${tool === "move" ? "moving" : "copying"} ${from} over existing files: ${what} (rule ${tool}-overwrite)` };
  };

/** apply_patch: only files that exist are counted (a delete of a missing file is refused NOT_FOUND by the tool itself, no approver asked). */
const patchDeletes: Check = async (args, { ws }) => {
  if (typeof args.patch !== "string") return null;
  let named: string[];
  try {
    named = parsePatch(args.patch).filter((op) => op.type === "delete").map((op) => pathOr(op.path, normalizeFilePath) ?? op.path);
  } catch {
    return null; // a patch that does not parse is refused by the tool itself
  }
  if (!named.length) return null;
  const links = await readLinks(ws);
  const exists = await Promise.all(named.map(async (p) => statWithLinks(await ws.stat(p).catch(() => null), links, p) !== null));
  const deleted = named.filter((_, i) => exists[i]);
  if (!deleted.length) return null;
  const shown = deleted.slice(0, 10).join(", ") + (deleted.length > 10 ? `, and ${deleted.length - 10} more` : "");
  return { rule: "patch-delete", reason: `a patch that deletes ${deleted.length === 1 ? "the file" : `${deleted.length} files:`} ${shown} (rule patch-delete)` };
};

/** The tools that can destroy work (exactly gate-policy's DESTRUCTIVE_TOOLS, which the default gate lists), and how each one's call is judged. */
export const DESTRUCTIVE: Readonly<Record<(typeof DESTRUCTIVE_TOOLS)[number], Check>> = { bash, delete: deleteRecursive, move: overwriting("move"), copy: overwriting("copy"), apply_patch: patchDeletes };

/** Why this call of `tool` is destructive, or null when it is not (or the tool never is). */
export async function destructiveCall(tool: string, args: Record<string, unknown>, ctx: ToolContext): Promise<DestructiveVerdict | null> {
  const check = Object.hasOwn(DESTRUCTIVE, tool) ? DESTRUCTIVE[tool as keyof typeof DESTRUCTIVE] : undefined;
  return check ? check(args, ctx) : null;
}

/**
 * What a held call is bound to: the state of the workspace it was held on. A call approved later
 * runs only on that state; if the workspace moved past it, the call is stale and never runs.
 *
 * The binding is the workspace's layer pointer (meta.json's base and seq: every import,
 * checkpoint and restore switches it) and the version of every file or directory the call's
 * arguments name (file_path, path, from, to; an apply_patch's sections): a file's etag, a
 * directory's listing (paths and etags of up to MAX_BOUND_ENTRIES files, hashed), or "absent".
 * A bash command names no files we can know, so it is bound to the layer pointer only. A tool
 * whose definition can change (a tenant's custom tool) is bound to that definition too.
 *
 * Cost: 1 GET (the workspace record) + 1 HEAD per named file, or a listing per named directory;
 * paid when a call is held and again when it is approved, never on a call that runs at once.
 */
import type { StorageDriver } from "../../storage/types.js";
import { readMeta } from "../../layers/open.js";
import { sha256Hex } from "../../shared/hash.js";
import { ToolError } from "../../shared/errors.js";
import { parsePatch } from "../../tools/patch/parse.js";
import { normalizePath } from "../../layout/paths.js";
import type { Workspace } from "../../workspace/workspace.js";
import type { Tool } from "../../contract/tool.js";
import type { CallBinding } from "../../tools/pending/store.js";

/** Files of a named directory whose versions are bound (past it, the count is). */
export const MAX_BOUND_ENTRIES = 1000;
/** Paths one call binds (an apply_patch may name many). */
const MAX_BOUND_PATHS = 100;
const PATH_ARGS = ["file_path", "path", "from", "to"] as const;

/**
 * Modified arguments' paths (file_path, path, from, to) are workspace paths: INVALID_ARGUMENT naming
 * the field where one is not, before an approval is taken (the call stays pending; the tool would
 * have ended it with INVALID_PATH).
 */
export function assertPathArgs(args: Record<string, unknown>): void {
  for (const k of PATH_ARGS) {
    const v = args[k];
    if (typeof v !== "string") continue;
    try {
      normalizePath(v);
    } catch (e) {
      throw new ToolError("INVALID_ARGUMENT", `modified_args.${k}: ${e instanceof Error ? e.message : String(e)} The call is still pending: answer it again with a path in the workspace, or refuse it.`, { field: `modified_args.${k}` });
    }
  }
}

/** The workspace paths a call's arguments name (normalized; names that do not normalize are the tool's to refuse). */
export function namedPaths(tool: string, args: Record<string, unknown>): string[] {
  const raw: string[] = PATH_ARGS.map((k) => args[k]).filter((v): v is string => typeof v === "string");
  if (tool === "apply_patch" && typeof args.patch === "string") {
    try {
      for (const op of parsePatch(args.patch)) raw.push(op.path, ...(op.type === "update" && op.moveTo !== undefined ? [op.moveTo] : []));
    } catch {
      // a patch that does not parse is refused by the tool itself
    }
  }
  const out = new Set<string>();
  for (const p of raw) {
    try {
      out.add(normalizePath(p));
    } catch {
      // INVALID_PATH is the tool's answer
    }
  }
  return [...out].slice(0, MAX_BOUND_PATHS);
}

/** JSON with object keys sorted: two spellings of the same arguments compare equal. */
const canonical = (v: unknown): string =>
  Array.isArray(v) ? `[${v.map(canonical).join(",")}]` : v && typeof v === "object" ? `{${Object.keys(v).sort().filter((k) => (v as Record<string, unknown>)[k] !== undefined).map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(",")}}` : JSON.stringify(v);

/**
 * The call as it would run: its tool and arguments, path arguments normalized ("/d/" and "d" are
 * one directory; a trailing "/" of `to` is kept, since it changes where a move goes) and the
 * agent's own confirmation aside. Two calls with the same identity do the same thing.
 */
export function callIdentity(tool: string, args: Record<string, unknown>): string {
  const same: Record<string, unknown> = { ...args, confirmed: undefined };
  for (const k of PATH_ARGS) {
    const v = args[k];
    if (typeof v !== "string") continue;
    try {
      same[k] = normalizePath(v) + (k === "to" && /\/\s*$/.test(v) ? "/" : "");
    } catch {
      // kept as given: the tool refuses it
    }
  }
  return `${tool} ${canonical(same)}`;
}

async function versionOf(ws: Workspace, path: string): Promise<string> {
  const stat = await ws.stat(path);
  if (!stat) return "absent";
  if (stat.type === "file") return `file:${stat.etag}`;
  const lines: string[] = [];
  for await (const f of ws.walk(path, MAX_BOUND_ENTRIES + 1)) lines.push(`${f.path} ${f.etag}`);
  return `dir:${await sha256Hex(lines.join("\n"))}`;
}

/** The state `tool(args)` would run on, as of now: the workspace's, and the tool's own definition when it has one (a custom tool). */
export async function bindingOf(storage: StorageDriver, ws: Workspace, tool: Pick<Tool, "name" | "definition">, args: Record<string, unknown>): Promise<CallBinding> {
  const paths = namedPaths(tool.name, args);
  const [meta, versions, definition] = await Promise.all([readMeta(storage, ws.tenant, ws.id), Promise.all(paths.map((p) => versionOf(ws, p))), tool.definition ? sha256Hex(canonical(tool.definition)) : undefined]);
  return { layer: `${meta?.meta.base ?? "plain"}@${meta?.meta.seq ?? 0}`, paths: Object.fromEntries(paths.map((p, i) => [p, versions[i]!])), ...(definition ? { tool: definition } : {}) };
}

/** What moved between the binding a call was held on and now, in words; null when nothing did. */
export function bindingChange(held: CallBinding, now: CallBinding): string | null {
  // A custom tool replaced (or deleted and added again) runs something nobody approved.
  if (held.tool !== now.tool) return "the tool's definition changed (the tenant's custom tool was replaced, or deleted and added again)";
  if (held.layer !== now.layer) return "the workspace's version was switched (a restore, import or checkpoint)";
  const changed = Object.keys(held.paths).filter((p) => held.paths[p] !== now.paths[p]);
  if (!changed.length) return null;
  return `${changed.map((p) => (p === "" ? "/" : p)).join(", ")} changed`;
}

/**
 * Copying and moving files and directories inside a workspace (the move and copy tools).
 *
 * Everything is planned and checked before the first write; then every file is copied
 * (streaming get → put, create-only unless it replaces a file seen at planning time, which
 * is guarded by its etag); only when all copies are complete does a move delete its sources.
 * A failure midway removes the copies this call created and leaves every source in place.
 * Explicit directories (markers: empty directories kept on purpose) below a source directory
 * travel with it: each is made at its target after the files are copied, and a move removes
 * the source's markers with its files.
 */
import { ToolError } from "../errors.js";
import { ancestorsOf, baseName, isWithin, joinPath, normalizePath } from "../paths.js";
import type { FileInfo, Workspace } from "./workspace.js";

/** Most files one directory move or copy handles (each costs a few storage and KV operations). */
export const MAX_TRANSFER_FILES = 1000;
/** Largest existing target directory a directory can be merged into (overwrite: true). */
export const MAX_MERGE_TARGET_FILES = 10_000;
/** Files copied at once (Workers allow 6 simultaneous connections per request). */
const CONCURRENCY = 6;

export type TransferMode = "move" | "copy";

export interface TransferItem {
  from: string;
  to: string;
  size: number;
  etag: string;
  /** True when an existing file at `to` was replaced. */
  replaced: boolean;
}

export interface TransferResult {
  from: string;
  /** The resolved target (inside `to` when `to` is a directory). */
  to: string;
  type: "file" | "directory";
  files: TransferItem[];
  /** Explicit directories made at the target (empty ones included), as target paths. */
  directories: string[];
  bytes: number;
  overwritten: number;
}

interface Planned {
  from: string;
  to: string;
  /** Etag of the file being replaced, or null for a new file (create-only). */
  replaceEtag: string | null;
}

/** Runs `fn` over `items`, at most `n` at a time; stops starting new ones after the first failure. */
async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  let error: unknown;
  const worker = async () => {
    while (!failed && next < items.length) {
      const item = items[next++]!;
      try {
        await fn(item);
      } catch (e) {
        if (!failed) error = e;
        failed = true;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
  if (failed) throw error;
}

const verb = (mode: TransferMode) => (mode === "move" ? "move" : "copy");

export async function transfer(ws: Workspace, args: { from: string; to: string; overwrite?: boolean | undefined }, mode: TransferMode): Promise<TransferResult> {
  const overwrite = args.overwrite ?? false;
  const from = normalizePath(args.from);
  if (from === "") {
    throw new ToolError("INVALID_PATH", `The workspace root cannot be ${mode === "move" ? "moved" : "copied"}; give a file or directory inside it, e.g. src.`, { path: "/" });
  }
  const to = normalizePath(args.to);
  const [src, dst] = await Promise.all([ws.stat(from), ws.stat(to)]);
  if (!src) throw await ws.notFound(from, "Source");

  // mv/cp semantics: an existing directory (or a `to` ending in "/") receives the source inside it.
  let into = dst?.type === "directory";
  if (!into && /\/\s*$/.test(args.to)) {
    if (dst?.type === "file") throw new ToolError("NOT_A_DIRECTORY", `'to' ends with "/" but ${to} is a file, not a directory. Give a directory, or the new file path without "/".`, { path: to });
    into = true;
  }
  const target = into ? joinPath(to, baseName(from)) : to;
  if (target === from) throw new ToolError("INVALID_ARGUMENT", `from and to name the same path (${from}); nothing to ${verb(mode)}. Give a different target path.`, { from, to: target });
  if (src.type === "directory" && isWithin(target, from)) {
    throw new ToolError("INVALID_ARGUMENT", `Cannot ${verb(mode)} the directory ${from} into itself (${target}). Choose a target outside ${from}/.`, { from, to: target });
  }
  if (src.type === "directory" && isWithin(from, target)) {
    throw new ToolError("INVALID_ARGUMENT", `Cannot ${verb(mode)} ${from} onto ${target}, which contains it. Choose a target outside ${target}/.`, { from, to: target });
  }

  const [tstat, parents] = await Promise.all([target === to ? Promise.resolve(dst) : ws.stat(target), Promise.all(ancestorsOf(target).map((p) => ws.head(p)))]);
  const parentFile = parents.find((p) => p !== null);
  if (parentFile) throw new ToolError("NOT_A_DIRECTORY", `Cannot ${verb(mode)} to ${target}: ${parentFile.path} is a file, not a directory.`, { path: target, file: parentFile.path });
  if (tstat && !overwrite) {
    const how = tstat.type === "directory" ? " (files with the same paths are replaced, other files in it are kept)" : "";
    throw new ToolError("ALREADY_EXISTS", `${target} already exists. Pass overwrite: true to replace it${how}, or choose another target.`, { path: target, type: tstat.type });
  }
  if (tstat?.type === "directory" && src.type === "file") {
    throw new ToolError("IS_DIRECTORY", `${target} is a directory; a file cannot replace it. Give a path inside it, or delete it first.`, { path: target });
  }
  if (tstat?.type === "file" && src.type === "directory") {
    throw new ToolError("NOT_A_DIRECTORY", `${target} is a file; a directory cannot replace it. Delete it first, or choose another target.`, { path: target });
  }

  // The plan: every file, its target, and whether it replaces an existing file; every explicit directory and its target.
  const plan: Planned[] = [];
  const dirPlan: { from: string; to: string }[] = [];
  if (src.type === "file") {
    plan.push({ from, to: target, replaceEtag: tstat?.type === "file" ? tstat.etag : null });
  } else {
    const sources: FileInfo[] = [];
    let entries = 0;
    for await (const e of ws.walkEntries(from, MAX_TRANSFER_FILES + 1)) {
      entries++;
      if (e.type === "file") sources.push(e);
      else dirPlan.push({ from: e.path, to: e.path === from ? target : joinPath(target, e.path.slice(from.length + 1)) });
    }
    if (entries > MAX_TRANSFER_FILES) {
      throw new ToolError("FILE_TOO_LARGE", `${from} holds more than ${MAX_TRANSFER_FILES} files and directories; one ${verb(mode)} handles at most ${MAX_TRANSFER_FILES}. ${mode === "move" ? "Move" : "Copy"} its subdirectories one at a time.`, { path: from, max_files: MAX_TRANSFER_FILES });
    }
    // Merging into an existing directory: know its files, so that no file lands on a directory or below a file.
    const existing = new Map<string, string>();
    const existingDirs = new Set<string>();
    if (tstat?.type === "directory") {
      for await (const f of ws.walkEntries(target, MAX_MERGE_TARGET_FILES + 1)) {
        if (f.type === "file") existing.set(f.path, f.etag);
        else existingDirs.add(f.path);
        for (const a of ancestorsOf(f.path)) if (isWithin(a, target)) existingDirs.add(a);
      }
      if (existing.size > MAX_MERGE_TARGET_FILES) {
        throw new ToolError("FILE_TOO_LARGE", `${target} holds more than ${MAX_MERGE_TARGET_FILES} files, too many to merge into. Choose a new target, or ${verb(mode)} into a subdirectory of it.`, { path: target, max_files: MAX_MERGE_TARGET_FILES });
      }
    }
    for (const f of sources) {
      const dest = joinPath(target, f.path.slice(from.length + 1));
      if (existingDirs.has(dest)) throw new ToolError("IS_DIRECTORY", `Cannot ${verb(mode)} ${f.path} to ${dest}: ${dest} is a directory. Nothing was changed.`, { path: dest, from: f.path });
      const blocking = ancestorsOf(dest).find((a) => isWithin(a, target) && existing.has(a));
      if (blocking) throw new ToolError("NOT_A_DIRECTORY", `Cannot ${verb(mode)} ${f.path} to ${dest}: ${blocking} is a file, not a directory. Nothing was changed.`, { path: dest, file: blocking });
      plan.push({ from: f.path, to: dest, replaceEtag: existing.get(dest) ?? null });
    }
    for (const d of dirPlan) {
      const blocking = [d.to, ...ancestorsOf(d.to)].find((a) => isWithin(a, target) && existing.has(a));
      if (blocking) throw new ToolError("NOT_A_DIRECTORY", `Cannot ${verb(mode)} the directory ${d.from} to ${d.to}: ${blocking} is a file, not a directory. Nothing was changed.`, { path: d.to, file: blocking });
    }
  }

  // Copy everything. On failure, remove the copies this call created; sources are untouched.
  const done: (TransferItem & { sourceEtag: string })[] = [];
  const created: string[] = [];
  const createdDirs: string[] = [];
  try {
    await pool(plan, CONCURRENCY, async (p) => {
      const r = await ws.get(p.from);
      if (!r) throw new ToolError("CONFLICT", `${p.from} was deleted by another call during the ${verb(mode)}.`, { path: p.from });
      let info: FileInfo;
      try {
        const body = r.size === 0 ? new Uint8Array(0) : r.body;
        if (r.size === 0) await r.body.cancel().catch(() => {});
        info = await ws.put(p.to, body, {
          ...(p.replaceEtag !== null ? { ifMatch: p.replaceEtag } : { create: true }),
          length: r.size,
          ...(r.contentType ? { contentType: r.contentType } : {}),
          placeChecked: true,
        });
      } catch (e) {
        await r.body.cancel().catch(() => {});
        throw e;
      }
      if (p.replaceEtag === null) created.push(p.to);
      done.push({ from: p.from, to: p.to, size: info.size, etag: info.etag, replaced: p.replaceEtag !== null, sourceEtag: r.etag });
    });
    await pool(dirPlan, CONCURRENCY, async (d) => {
      if ((await ws.makeDirectory(d.to, { placeChecked: true })).created) createdDirs.push(d.to);
    });
  } catch (e) {
    await ws.deleteMany(created).catch(() => {});
    await ws.deleteMarkers(createdDirs).catch(() => {});
    if (!(e instanceof ToolError)) console.error(`${mode} failed`, e instanceof Error ? (e.stack ?? e.message) : String(e));
    const err = e instanceof ToolError ? e : new ToolError("INTERNAL", "Storage failed during the copy; retry.");
    const undo = `Nothing was ${mode === "move" ? "moved" : "copied"}: ${created.length ? `the ${created.length} new cop${created.length === 1 ? "y" : "ies"} made so far were removed` : "no new copy remained"}${mode === "move" ? " and every source is still in place" : ""}.`;
    const replaced = done.filter((d) => d.replaced).length;
    const warn = replaced ? ` ${replaced} existing file${replaced === 1 ? " was" : "s were"} already replaced.` : "";
    throw new ToolError(err.code, `${err.message} ${undo}${warn}`, { ...err.details, copied_before_failure: done.length, removed_copies: created.length, replaced });
  }

  // The session's records: a target is known as written, unless the session's knowledge of its
  // source was stale (then the stale record follows it, and the agent must read it again).
  await pool(done, CONCURRENCY, async (d) => {
    const rec = await ws.records.get(d.from);
    await ws.recordRead(d.to, rec && rec.etag !== d.sourceEtag ? rec.etag : d.etag);
  });
  if (mode === "move") {
    if (src.type === "file") await ws.delete(from);
    else await ws.deleteMany(done.map((d) => d.from));
    await ws.deleteMarkers(dirPlan.map((d) => d.from));
  }
  done.sort((a, b) => (a.to < b.to ? -1 : a.to > b.to ? 1 : 0));
  return {
    from,
    to: target,
    type: src.type,
    files: done.map(({ sourceEtag: _, ...d }) => d),
    directories: dirPlan.map((d) => d.to).sort(),
    bytes: done.reduce((n, d) => n + d.size, 0),
    overwritten: done.filter((d) => d.replaced).length,
  };
}

const bytesText = (n: number) => `${n} byte${n === 1 ? "" : "s"}`;

/** The text for the model. */
export function describeTransfer(r: TransferResult, mode: TransferMode): string {
  const did = mode === "move" ? "Moved" : "Copied";
  if (r.type === "file") {
    const f = r.files[0]!;
    const replaced = f.replaced ? " It replaced the file that was there." : "";
    const gone = mode === "move" ? ` ${r.from} no longer exists.` : "";
    return `${did} ${r.from} to ${r.to} (${bytesText(f.size)}).${replaced}${gone}`;
  }
  const shown = r.files.slice(0, 20).map((f) => `  ${f.from} -> ${f.to}${f.replaced ? " (replaced)" : ""}`).join("\n");
  const rest = r.files.length > 20 ? `\n  ... and ${r.files.length - 20} more` : "";
  const replaced = r.overwritten ? ` ${r.overwritten} existing file${r.overwritten === 1 ? " was" : "s were"} replaced.` : "";
  const gone = mode === "move" ? ` ${r.from}/ no longer exists.` : "";
  const dirs = r.directories.filter((d) => d !== r.to).length;
  const withDirs = dirs ? ` and ${dirs} director${dirs === 1 ? "y" : "ies"} (empty ones kept)` : "";
  return `${did} directory ${r.from}/ to ${r.to}/: ${r.files.length} file${r.files.length === 1 ? "" : "s"}, ${bytesText(r.bytes)}${withDirs}.${replaced}${gone}${shown ? `\n${shown}${rest}` : ""}`;
}

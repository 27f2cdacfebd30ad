/**
 * Copying and moving files and directories inside a workspace (the move and copy tools).
 *
 * Everything is planned and checked before the first write; then every file is copied
 * (streaming get → put, create-only unless it replaces a file seen at planning time, which
 * is guarded by its etag); only when all copies are complete does a move delete its sources,
 * each only in the version it copied (DESIGN invariant 9). A failure midway removes the copies
 * this call created (each only in the version it created) and leaves every source in place.
 *
 * A source changed by another call between its copy and its delete is not deleted: its copy is
 * removed again (if this call created it) and the newer version stays at the old path; the move
 * answers FILE_MODIFIED (a file) or CONFLICT (a directory: the other files are moved, and the
 * journal stays, so calling move again with the same arguments moves the rest).
 * A directory move keeps a journal (move-journal.ts) from before its first copy to its end.
 *
 * Explicit directories (markers: empty directories kept on purpose) below a source directory
 * travel with it: each is made at its target after the files are copied (and removed again by
 * the undo if this call made it), and a move removes each source marker with its files, only in
 * the version planned. They count against MAX_TRANSFER_FILES like files.
 */
import { ToolError } from "../shared/errors.js";
import { ancestorsOf, baseName, isWithin, joinPath, normalizePath } from "../layout/paths.js";
import { closeJournal, findJournal, openJournals, startJournal, unfinishedMoveNotes, type OpenJournal } from "./move-journal.js";
import { LinkOnPath, statWithLinks } from "./links.js";
import { readLinks } from "../layout/links.js";
import { linkPathsBelow, noLinks, planDirectoryLinks, sourceThroughLinks } from "./transfer-links.js";
import { run, verb, type Plan, type TransferMode, type TransferResult } from "./transfer-run.js";
import type { Workspace } from "./workspace.js";
import type { FileInfo, Stat } from "../layout/files.js";

export type { TransferItem, TransferMode, TransferResult } from "./transfer-run.js";

/** Most files and explicit directories one directory move or copy handles (each costs a few storage and KV operations). */
export const MAX_TRANSFER_FILES = 1000;
/** Largest existing target directory (files and explicit directories) a directory can be merged into (overwrite: true). */
export const MAX_MERGE_TARGET_FILES = 10_000;
/** Largest file compared byte for byte when etags differ (finishing a move on a backend whose etags are not content hashes). */
const MAX_COMPARE_BYTES = 4 * 1024 * 1024;

/** Same bytes? Etags of R2 and S3 are content hashes; otherwise compare small files. */
async function sameContent(ws: Workspace, a: FileInfo, b: FileInfo): Promise<boolean> {
  if (a.etag === b.etag) return true;
  if (a.size !== b.size || a.size > MAX_COMPARE_BYTES) return false;
  const read = (f: FileInfo) => ws.readBytes(f, MAX_COMPARE_BYTES).then((r) => r.bytes, () => null);
  const [x, y] = await Promise.all([read(a), read(b)]);
  return x !== null && y !== null && x.length === y.length && x.every((v, i) => v === y[i]);
}

export async function transfer(ws: Workspace, args: { from: string; to: string; overwrite?: boolean | undefined }, mode: TransferMode): Promise<TransferResult> {
  const asGiven = normalizePath(args.from);
  if (asGiven === "") {
    throw new ToolError("INVALID_PATH", `The workspace root cannot be ${mode === "move" ? "moved" : "copied"}; give a file or directory inside it, e.g. src.`, { path: "/" });
  }
  const to = normalizePath(args.to);
  const [givenStat, toStat, journals, links] = await Promise.all([ws.stat(asGiven), ws.stat(to), mode === "move" ? openJournals(ws) : Promise.resolve([]), readLinks(ws)]);
  // A link on the way to the source is followed inside the workspace, as read does (one more stat then).
  const via = sourceThroughLinks(links, asGiven);
  const from = via ? via.path : asGiven;
  const fromStat = via ? await ws.stat(from) : givenStat;
  const r = await transferFrom(ws, args, mode, { from, to, fromStat, toStat, journals, links });
  return via ? { ...r, via_link: { link: via.link, target: via.target } } : r;
}

async function transferFrom(
  ws: Workspace,
  args: { to: string; overwrite?: boolean | undefined },
  mode: TransferMode,
  { from, to, fromStat, toStat, journals, links }: { from: string; to: string; fromStat: Stat | null; toStat: Stat | null; journals: OpenJournal[]; links: Map<string, string> },
): Promise<TransferResult> {
  const overwrite = args.overwrite ?? false;
  // The same move, unfinished (interrupted, or files left behind): finish it.
  const unfinished = await findJournal(journals, ws, from, to);
  if (unfinished) return finishMove(ws, unfinished, statWithLinks(fromStat, links, from), journals, links);
  // Links count as entries, never followed (docs/symlinks.md): a link is moved as a link.
  const src = statWithLinks(fromStat, links, from);
  const dst = statWithLinks(toStat, links, to);
  if (!src) throw await ws.notFound(from, "Source");

  // mv/cp semantics: an existing directory (or a `to` ending in "/") receives the source inside it.
  let into = dst?.type === "directory";
  if (!into && /\/\s*$/.test(args.to)) {
    if (dst) throw new ToolError("NOT_A_DIRECTORY", `'to' ends with "/" but ${to} is a ${dst.type === "symlink" ? "symlink" : "file"}, not a directory. Give a directory, or the new path without "/".`, { path: to });
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

  const [tstat, parents] = await Promise.all([target === to ? Promise.resolve(dst) : ws.stat(target).then((s) => statWithLinks(s, links, target)), Promise.all(ancestorsOf(target).map((p) => ws.head(p)))]);
  const parentFile = parents.find((p) => p !== null);
  if (parentFile) throw new ToolError("NOT_A_DIRECTORY", `Cannot ${verb(mode)} to ${target}: ${parentFile.path} is a file, not a directory.`, { path: target, file: parentFile.path });
  const parentLink = ancestorsOf(target).find((a) => links.has(a));
  if (parentLink) throw new LinkOnPath(target, parentLink, links);
  if (tstat && !overwrite) {
    const how = tstat.type === "directory" ? " (files with the same paths are replaced, other files in it are kept)" : "";
    throw new ToolError("ALREADY_EXISTS", `${target} already exists. Pass overwrite: true to replace it${how}, or choose another target.`, { path: target, type: tstat.type });
  }
  if (tstat?.type === "directory" && src.type !== "directory") {
    throw new ToolError("IS_DIRECTORY", `${target} is a directory; a ${src.type === "symlink" ? "symlink" : "file"} cannot replace it. Give a path inside it, or delete it first.`, { path: target });
  }
  if (tstat && tstat.type !== "directory" && src.type === "directory") {
    throw new ToolError("NOT_A_DIRECTORY", `${target} is a ${tstat.type === "symlink" ? "symlink" : "file"}; a directory cannot replace it. Delete it first, or choose another target.`, { path: target });
  }

  const notes = mode === "move" ? await unfinishedMoveNotes(ws, journals, [from, target]) : [];
  if (src.type === "file") {
    // A file over a link replaces the link (overwrite), as a file over a file.
    const files = [{ from, to: target, replaceEtag: tstat?.type === "file" ? tstat.etag : null }];
    const replacesLink = { ...noLinks(), dropped: tstat?.type === "symlink" ? [target] : [] };
    return run(ws, mode, { from, target, type: "file", notes }, { files, dirs: [], links: replacesLink, kept: [] }, null);
  }
  if (src.type === "symlink") {
    // A link is moved or copied as a link: its target is data, never followed (mv, cp -P).
    const item = { from, to: target, target: src.target, replaced: tstat !== null };
    const replaceFiles = tstat?.type === "file" ? [{ path: target, etag: tstat.etag }] : [];
    return run(ws, mode, { from, target, type: "symlink", notes }, { files: [], dirs: [], links: { items: [item], replaceFiles, dropped: [] }, kept: [] }, null);
  }
  const plan = await planDirectory(ws, mode, from, target, tstat !== null, overwrite, false, links);
  const journal = mode === "move" ? await startJournal(ws, { from, to, toArg: args.to, target, overwrite, files: plan.files.length }) : null;
  return run(ws, mode, { from, target, type: "directory", notes }, plan, journal);
}

/** Calling move again with the arguments of an unfinished move: move what is left, per file and conditionally. */
async function finishMove(ws: Workspace, j: OpenJournal, src: ReturnType<typeof statWithLinks>, journals: OpenJournal[], links: ReadonlyMap<string, string>): Promise<TransferResult> {
  const { from, target, overwrite } = j.journal;
  const notes = await unfinishedMoveNotes(ws, journals, [from, target], j);
  if (src?.type !== "directory") {
    // Nothing left below the source (or it is now a file someone else wrote): the move is done.
    await closeJournal(ws, j);
    return { from, to: target, type: "directory", files: [], directories: [], bytes: 0, overwritten: 0, ...(notes.length ? { notes } : {}), finished: true };
  }
  const tstat = statWithLinks(await ws.stat(target), links, target);
  if (tstat && tstat.type !== "directory") throw new ToolError("NOT_A_DIRECTORY", `Cannot finish the move of ${from}/ to ${target}/: ${target} is now a ${tstat.type === "symlink" ? "symlink" : "file"}. Move or delete it, then call move again with the same arguments.`, { path: target });
  const plan = await planDirectory(ws, "move", from, target, tstat !== null, overwrite, true, links);
  const r = await run(ws, "move", { from, target, type: "directory", notes, finishing: true }, plan, j);
  return { ...r, finished: true };
}

/**
 * The plan of a directory: every file, its target, and whether it replaces an existing file;
 * every explicit directory and its target. Checked against the target's files and directories.
 */
async function planDirectory(ws: Workspace, mode: TransferMode, from: string, target: string, targetExists: boolean, overwrite: boolean, finishing: boolean, links: ReadonlyMap<string, string>): Promise<Plan> {
  const plan: Plan = { files: [], dirs: [], links: noLinks(), kept: [] };
  const sources: FileInfo[] = [];
  let entries = linkPathsBelow(links, from).length;
  for await (const e of ws.walkEntries(from, MAX_TRANSFER_FILES + 1)) {
    entries++;
    if (e.type === "file") sources.push(e);
    else plan.dirs.push({ from: e.path, to: e.path === from ? target : joinPath(target, e.path.slice(from.length + 1)), etag: e.etag });
  }
  if (entries > MAX_TRANSFER_FILES) {
    throw new ToolError("FILE_TOO_LARGE", `${from} holds more than ${MAX_TRANSFER_FILES} files and directories; one ${verb(mode)} handles at most ${MAX_TRANSFER_FILES}. ${mode === "move" ? "Move" : "Copy"} its subdirectories one at a time.`, { path: from, max_files: MAX_TRANSFER_FILES });
  }
  // Merging into an existing directory: know its files and directories, so that no file lands on
  // a directory, and nothing below a file.
  const existing = new Map<string, FileInfo>();
  const existingDirs = new Set<string>();
  if (targetExists) {
    let n = 0;
    for await (const e of ws.walkEntries(target, MAX_MERGE_TARGET_FILES + 1)) {
      n++;
      if (e.type === "file") existing.set(e.path, e);
      else existingDirs.add(e.path);
      for (const a of ancestorsOf(e.path)) if (isWithin(a, target)) existingDirs.add(a);
    }
    if (n > MAX_MERGE_TARGET_FILES) {
      throw new ToolError("FILE_TOO_LARGE", `${target} holds more than ${MAX_MERGE_TARGET_FILES} files and directories, too many to merge into. Choose a new target, or ${verb(mode)} into a subdirectory of it.`, { path: target, max_files: MAX_MERGE_TARGET_FILES });
    }
  }
  for (const f of sources) {
    const dest = joinPath(target, f.path.slice(from.length + 1));
    if (existingDirs.has(dest)) throw new ToolError("IS_DIRECTORY", `Cannot ${verb(mode)} ${f.path} to ${dest}: ${dest} is a directory. Nothing was changed.`, { path: dest, from: f.path });
    const blocking = ancestorsOf(dest).find((a) => isWithin(a, target) && existing.has(a));
    if (blocking) throw new ToolError("NOT_A_DIRECTORY", `Cannot ${verb(mode)} ${f.path} to ${dest}: ${blocking} is a file, not a directory. Nothing was changed.`, { path: dest, file: blocking });
    const there = existing.get(dest);
    if (finishing && there) {
      // The interrupted call may have copied it already; anything else there is someone's newer write.
      if (await sameContent(ws, f, there)) plan.files.push({ from: f.path, to: dest, replaceEtag: null, copied: { source: f, target: there } });
      else if (overwrite) plan.files.push({ from: f.path, to: dest, replaceEtag: there.etag });
      else plan.kept.push(f.path);
      continue;
    }
    plan.files.push({ from: f.path, to: dest, replaceEtag: there?.etag ?? null });
  }
  for (const d of plan.dirs) {
    const blocking = [d.to, ...ancestorsOf(d.to)].find((a) => isWithin(a, target) && existing.has(a));
    if (blocking) throw new ToolError("NOT_A_DIRECTORY", `Cannot ${verb(mode)} the directory ${d.from} to ${d.to}: ${blocking} is a file, not a directory. Nothing was changed.`, { path: d.to, file: blocking });
  }
  plan.links = planDirectoryLinks(links, from, target, plan.files, plan.dirs, existing, existingDirs, verb(mode));
  return plan;
}

const bytesText = (n: number) => `${n} byte${n === 1 ? "" : "s"}`;

/** The text for the model. */
export function describeTransfer(r: TransferResult, mode: TransferMode): string {
  const notes = r.notes?.length ? `\n\n${r.notes.join("\n")}` : "";
  const via = r.via_link ? `(${r.via_link.link} is a symlink to ${r.via_link.target}: this ${mode === "move" ? "moved" : "copied"} ${r.from})\n` : "";
  return via + describeFiles(r, mode) + notes;
}

function describeFiles(r: TransferResult, mode: TransferMode): string {
  const did = mode === "move" ? "Moved" : "Copied";
  if (r.type === "symlink") {
    const l = r.links![0]!;
    const replaced = l.replaced ? ` It replaced what was at ${r.to}.` : "";
    const gone = mode === "move" ? ` ${r.from} no longer exists.` : "";
    return `${did} the symlink ${r.from} -> ${l.target} to ${r.to} (as a link: its target is unchanged and was not followed).${replaced}${gone}`;
  }
  if (r.type === "file") {
    const f = r.files[0]!;
    const replaced = f.replaced ? " It replaced the file that was there." : "";
    const gone = mode === "move" ? ` ${r.from} no longer exists.` : "";
    return `${did} ${r.from} to ${r.to} (${bytesText(f.size)}).${replaced}${gone}`;
  }
  const links = r.links ?? [];
  const lines = [
    ...r.files.map((f) => `  ${f.from} -> ${f.to}${f.replaced ? " (replaced)" : ""}`),
    ...links.map((l) => `  ${l.from} -> ${l.to} (symlink to ${l.target}${l.replaced ? ", replaced" : ""})`),
  ];
  const shown = lines.slice(0, 20).join("\n");
  const rest = lines.length > 20 ? `\n  ... and ${lines.length - 20} more` : "";
  const withLinks = links.length ? ` and ${links.length} symlink${links.length === 1 ? "" : "s"} (targets unchanged)` : "";
  const replaced = r.overwritten ? ` ${r.overwritten} existing file${r.overwritten === 1 ? " was" : "s were"} replaced.` : "";
  const kept = r.kept ?? [];
  const gone = mode !== "move" ? "" : kept.length ? "" : ` ${r.from}/ no longer exists.`;
  const dirs = r.directories.filter((d) => d !== r.to).length;
  const withDirs = dirs ? ` and ${dirs} director${dirs === 1 ? "y" : "ies"} (empty ones kept)` : "";
  const keptText = kept.length
    ? ` ${kept.length} file${kept.length === 1 ? "" : "s"} differ${kept.length === 1 ? "s" : ""} between ${r.from}/ and ${r.to}/ (changed by another call since the move started) and ${kept.length === 1 ? "was" : "were"} left at both paths: ${kept.slice(0, 10).join(", ")}${kept.length > 10 ? ", ..." : ""}. Compare them and delete the one you do not want.`
    : "";
  const head = r.finished
    ? `Finished the interrupted move of ${r.from}/ to ${r.to}/: ${r.files.length} file${r.files.length === 1 ? "" : "s"}${withDirs} moved by this call, ${bytesText(r.bytes)}.`
    : `${did} directory ${r.from}/ to ${r.to}/: ${r.files.length} file${r.files.length === 1 ? "" : "s"}, ${bytesText(r.bytes)}${withDirs}${withLinks}.`;
  return `${head}${replaced}${gone}${keptText}${shown ? `\n${shown}${rest}` : ""}`;
}

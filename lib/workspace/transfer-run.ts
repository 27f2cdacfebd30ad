/**
 * Running a planned move or copy (transfer.ts plans it): copy every file, make every explicit
 * directory at its target, then (a move) delete each source only in the version it copied and
 * each source marker only in the version planned; undo on failure, each copy and marker only in
 * the version this call created. The rules are in transfer.ts's header.
 */
import { ToolError } from "../shared/errors.js";
import { closeJournal, type OpenJournal } from "./move-journal.js";
import { applyLinks, type PlannedLinks } from "./transfer-links.js";
import type { Workspace } from "./workspace.js";
import type { FileInfo } from "../layout/files.js";

/** Files copied at once (Workers allow 6 simultaneous connections per request). */
export const CONCURRENCY = 6;
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
  type: "file" | "directory" | "symlink";
  files: TransferItem[];
  /** Symlinks moved or copied as links (targets unchanged, never followed); absent when none. */
  links?: { from: string; to: string; target: string; replaced: boolean }[];
  /** Explicit directories made (or found) at the target, empty ones included, as target paths. */
  directories: string[];
  bytes: number;
  overwritten: number;
  /** Finishing an unfinished move: files that differ at both paths and were left as they are. */
  kept?: string[];
  /** Sentences about unfinished moves touching either tree (move-journal.ts); absent when none. */
  notes?: string[];
  /** This call finished an unfinished move (same arguments as the call that started it). */
  finished?: boolean;
  /** The first symlink on the way to the source, when `from` went through one (`from` is then the resolved path). */
  via_link?: { link: string; target: string };
}

export interface Planned {
  from: string;
  to: string;
  /** Etag of the file being replaced, or null for a new file (create-only). */
  replaceEtag: string | null;
  /** Finishing a move: the target already holds this source's bytes (no copy; delete the source). */
  copied?: { source: FileInfo; target: FileInfo };
}

/** An explicit directory (a marker) below the source, and where it goes. */
export interface PlannedDir {
  from: string;
  to: string;
  /** The source marker's etag when planned: a move removes it only in this version. */
  etag: string;
}

/** What one call copies: files, then explicit directories, then symlinks; `kept`: files a finishing move leaves alone. */
export interface Plan {
  files: Planned[];
  dirs: PlannedDir[];
  links: PlannedLinks;
  kept: string[];
}

/** Runs `fn` over `items`, at most `n` at a time; stops starting new ones after the first failure. */
export async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
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

export const verb = (mode: TransferMode) => (mode === "move" ? "move" : "copy");

export interface RunInfo {
  from: string;
  target: string;
  type: "file" | "directory" | "symlink";
  notes: string[];
  /** Finishing an earlier call's move: its journal is not this call's to drop on failure. */
  finishing?: boolean;
}

/** Copies the plan and makes its directories, then (a move) deletes each source in the version it copied. */
export async function run(ws: Workspace, mode: TransferMode, info: RunInfo, plan: Plan, journal: OpenJournal | null): Promise<TransferResult> {
  const { from, target } = info;
  const { dirs, kept } = plan;

  // Copy everything, then make the explicit directories (empty ones need their marker).
  // On failure, remove the copies and markers this call created; sources are untouched.
  const done: (TransferItem & { sourceEtag: string })[] = [];
  const created: { path: string; etag: string }[] = [];
  const createdDirs: { path: string; etag: string }[] = [];
  try {
    await pool(plan.files, CONCURRENCY, async (p) => {
      if (p.copied) {
        done.push({ from: p.from, to: p.to, size: p.copied.target.size, etag: p.copied.target.etag, replaced: false, sourceEtag: p.copied.source.etag });
        return;
      }
      const r = await ws.get(p.from);
      if (!r) throw new ToolError("CONFLICT", `${p.from} was deleted by another call during the ${verb(mode)}.`, { path: p.from });
      let put: FileInfo;
      try {
        const body = r.size === 0 ? new Uint8Array(0) : r.body;
        if (r.size === 0) await r.body.cancel().catch(() => {});
        put = await ws.put(p.to, body, {
          ...(p.replaceEtag !== null ? { ifMatch: p.replaceEtag } : { create: true }),
          length: r.size,
          ...(r.contentType ? { contentType: r.contentType } : {}),
          placeChecked: true,
        });
      } catch (e) {
        await r.body.cancel().catch(() => {});
        throw e;
      }
      if (p.replaceEtag === null) created.push({ path: p.to, etag: put.etag });
      done.push({ from: p.from, to: p.to, size: put.size, etag: put.etag, replaced: p.replaceEtag !== null, sourceEtag: r.etag });
    });
    await pool(dirs, CONCURRENCY, async (d) => {
      const m = await ws.makeDirectory(d.to, { placeChecked: true });
      if (m.created) createdDirs.push({ path: d.to, etag: m.etag });
    });
    await applyLinks(ws, plan.links, mode === "move", verb(mode));
  } catch (e) {
    // Each copy and marker is removed only in the version this call created (an edit of it since is kept).
    const undo = await ws.deleteMany(created).catch(() => null);
    const undoDirs = await ws.deleteMarkers(createdDirs).catch(() => null);
    const dirsLeft = undoDirs ? undoDirs.refused : createdDirs.map((d) => d.path);
    // Fully undone: nothing of this move is left to finish (an earlier call's journal stays for the next one).
    if (undo && undo.refused.length === 0 && dirsLeft.length === 0 && journal && !info.finishing) await closeJournal(ws, journal).catch(() => {});
    if (!(e instanceof ToolError)) console.error(`${mode} failed`, e instanceof Error ? (e.stack ?? e.message) : String(e));
    const err = e instanceof ToolError ? e : new ToolError("INTERNAL", "Storage failed during the copy; retry.");
    const left = undo ? undo.refused : created.map((c) => c.path);
    const removed = created.length - left.length;
    const what = mode === "move" ? " and every source is still in place" : "";
    const undoText = left.length === 0
      ? `Nothing was ${mode === "move" ? "moved" : "copied"}: ${created.length ? `the ${created.length} new cop${created.length === 1 ? "y" : "ies"} made so far were removed` : "no new copy remained"}${what}.`
      : `${left.length} of the ${created.length} new copies could not be removed (${left.slice(0, 5).join(", ")}${left.length > 5 ? ", ..." : ""})${what}. ${journal ? "Call move again with the same arguments to finish the move" : `Delete ${left.length === 1 ? "it" : "them"} if you do not want ${left.length === 1 ? "it" : "them"}`}.`;
    const replaced = done.filter((d) => d.replaced).length;
    const warn = replaced ? ` ${replaced} existing file${replaced === 1 ? " was" : "s were"} already replaced.` : "";
    const dirsText = dirsLeft.length ? ` ${dirsLeft.length} new empty director${dirsLeft.length === 1 ? "y" : "ies"} could not be removed (${dirsLeft.slice(0, 5).join(", ")}${dirsLeft.length > 5 ? ", ..." : ""}); delete ${dirsLeft.length === 1 ? "it" : "them"} if you do not want ${dirsLeft.length === 1 ? "it" : "them"}.` : "";
    throw new ToolError(err.code, `${err.message} ${undoText}${dirsText}${warn}`, {
      ...err.details,
      copied_before_failure: done.length,
      removed_copies: removed,
      ...(left.length ? { copies_left: left } : {}),
      ...(dirsLeft.length ? { directories_left: dirsLeft } : {}),
      replaced,
    });
  }

  // A move deletes each source only in the version it copied (one changed since stays, newer),
  // and each source marker only in the version planned (one made again meanwhile stays).
  const notes = [...info.notes];
  const dropped = plan.links.dropped;
  if (dropped.length) notes.push(`The copied file${dropped.length === 1 ? "" : "s"} replaced the symlink${dropped.length === 1 ? "" : "s"} that stood at ${dropped.slice(0, 10).join(", ")}${dropped.length > 10 ? ", ..." : ""}.`);
  if (mode === "move") {
    const { refused } = await ws.deleteMany(done.map((d) => ({ path: d.from, etag: d.sourceEtag })));
    const { refused: dirsKept } = await ws.deleteMarkers(dirs.map((d) => ({ path: d.from, etag: d.etag })));
    if (dirsKept.length) notes.push(`${dirsKept.map((d) => `${d}/`).join(", ")} ${dirsKept.length === 1 ? "was" : "were"} made again by another call during the move and ${dirsKept.length === 1 ? "was" : "were"} kept at the old path as well.`);
    if (refused.length) return changedDuringMove(ws, info, done, created, refused, journal);
    if (journal) await closeJournal(ws, journal);
  }

  // The session's records: a target is known as written, unless the session's knowledge of its
  // source was stale (then the stale record follows it, and the agent must read it again).
  await recordTargets(ws, done);
  done.sort((a, b) => (a.to < b.to ? -1 : a.to > b.to ? 1 : 0));
  return {
    from,
    to: target,
    type: info.type,
    files: done.map(({ sourceEtag: _, ...d }) => d),
    directories: dirs.map((d) => d.to).sort(),
    ...(plan.links.items.length ? { links: plan.links.items.map((l) => ({ ...l })).sort((a, b) => (a.to < b.to ? -1 : a.to > b.to ? 1 : 0)) } : {}),
    bytes: done.reduce((n, d) => n + d.size, 0),
    overwritten: done.filter((d) => d.replaced).length,
    ...(kept.length ? { kept } : {}),
    ...(notes.length ? { notes } : {}),
  };
}

type Done = TransferItem & { sourceEtag: string };

async function recordTargets(ws: Workspace, done: Done[]): Promise<void> {
  await pool(done, CONCURRENCY, async (d) => {
    const rec = await ws.records.get(d.from);
    await ws.recordRead(d.to, rec && rec.etag !== d.sourceEtag ? rec.etag : d.etag);
  });
}

/**
 * Some sources were changed (or deleted) by another call after they were copied: they were not
 * deleted. Their copies made by this call are removed again (only in the version created), so the
 * newer version stays alone at the old path; a copy that replaced a file (overwrite) stays.
 * The other files are moved. The journal of a directory move stays: the same call again moves the rest.
 */
async function changedDuringMove(ws: Workspace, info: RunInfo, done: Done[], created: { path: string; etag: string }[], refused: string[], journal: OpenJournal | null): Promise<never> {
  const stayed = new Set(refused);
  const byTarget = new Map(created.map((c) => [c.path, c]));
  const undo = done.filter((d) => stayed.has(d.from) && byTarget.has(d.to)).map((d) => byTarget.get(d.to)!);
  const { refused: copiesLeft } = await ws.deleteMany(undo).catch(() => ({ refused: undo.map((u) => u.path) }));
  const moved = done.filter((d) => !stayed.has(d.from));
  await recordTargets(ws, moved);
  const replacedStale = done.filter((d) => stayed.has(d.from) && d.replaced).map((d) => d.to);
  const leftText = copiesLeft.length ? ` Their cop${copiesLeft.length === 1 ? "y" : "ies"} at ${copiesLeft.join(", ")} could not be removed (changed since); compare and keep the one you want.` : "";
  const replacedText = replacedStale.length ? ` ${replacedStale.join(", ")} had already been replaced by the version the move read (overwrite).` : "";
  const details = { path: refused[0], changed: refused, moved: moved.map((d) => d.from), ...(copiesLeft.length ? { copies_left: copiesLeft } : {}), ...(replacedStale.length ? { replaced: replacedStale } : {}) };
  if (info.type === "file") {
    throw new ToolError("FILE_MODIFIED", `${info.from} was changed by another call during the move, so it was not moved: the newer version is still at ${info.from}${copiesLeft.length ? "" : ` and nothing was written to ${info.target}`}.${leftText}${replacedText} Read it, then move it again.`, details);
  }
  const shown = refused.slice(0, 10).join(", ") + (refused.length > 10 ? `, and ${refused.length - 10} more` : "");
  throw new ToolError(
    "CONFLICT",
    `${refused.length} file${refused.length === 1 ? " was" : "s were"} changed by another call during the move of ${info.from}/ and ${refused.length === 1 ? "was" : "were"} not moved (the newer version stays at the old path): ${shown}. ` +
      `The other ${moved.length} file${moved.length === 1 ? " was" : "s were"} moved to ${info.target}/.${leftText}${replacedText} ${journal ? "Call move again with the same arguments to move the rest." : ""}`,
    details,
  );
}

/**
 * What the model reads of a finished run's write-back, after the command's output: the changes that
 * live only in the workspace's tables or markers (execute bits, symlinks, empty directories), and what
 * was refused, skipped, in conflict or not written back. The data fields list the same paths; the
 * model reads only this text (docs/bash.md). Every tool that shows a run's result appends it.
 * Bundles for Workers.
 */
import { counted, cutAtWord } from "../shared/text.js";
import type { RunResult, Skipped } from "./types.js";
import { discardedCount } from "./discarded.js";

/** Names one line shows; the rest are counted ("and N more"). */
const NAMES_SHOWN = 20;

/** The first five of `paths`, comma-separated, ", ..." when there are more: how a line names the changes it is about. */
export const firstNames = (paths: readonly string[], count = paths.length): string => `${paths.slice(0, 5).join(", ")}${count > 5 ? ", ..." : ""}`;

/** One line of a kind of change: "\n[label: a, b, ... and N more]", "" when there is none. */
function changeLine(label: string, paths: readonly string[]): string {
  if (!paths.length) return "";
  const more = paths.length - NAMES_SHOWN;
  return `\n[${label}: ${paths.slice(0, NAMES_SHOWN).join(", ")}${more > 0 ? ` and ${more} more` : ""}]`;
}

/**
 * The changes of a run that are in no file list, one line each: execute bits (of files not otherwise
 * changed), symlinks made or repointed, symlinks removed, empty directories kept, directories removed
 * (not git's own inside a .git directory).
 * A runner that does not say which links were removed (links_removed) has them all on one line.
 */
function treeChangeLines(r: WriteBackFields): string {
  const written = new Set(r.files_changed ?? []);
  const removed = new Set(r.links_removed ?? []);
  const links = r.links_changed ?? [];
  const linksLine = r.links_removed ? changeLine("symlinks made or repointed", links.filter((p) => !removed.has(p))) + changeLine("symlinks removed", r.links_removed) : changeLine("symlinks made, repointed or removed", links);
  return (
    // A file whose execute bit alone changed is in no other list: said here, so a mode-only change is never silent.
    changeLine("execute bit changed", (r.modes_changed ?? []).filter((p) => !written.has(p))) +
    linksLine +
    changeLine("empty directories kept", dirsNamed(r.dirs_created)) +
    changeLine("directories removed", dirsNamed(r.dirs_deleted))
  );
}

/** Directories a line names, as directories ("a/"): not those inside a .git directory (git's own: git init makes several empty ones), which are noise to the model. */
const GIT_INSIDE = /(^|\/)\.git\//;
const dirsNamed = (dirs: readonly string[] | undefined): string[] => (dirs ?? []).filter((d) => !GIT_INSIDE.test(`${d}/`)).map((d) => `${d}/`);

type WriteBackFields = Pick<RunResult, "conflicts" | "unsynced" | "lists_cut"> & Partial<Pick<RunResult, "skipped" | "files_changed" | "modes_changed" | "links_changed" | "links_removed" | "dirs_created" | "dirs_deleted">>;

/** How a change in no file list is named beside its path when its save was refused. */
const CHANGE_NAMES: Record<NonNullable<Skipped["change"]>, string> = { execute_bit: "execute bit", symlink: "symlink", dir_created: "empty directory", dir_deleted: "directory removed" };

/** A refused change as the model reads it: its path, and what it was when it is in no file list ("d/ (empty directory)"). */
export const refusedName = (s: Skipped): string => s.path + (s.change ? ` (${CHANGE_NAMES[s.change]})` : "");

/** What each skip reason (other than a refused write) means for the model, and what to do: [one, more than one, why]. */
const SKIP_WHY: Record<Exclude<Skipped["reason"], "error">, readonly [string, string, string]> = {
  special_file: ["socket, FIFO or device", "sockets, FIFOs or devices", "the workspace keeps only files, directories and symlinks, so these are not in it"],
  invalid_name: ["name the workspace cannot hold", "names the workspace cannot hold", "(not valid UTF-8, a control character or a backslash, not in Unicode NFC, a name over 255 bytes or a path over 768 bytes: each says which): not in the workspace; rename them"],
  path_conflict: ["workspace entry that could not be placed in the sandbox", "workspace entries that could not be placed in the sandbox", "(a file where a directory is, or the reverse): the command ran without them"],
  symlink: ["symlink that could not be kept", "symlinks that could not be kept", ""],
  limit: ["directory change past the write-back limit of one call", "directory changes past the write-back limit of one call", "not in the workspace"],
};

/** "1 socket, FIFO or device: the workspace keeps ...", "2 sockets, ...": a reason's words for `n` entries. */
function skipWords(reason: string, n: number): string {
  const w = SKIP_WHY[reason as keyof typeof SKIP_WHY];
  if (!w) return `${n} ${reason}`;
  const what = counted(n, w[0], w[1]);
  return !w[2] ? what : w[2].startsWith("(") ? `${what} ${w[2]}` : `${what}: ${w[2]}`;
}

/** One line's worth of skipped entries, grouped by reason: "2 sockets, …: a.sock, b.sock; 1 …". */
function skippedSummary(skipped: Skipped[]): string {
  const byReason = new Map<string, Skipped[]>();
  for (const s of skipped) byReason.set(s.reason, [...(byReason.get(s.reason) ?? []), s]);
  return [...byReason]
    .map(([reason, list]) => {
      const shown = list.slice(0, 5).map((s) => s.path + (s.detail ? ` (${cutAtWord(s.detail, 120)})` : "")).join(", ");
      return `${skipWords(reason, list.length)}: ${shown}${list.length > 5 ? ", ..." : ""}`;
    })
    .join("; ");
}

/**
 * What the model must know about the write-back of a finished run, one line each: changes in no
 * file list (treeChangeLines), changes whose write was refused, entries not synced (`skipped`: special files, invalid names, path conflicts),
 * conflicts (both versions kept) and changes that were not written back (`unsynced`: not in the
 * workspace). "" when there is nothing to say. Every tool that shows a run's result appends it.
 */
export function writeBackNotes(r: WriteBackFields): string {
  let text = treeChangeLines(r);
  const cut = Object.entries(r.lists_cut ?? {});
  if (cut.length) text += `\n[the result was too large to keep whole: only the first entries of these lists are given (field: all of it): ${cut.map(([f, n]) => `${f}: ${n}`).join(", ")}]`;
  // A change whose write was refused (a quota, a storage error): not in the workspace, said here, not only in data.skipped.
  const failed = (r.skipped ?? []).filter((s) => s.reason === "error");
  if (failed.length) {
    // One reason (a quota's refusal: one file's, or the whole write-back's): said once, whole (the runner bounds it at 600);
    // else each file's, cut at a word. Before (2026-12-02) one file's reason was cut at its 200th character, mid-word.
    const files = failed.some((s) => s.change) ? counted(failed.length, "change", "changes") : `${failed.length} changed file${failed.length === 1 ? "" : "s"}`;
    const one = failed.every((s) => s.detail === failed[0]!.detail) ? failed[0]!.detail : undefined;
    if (one) {
      const paths = failed.map(refusedName).sort();
      const why = cutAtWord(one, 600);
      text += `\n[not written back: ${files} (${firstNames(paths)}). ${why}${/[.!?…]$/.test(why) ? "" : "."} These changes are NOT in the workspace; any of the command's changes not listed here is.]`;
    } else {
      const shown = failed.slice(0, 5).map((s) => `${s.path}${s.detail ? `: ${cutAtWord(s.detail, 200)}` : ""}`).join("; ");
      text += `\n[not written back: ${files} (${shown}${failed.length > 5 ? "; ..." : ""}). These changes are NOT in the workspace; any of the command's changes not listed here is.]`;
    }
  }
  const others = (r.skipped ?? []).filter((s) => s.reason !== "error");
  if (others.length) text += `\n[not synced: ${skippedSummary(others)}]`;
  for (const c of r.conflicts) {
    text += `\n[conflict: ${c.path} was changed by another tool while the command ran; kept that version${c.saved_as ? `, the command's version is in ${c.saved_as}` : ""}]`;
  }
  const u = r.unsynced;
  if (u) {
    const why = [u.reasons.includes("limit") ? "more files changed than one call writes back" : "", u.reasons.includes("deadline") ? "the write-back ran out of time" : ""].filter(Boolean).join(" and ");
    const first = u.paths.join(", ") + (u.count > u.paths.length ? ", ..." : "");
    text += `\n[not written back: ${u.count} changed file${u.count === 1 ? "" : "s"} (${first}): ${why}. These changes are NOT in the workspace (files the command created or changed are missing there, files it deleted are still there); its other effects did happen. To keep them, make fewer files per call (e.g. pack them: tar czf out.tgz dir) or run the step that makes them again.]`;
  }
  return text;
}

/**
 * A run stopped before it ended (its timeout, a kill) writes back nothing: the changes it had made, named, and
 * what to do. `how`: "timed out" or "was killed". "" when it had changed nothing. bash's foreground error says the
 * same in its message; this line is for the places that show a stopped run's result (bash_output, the OpenAI shell).
 */
export function discardedNote(r: Pick<RunResult, "discarded" | "discarded_count"> | undefined, how: "timed out" | "was killed", again: string): string {
  const paths = r?.discarded ?? [];
  if (!paths.length) return "";
  const n = discardedCount(r!);
  return `\n[not written back: the command ${how} before it ended, so ${n === 1 ? "its change" : `its ${n} changes`} (${firstNames(paths)}) ${n === 1 ? "is" : "are"} NOT in the workspace. ${again}]`;
}

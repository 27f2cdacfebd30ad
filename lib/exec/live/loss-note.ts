/**
 * What the model reads of a live sandbox that ended or was lost (docs/live-sessions.md, "What a caller
 * can rely on"): why, which processes went with it, and what became of the files.
 */
import type { LiveLoss } from "./types.js";

/** Why, as the next call is told (workspace_deleted never is: such an end keeps no loss, session-generation.ts finish). */
export const REASONS: Record<LiveLoss["reason"], string> = {
  idle: "it was idle past its idle timeout",
  max_life: "it reached its maximum life",
  ended: "you or the app you run in ended it on purpose (DELETE /v1/workspaces/{ws}/sessions/{session}/sandbox), not a fault",
  deleted: "it was ended by a restart of the shell (restart: true)",
  workspace_deleted: "its workspace was deleted",
  replaced: "it was replaced (by a newer sandbox, or because this call's API key, network access, web domain lists or secrets differ from those it was started with, or its workspace was deleted and made again since)",
  crashed: "it stopped answering (crashed or cut off)",
  shell_exited: "its shell exited",
  timed_out: "a command overran its timeout",
  limit: "it passed a limit",
  revoked: "the API key that started it was revoked or expired (or the OAuth issuer of the token that started it is no longer trusted)",
};

/** What the model reads of a lost sandbox: why, which processes are gone, and that files are safe. */
export function lossNote(loss: LiveLoss, interrupted = false): string {
  if (loss.other_access) return `[the session's live sandbox, started by another API key, ended: ${REASONS[loss.reason]}. What ran in it was that key's and is not shown here; this call's sandbox is its own. Files are safe: every call's changes were written back to the workspace when it answered.]\n`;
  const procs = loss.lost_processes;
  const count = loss.lost_total ?? procs.length;
  const shown = procs.slice(0, 5).map((p) => p.command.slice(0, 60)).join("; ");
  const listedAs = count ? `${count} process${count === 1 ? "" : "es"} (${shown}${count > 5 ? "; ..." : ""})` : "no background processes";
  // Its runner's own list at its end when it reported one; else its last status report's, said as such (some may have exited before its end).
  const gone = loss.reported ? listedAs : `${listedAs} as its runner last reported them (it did not report its end: ${count ? "some may have exited before it" : "any started since are not known"})`;
  return `[live sandbox ${loss.reason === "ended" ? "ended" : "lost"}: ${REASONS[loss.reason]}. Gone with it: its shell state (variables, functions, cwd beyond the saved one), ${gone}, /tmp and HOME. ${filesNote(loss)}${interrupted ? " The command was interrupted and ran again from the start in a new sandbox." : ""}]\n`;
}

/** The first 5 of a list of `count` paths (the state keeps a few more than shown: session-records.ts keptWritten). */
const listed = (paths: string[], count: number) => `${paths.slice(0, 5).join(", ")}${count > 5 ? `, ... (${count} in all)` : ""}`;

/** The files part of a loss: every answered call's changes were written back; what the sandbox's end did with what came after, conflicts named. */
function filesNote(loss: LiveLoss): string {
  const base = "Files are safe: every call's changes were written back to the workspace when it answered.";
  const w = loss.written;
  if (!w) return `${base}${loss.reason === "crashed" ? " What background processes changed after the last call may not have been written back: check those files." : ""}`;
  const parts: string[] = [];
  if (w.counts.changed) parts.push(`changed ${listed(w.changed, w.counts.changed)}`);
  if (w.counts.deleted) parts.push(`deleted ${listed(w.deleted, w.counts.deleted)}`);
  const end = parts.length ? ` At its end, what background processes did since was written back: ${parts.join("; ")}.` : "";
  const conflicts = w.counts.conflicts ? ` NOT written back, changed in the workspace meanwhile (the workspace's version was kept, the sandbox's saved under .toolshed/conflicts/): ${listed(w.conflicts, w.counts.conflicts)}.` : "";
  const refused = w.counts.not_written ? ` NOT written back at its end, so not in the workspace: ${listed(w.not_written ?? [], w.counts.not_written)}.${w.why ? ` ${w.why}` : ""}` : "";
  return `${base}${end}${conflicts}${refused}`;
}

/** A command's RunResult from its parts, one way for fresh runs (runner.ts) and live commands (live-session.ts). Node only. */
import { discardedOf } from "../../lib/exec/discarded.js";
import { UNSYNCED_SHOWN, type RunResult, type ShellState, type Skipped } from "../../lib/exec/types.js";
import type { SandboxExit } from "./sandbox-spec.js";
import type { OutputCollector } from "./output.js";
import type { SyncedIn } from "./sync-in.js";
import type { SyncedOut } from "./sync-out.js";

export interface ResultParts {
  runId: string;
  out: OutputCollector;
  /** The name of the saved full output (output-log.ts), when it was cut and could be saved. */
  outputFile: string | undefined;
  exit: SandboxExit;
  disk_mb: number;
  synced: SyncedIn;
  written: SyncedOut;
  /** The disk watcher stopped the command (then it was not `killed`). */
  diskExceeded: boolean;
  shell: { state: ShellState; notes: string[]; unchanged?: true } | null;
  cold: boolean;
  syncInMs: number;
  syncOutMs: number;
}

/**
 * The line the model reads when the kernel killed processes of the sandbox for passing its memory bound
 * (sandbox-cgroup.ts); null when it did not. Written to the command's stderr before its output is closed.
 */
export function memoryNote(memory: SandboxExit["memory"], live = false): string | null {
  if (!memory?.oomKills) return null;
  const n = memory.oomKills === 1 ? "1 of its processes" : `${memory.oomKills} of its processes`;
  const held = live ? " Files in /tmp and /dev/shm hold memory until they are deleted, across this session's commands." : "";
  return `[toolshed: the sandbox reached its memory limit (${memory.limitMb} MiB for all its processes together, files in /tmp and /dev/shm included): the kernel killed ${n} (SIGKILL: exit code 137, "Killed").${held} Use less memory at once: fewer parallel jobs (make -j2, fewer workers), smaller data in memory, large files in the workspace rather than /tmp.]\n`;
}

/** What a sync-out wrote back, refused or skipped, as the result's fields: one way for a command's own write-back and a live sandbox's background one (live-command.ts). */
export type WrittenFields = Pick<RunResult, "files_changed" | "files_created" | "files_deleted" | "conflicts" | "skipped"> & Required<Pick<RunResult, "dirs_created" | "dirs_deleted">> & Pick<RunResult, "links_changed" | "links_removed" | "modes_changed">;

export function writtenFields(so: SyncedOut): WrittenFields {
  const { wb, dirsOut } = so;
  return {
    files_changed: wb ? [...wb.created, ...wb.modified].sort() : [],
    files_created: wb?.created ?? [],
    files_deleted: wb?.deleted ?? [],
    dirs_created: dirsOut ? [...dirsOut.created.keys()].sort() : [],
    dirs_deleted: dirsOut?.deleted ?? [],
    ...(so.linksChanged.length ? { links_changed: so.linksChanged, links_removed: so.linksRemoved } : {}),
    ...(so.modesChanged.length ? { modes_changed: so.modesChanged } : {}),
    conflicts: [...(wb?.conflicts ?? []), ...(dirsOut?.conflicts ?? [])],
    skipped: [...so.after.skipped, ...(wb?.skipped ?? []), ...(dirsOut?.skipped ?? []), ...so.modeSkips],
  };
}

export function runResult(p: ResultParts): RunResult {
  const { out, exit, written: so } = p;
  const { rec, manifestFiles } = p.synced;
  const wb = so.wb;
  const fields = writtenFields(so);
  const skipped: Skipped[] = [...rec.skipped, ...fields.skipped];
  // Where the whole output is, for the note of a cut (null: it was cut, and the log could not be saved).
  const full = p.outputFile ?? (out.truncated ? null : undefined);
  const cut = out.merged.parts().cut;
  // Past the disk quota the run was stopped; past the memory bound the kernel killed processes of it (memoryNote).
  const limit = { ...(so.quotaHit ? { disk_mb: p.disk_mb } : {}), ...(exit.memory?.oomKills ? { memory_mb: exit.memory.limitMb } : {}) };
  return {
    run_id: p.runId,
    stdout: out.stdout.text(full),
    stderr: out.stderr.text(full),
    output: out.merged.text(full),
    ...(cut ? { output_cut: cut } : {}),
    exit_code: exit.exitCode,
    duration_ms: exit.durationMs,
    ...(exit.net ? { net_bytes_in: exit.net.bytesIn, net_bytes_out: exit.net.bytesOut } : {}),
    timed_out: exit.timedOut,
    killed: exit.killed && !p.diskExceeded,
    ...(Object.keys(limit).length ? { limit_exceeded: limit } : {}),
    truncated: out.truncated,
    ...(p.outputFile ? { output_file: p.outputFile } : {}),
    ...fields,
    skipped,
    ...discardedOf(so.finished ? [] : [...so.changes.map((c) => c.path), ...so.dirDelta.map((d) => `${d.path}/`)]),
    ...(p.shell ? { shell: p.shell } : {}),
    ...(wb?.unsynced.paths.length ? { unsynced: { count: wb.unsynced.paths.length, paths: wb.unsynced.paths.slice(0, UNSYNCED_SHOWN), reasons: wb.unsynced.reasons } } : {}),
    sync: {
      cache: p.cold ? "cold" : "warm",
      manifest_files: manifestFiles,
      downloaded_files: rec.downloaded_files,
      downloaded_bytes: rec.downloaded_bytes,
      uploaded_files: wb ? wb.created.length + wb.modified.length : 0,
      uploaded_bytes: wb?.uploaded_bytes ?? 0,
      deleted_files: wb?.deleted.length ?? 0,
      sync_in_ms: p.syncInMs,
      sync_out_ms: p.syncOutMs,
      ...(so.journaled ? { walk_dirs: { total: so.after.dirs.length + 1, vouched: so.after.vouched, walked: so.walked, compared: so.compared } } : {}),
      ...(rec.whole || rec.entries ? { reconciled: { entries: rec.entries, whole: rec.whole, ...(rec.carried ? { carried: rec.carried } : {}) } } : {}),
    },
  };
}

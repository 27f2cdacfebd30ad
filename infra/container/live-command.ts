/**
 * One command of a live sandbox (issue #29), in the order that keeps files the truth: write back
 * what background processes changed since the last command (sync-out.ts), sync in what storage
 * holds now (sync-in.ts: a tool's edit between calls is in the tree before the command runs), run
 * the command in the session's shell (live-shell.ts), then the usual walk, diff, write-back and
 * settle. Its result is a RunResult as a fresh run's. Node only.
 */
import { promises as fs } from "node:fs";
import { join } from "node:path";
import { ToolError } from "../../lib/shared/errors.js";
import { normalizePath } from "../../lib/layout/paths.js";
import type { ExecEvent, RunRequest, RunResult } from "../../lib/exec/types.js";
import type { LiveEndReason, LiveEnded } from "../../lib/sync/live-types.js";
import { refusedName } from "../../lib/exec/write-back-notes.js";
import { cutAtWord } from "../../lib/shared/text.js";
import type { RunRecordClient, SyncClient } from "../../lib/sync/types.js";
import { FOREGROUND_KILL_AFTER_MS } from "../../lib/sync/run-records.js";
import { conditionalManifest, type CarriedManifest, type ManifestResult } from "../../lib/sync/view.js";
import type { CarriedFile } from "../../lib/sync/carried-files.js";
import { watchDisk } from "./disk-quota.js";
import { OutputCollector } from "./output.js";
import { keepFullOutput } from "./output-log.js";
import { memoryNote, runResult, writtenFields } from "./run-result.js";
import { runIdOf, validateRequest, writeBackDeadline } from "./run-request.js";
import { MiB, type RunnerDeps } from "./runner.js";
import { shellQuote } from "./sandbox.js";
import { commandOnFirstLine, readShellState, restoreLines } from "./shell-state.js";
import { ensureCwd, leavesTree, slotBytes, syncIn } from "./sync-in.js";
import { syncOut, type SyncedOut } from "./sync-out.js";
import type { LiveShell } from "./live-shell.js";
import type { Slot } from "./tree.js";
import type { ChangeJournal } from "./change-journal.js";
import { watchKillFlag } from "./run-once.js";

/** What a live command runs in: fixed for the sandbox's life. */
export interface LiveContext {
  deps: RunnerDeps;
  /** The event that started the sandbox (its tenant, workspace, sync origin, network). */
  start: RunRequest;
  slot: Slot;
  shell: LiveShell;
  shellDir: string;
  /** What changed in the tree since the last walk (null: none could be kept; every walk is a full one). */
  journal: ChangeJournal | null;
  /** Set when a sync failed halfway: the tree is then not what the slot records (the sandbox ends, nothing more is written back). */
  unsure: boolean;
  /** The shell state the last command reported (JSON): a command that ends in the same one says so (RunResult.shell.unchanged), and the API saves nothing. */
  lastShell?: string;
  /** The notes the last command's shell state came with (JSON): told once, not again while they hold. */
  lastNotes?: string;
  /** Called as soon as the command's shell is done (before its sync out): the sandbox's status is read beside the sync out, not after it. */
  commandDone?: () => void;
  /** The live token's run record: a command's kill check (watchKillFlag), answered set once the sandbox's key is gone (lib/sync/starting-key.ts). */
  records?: RunRecordClient | undefined;
}

export interface LiveCommandOutcome {
  result: RunResult;
  /** Set when the sandbox ended during the command. */
  end: LiveEndReason | null;
}

/** Refuses a command the sandbox cannot run as asked (another workspace, another network setting, a background task). */
function checkCommand(req: RunRequest, start: RunRequest): void {
  const bad = (why: string) => new ToolError("INVALID_ARGUMENT", `This command cannot run in the session's live sandbox: ${why}`, { reason: "live_mismatch" });
  if (req.tenant !== start.tenant || req.workspace !== start.workspace) throw bad("it names another tenant or workspace.");
  if (new URL(req.sync.url).origin !== new URL(start.sync.url).origin) throw bad("its sync endpoint is another API's.");
  if ((req.network === true) !== (start.network === true)) throw bad(`the sandbox was started ${start.network ? "with" : "without"} network; end it and start a new one.`);
  if ((req as ExecEvent).task === true) throw bad("background tasks run in sandboxes of their own.");
}

/** The script the shell sources: the restored state (the sandbox's first command), the call's variables, its working directory, the command. */
function commandScript(req: RunRequest, cwd: string, first: boolean): string {
  const lines: string[] = [];
  if (first && req.shell) lines.push(...restoreLines(req.shell, cwd));
  for (const [k, v] of Object.entries(req.env ?? {})) lines.push(`export ${k}=${shellQuote(v)}`);
  if (cwd) lines.push(`cd -- "$__toolshed_root"/${shellQuote(cwd)}`);
  return commandOnFirstLine(lines, req.command);
}

/** What background processes changed since the last command, written back (their changes are no command's to discard). */
export async function writeBackBackground(ctx: LiveContext, sync: SyncClient, runId: string, limits = validateRequest(ctx.start)): Promise<SyncedOut> {
  const { slot } = ctx;
  return syncOut({
    slot, sync, owner: ctx.deps.owner, runId, limits, ran: true, diskExceeded: false, baseBytes: slotBytes(slot), cwdMade: new Set(),
    deadline: Date.now() + Math.max(10_000, limits.writeback_ms), manifestFiles: slot.view.size, journal: ctx.journal,
  });
}

/**
 * Folds a background write-back into the command's result: everything it wrote, refused or skipped
 * (run-result.ts writtenFields: files, empty directories, symlinks, execute bits, conflicts) is
 * reported as the command's own, and its bytes too (its sync's uploaded_bytes: the call's usage
 * record's bytes_written). Before (2026-12-02) its bytes were left out, and so were its directory
 * markers, links and execute bits: a background `mkdir -p` refused by files_per_workspace vanished
 * from the sandbox with no word to the model, and one that landed was not named.
 */
function withBackground(r: RunResult, bg: SyncedOut | null): RunResult {
  const wb = bg?.wb;
  if (!wb) return r;
  const b = writtenFields(bg);
  const sorted = (a: string[]) => [...new Set(a)].sort();
  const both = (k: "links_changed" | "links_removed" | "modes_changed") => (b[k] || r[k] ? { [k]: sorted([...(b[k] ?? []), ...(r[k] ?? [])]) } : {});
  return {
    ...r,
    sync: { ...r.sync, uploaded_files: r.sync.uploaded_files + wb.created.length + wb.modified.length, uploaded_bytes: r.sync.uploaded_bytes + wb.uploaded_bytes, deleted_files: r.sync.deleted_files + wb.deleted.length },
    files_changed: sorted([...b.files_changed, ...r.files_changed]),
    files_created: sorted([...b.files_created, ...r.files_created]),
    files_deleted: sorted([...b.files_deleted, ...r.files_deleted]),
    dirs_created: sorted([...b.dirs_created, ...(r.dirs_created ?? [])]),
    dirs_deleted: sorted([...b.dirs_deleted, ...(r.dirs_deleted ?? [])]),
    ...both("links_changed"),
    ...both("links_removed"),
    ...both("modes_changed"),
    conflicts: [...b.conflicts, ...r.conflicts],
    skipped: [...b.skipped, ...r.skipped],
  };
}

/**
 * What a sandbox's final write-back did, for its end report (LiveEnded.written, told to the session's
 * next call: lib/exec/live/loss-note.ts): files and empty directories (`dir/`) written or removed,
 * conflicts, and what was refused or could not be kept (`not_written`, with the first refusal's reason).
 * Before (2026-12-02) only files were reported: directories went unnamed, and what a quota refused
 * was lost with the sandbox while the next call read that files were safe.
 */
export function finalWritten(bg: SyncedOut): LiveEnded["written"] {
  if (!bg.wb) return undefined;
  const f = writtenFields(bg);
  const dir = (d: string) => `${d}/`;
  const refused = f.skipped.filter((s) => s.reason === "error");
  const why = refused[0]?.detail;
  return {
    changed: [...f.files_changed, ...f.dirs_created.map(dir)].sort(),
    deleted: [...f.files_deleted, ...f.dirs_deleted.map(dir)].sort(),
    conflicts: f.conflicts.map((c) => c.path),
    ...(f.skipped.length ? { not_written: f.skipped.map(refusedName).sort(), ...(why ? { why: cutAtWord(why, 600) } : {}) } : {}),
  };
}

/**
 * The shell's state, `unchanged` when it is the one the sandbox's previous command reported (then the
 * API saves nothing). Its notes are told once: a command that ends with the same notes as the one
 * before (still in /tmp, say) repeats none of them.
 */
function sameAsLast(ctx: LiveContext, read: Awaited<ReturnType<typeof readShellState>>): NonNullable<RunResult["shell"]> | null {
  if (!read) return null;
  const json = JSON.stringify(read.state);
  const unchanged = json === ctx.lastShell;
  ctx.lastShell = json;
  const notes = JSON.stringify(read.notes);
  const told = notes === ctx.lastNotes;
  ctx.lastNotes = notes;
  const shell = told ? { ...read, notes: [] } : read;
  return unchanged ? { ...shell, unchanged: true } : shell;
}

const ENDED_NOTE: Record<string, string> = {
  timed_out: "[toolshed: the command timed out; the session's live sandbox ended with it (its background processes are gone, its files were written back). The next command starts a new sandbox.]",
  crashed: "[toolshed: the session's live sandbox ended unexpectedly during this command (killed or crashed); its background processes are gone, its files were written back. The next command starts a new sandbox.]",
  limit: "[toolshed: the command passed the workspace's disk limit; the session's live sandbox ended (its background processes are gone). The next command starts a new sandbox.]",
  shell_exited: "[toolshed: the command exited the session's shell; the live sandbox ended (its background processes are gone, its files were written back). The next command starts a new sandbox.]",
  revoked: "[toolshed: the API key that started the session's live sandbox was revoked or has expired: the command was killed, nothing of it was written back, and the sandbox ended (its background processes are gone). Run it again with a valid key.]",
};

/**
 * A sandbox ended because its processes would not hold still for the runner's work on its tree
 * (LiveShell.still): before the command (it did not run), or after it (it ran, and its changes were
 * written back while nothing of the sandbox ran).
 */
const UNHELD_NOTE = (ran: boolean) =>
  `[toolshed: the session's live sandbox was ended ${ran ? "after this command" : "before this command ran (it did not run: run it again)"}: its processes did not all stop within 5 s for the runner's sync of the workspace, which it makes only while they are stopped (a process stuck in the kernel can cause it). Its background processes are gone, its files were written back. The next command starts a new sandbox.]`;

/** The result with the note after its output, as the command's own stderr would carry it. */
const withNote = (r: RunResult, note: string): RunResult => ({ ...r, stderr: `${r.stderr}${note}\n`, output: `${r.output}${r.output && !r.output.endsWith("\n") ? "\n" : ""}${note}\n` });

/**
 * What a command came with (lib/sync/live-types.ts LiveCommand): the manifest's answer (used unless
 * the background write-back changed the view) and the bytes of changed files (written where the
 * manifest lists their etag: lib/sync/carried-files.ts).
 */
export interface LiveCarried {
  manifest?: CarriedManifest | undefined;
  files?: ReadonlyMap<string, CarriedFile>;
}

/**
 * Runs one command. `first`: the sandbox's first (its request's shell state is restored);
 * `background`: whether processes of an earlier command may have changed files since. `carried`:
 * what the command came with.
 */
export async function runLiveCommand(ctx: LiveContext, seq: number, req: RunRequest, sync: SyncClient, first: boolean, background: boolean, carried: LiveCarried = {}): Promise<LiveCommandOutcome> {
  const limits = validateRequest(req);
  checkCommand(req, ctx.start);
  const { slot, deps, shell } = ctx;
  const cwd = normalizePath(req.cwd ?? "");
  const runId = runIdOf(req);
  const t0 = Date.now();
  const unsure = <T>(p: Promise<T>) => p.catch((e) => { ctx.unsure = true; throw e; });
  // The runner works on the tree only while the sandbox holds still (hold-still.ts): before the command when it has work
  // there (a background write-back, files to sync in, a working directory to make), and after it.
  const manifest = () => conditionalManifest(sync, slot.view, slot.modes?.etag ?? null, carried.manifest);
  const syncTree = async (listed: Promise<ManifestResult>) => ({ synced: await unsure(syncIn(slot, listed, sync, deps.owner, carried.files)), cwdMade: await ensureCwd(slot, cwd, deps.owner) });
  // With no background process only the answer changes the view: it is taken first, and a sync-in that leaves the tree as it is holds nothing.
  const early = background ? null : await unsure(manifest());
  let bg: SyncedOut | null = null;
  const { synced, cwdMade } = early && cwd === "" && leavesTree(slot, early)
    ? await syncTree(Promise.resolve(early))
    : await shell.still(async () => {
        if (background) bg = await unsure(writeBackBackground(ctx, sync, runId, limits));
        return syncTree(early ? Promise.resolve(early) : manifest());
      });
  const syncInMs = Date.now() - t0;
  const baseBytes = slotBytes(slot);
  const logPath = join(deps.workDir, "logs", `${runId}-${Date.now()}.log`);
  const out = new OutputCollector(limits.output_bytes, logPath);
  let overQuota = false;
  const disk = watchDisk(slot.tree, baseBytes, limits.disk_mb * MiB, () => {
    overQuota = true;
    void shell.kill();
  }, slot.files.size);
  // The sandbox's key revoked or expired while the command runs: killed within a foreground command's bound (its
  // kill check from 4 s on, and once more after it when it ran that long), nothing written back, the sandbox ended.
  const keyGone = new AbortController();
  keyGone.signal.addEventListener("abort", () => void shell.kill(), { once: true });
  const watch = ctx.records ? watchKillFlag(ctx.records, keyGone) : null;
  const ranFrom = Date.now();
  let exit;
  try {
    exit = await shell.run(seq, commandScript(req, cwd, first), req.stdin ?? "", req.timeout_ms, out);
  } finally {
    disk.stop();
    await watch?.stop();
  }
  if (ctx.records && !keyGone.signal.aborted && Date.now() - ranFrom >= FOREGROUND_KILL_AFTER_MS && (await ctx.records.killRequested().catch(() => false))) keyGone.abort();
  if (keyGone.signal.aborted) await shell.kill();
  ctx.commandDone?.();
  // Ended by the hold before the command: the shell was gone when it was sent (it did not run).
  const unheldBefore = shell.unheld;
  const end: LiveEndReason | null = exit.timedOut ? "timed_out" : overQuota || disk.exceeded ? "limit" : keyGone.signal.aborted ? "revoked" : unheldBefore ? "crashed" : exit.ended;
  if (end) out.err(Buffer.from(`${unheldBefore ? UNHELD_NOTE(false) : ENDED_NOTE[end]}\n`));
  const memory = shell.takeMemory();
  const oom = memoryNote(memory, true);
  if (oom) out.err(Buffer.from(oom));
  await out.close();
  const shellState = req.shell && !end ? sameAsLast(ctx, await readShellState(ctx.shellDir, req.shell.keep, "live")) : null;

  const t1 = Date.now();
  const killed = end === "crashed" || end === "limit" || end === "revoked";
  // Its network bytes: what the sandbox's proxy carried since the last command took its share (live-shell.ts, egress-shares.ts).
  const net = shell.net.take();
  const sandboxExit = { exitCode: exit.exitCode, timedOut: exit.timedOut, killed, durationMs: exit.durationMs, ...(net ? { net } : {}), ...(memory ? { memory } : {}) };
  const deadline = writeBackDeadline(t0, t1, req.timeout_ms, limits.writeback_ms);
  // A crash is not the command's doing: what it wrote stays (no acknowledged file is lost); a timeout, the disk limit or its key gone discards, as in a fresh run.
  const ran = !exit.timedOut && end !== "limit" && end !== "revoked";
  const written = await shell.still(() => unsure(syncOut({ slot, sync, owner: deps.owner, runId, limits, ran, diskExceeded: disk.exceeded, baseBytes, cwdMade, deadline, manifestFiles: synced.manifestFiles, journal: ctx.journal })));
  const outputFile = out.truncated ? await keepFullOutput(sync, runId, logPath) : undefined;
  if (out.hasLog) await fs.rm(logPath, { force: true });
  const made = runResult({ runId, out, outputFile, exit: sandboxExit, disk_mb: limits.disk_mb, synced, written, diskExceeded: disk.exceeded, shell: shellState, cold: slot.cold, syncInMs, syncOutMs: Date.now() - t1 });
  // Killed because the sandbox's key is gone: the call answers the key_gone refusal, not a finished command (takeRun).
  const result: RunResult = end === "revoked" ? { ...made, killed_by: "key_gone" } : made;
  slot.cold = false;
  // Ended by the hold after the command: told here, the sandbox's end with it.
  if (!end && shell.unheld) return { result: withNote(withBackground(result, bg), UNHELD_NOTE(true)), end: "crashed" };
  return { result: withBackground(result, bg), end };
}

/**
 * One run: materialize the workspace (warm slot: only changed files are fetched), run the
 * command in the sandbox, diff the tree, write back per file (see writeback.ts), settle
 * the slot back to what storage holds. The sync phases are sync-in.ts and sync-out.ts, shared
 * with live sessions (live-session.ts). Node only (never bundled for Workers).
 */
import { promises as fs } from "node:fs";
import { join } from "node:path";
import { ToolError } from "../../lib/shared/errors.js";
import { normalizePath } from "../../lib/layout/paths.js";
import { gitHomeFiles } from "../../lib/exec/git-identity.js";
import type { RunRequest, RunResult } from "../../lib/exec/types.js";
import type { ClaimRider, SyncClient } from "../../lib/sync/types.js";
import { OutputCollector } from "./output.js";
import { watchDisk } from "./disk-quota.js";
import { keepFullOutput } from "./output-log.js";
import { makeShellDir, readShellState, wrapCommand, type ShellDir } from "./shell-state.js";
import type { Sandbox } from "./sandbox.js";
import type { SandboxExit } from "./sandbox-spec.js";
import { conditionalManifest } from "../../lib/sync/view.js";
import type { Owner } from "./tree.js";
import type { TreeCache } from "./slot-cache.js";
import { stageTree } from "./stage.js";
import { ensureCwd, slotBytes, syncIn, type SyncedIn } from "./sync-in.js";
import { syncOut } from "./sync-out.js";
import { memoryNote, runResult } from "./run-result.js";
import { runIdOf, validateRequest, writeBackDeadline } from "./run-request.js";


export interface RunnerDeps {
  cache: TreeCache;
  sandbox: Sandbox;
  owner: Owner;
  /** Handler-private scratch (logs); never visible in the sandbox. */
  workDir: string;
  /** Where a run's tree is renamed for the run (stage.ts): same file system as the slots. */
  stageDir: string;
}

export interface RunHooks {
  signal?: AbortSignal;
  /** Receives the collector before the command starts (background tasks read output from it). */
  onStart?: (collector: OutputCollector) => void;
  /** The run's claim, for its manifest request to carry (riding-claim.ts). */
  claim?: ClaimRider;
  /** Whether the run is this invocation's (run-once.ts; sends the claim alone if nothing carried it): awaited before the command; false stops the run there. */
  claimed?: () => Promise<boolean>;
  /** Whether the run was killed after its command ended (its kill flag, looked at once more: run-once.ts): then nothing is written back. */
  killedBeforeWriteBack?: () => Promise<boolean>;
}

export const MiB = 1024 * 1024;

export async function runCommand(req: RunRequest, sync: SyncClient, deps: RunnerDeps, hooks: RunHooks = {}): Promise<RunResult> {
  const limits = validateRequest(req);
  const cwd = normalizePath(req.cwd ?? "");
  await deps.sandbox.check();
  const runId = runIdOf(req);
  // Keyed by what the API signed (handler.ts): tenant, workspace, and the endpoint that fills the slot.
  const slot = await deps.cache.acquire(req.tenant, req.workspace, new URL(req.sync.url).origin);
  let clean = false;
  try {
    const t0 = Date.now();
    // Storage is the source of truth: listed in full on every run, but only what differs from
    // the slot's view crosses the wire (sync-in.ts). The request goes out first; the sandbox is
    // set up while it is answered, and its command waits at the gate until the tree is ready.
    const listed = conditionalManifest(sync, slot.view, slot.modes?.etag ?? null, undefined, hooks.claim); // slot.view := storage; the run's claim carried along
    listed.catch(() => {}); // awaited below, unless staging fails first
    const logPath = join(deps.workDir, "logs", `${runId}-${Date.now()}.log`);
    const out = new OutputCollector(limits.output_bytes, logPath);
    const overQuota = new AbortController();
    // The tree is bound by path when the sandbox starts: it moves first, and is reconciled where it is bound.
    const home = slot.tree;
    let go!: (ready: boolean) => void;
    const gate = new Promise<boolean>((r) => (go = r));
    let disk: ReturnType<typeof watchDisk> | null = null;
    let shellDir: ShellDir | null = null;
    let exit: SandboxExit;
    let synced: SyncedIn;
    let cwdMade: Set<string>;
    let syncInMs: number;
    let tManifest = t0;
    let baseBytes = 0;
    // From here to the restore, whatever throws puts the tree back and leaves nothing in the staging directory.
    const staged = await stageTree(home, deps.stageDir);
    try {
      slot.tree = staged.path;
      // The session's shell: restored before the command, its end state saved in a scratch directory outside the tree.
      shellDir = req.shell ? await makeShellDir(deps.stageDir, deps.owner) : null;
      const command = req.shell && shellDir ? wrapCommand(req.command, req.shell, deps.sandbox.shellPath(shellDir.path), cwd) : req.command;
      const running = deps.sandbox.run({
        tree: staged.path, cwd, command, ...(shellDir ? { shellDir: shellDir.path } : {}), env: req.env ?? {}, home: gitHomeFiles(req.git), network: req.network === true, apiUrl: req.sync.url, limits, ...(req.egress_secrets ? { egressSecrets: req.egress_secrets } : {}), ...(req.egress_domains ? { egressDomains: req.egress_domains } : {}),
        timeoutMs: req.timeout_ms, onStdout: out.out, onStderr: out.err, gate,
        signal: hooks.signal ? AbortSignal.any([hooks.signal, overQuota.signal]) : overQuota.signal,
        ...(req.stdin !== undefined ? { stdin: req.stdin } : {}),
      });
      running.catch(() => {}); // awaited below, after the gate
      try {
        synced = await syncIn(slot, listed.finally(() => (tManifest = Date.now())), sync, deps.owner);
        if (hooks.claimed && !(await hooks.claimed())) {
          clean = true; // the slot is as reconcile left it
          throw new ToolError("CONFLICT", "Another attempt of this call claimed the run.");
        }
        cwdMade = await ensureCwd(slot, cwd, deps.owner);
        syncInMs = Date.now() - t0;
        baseBytes = slotBytes(slot);
        hooks.onStart?.(out);
        disk = watchDisk(staged.path, baseBytes, limits.disk_mb * MiB, () => overQuota.abort(), slot.files.size);
        await deps.cache.beforeCommand(); // exclusive mode: dropped trees are gone before the command starts
      } catch (e) {
        go(false); // the command never starts; the sandbox ends
        await running.catch(() => {});
        await out.close();
        if (out.hasLog) await fs.rm(logPath, { force: true });
        throw e;
      }
      go(true);
      exit = await running;
    } catch (e) {
      await shellDir?.drop(); // the sandbox has ended (or never started)
      throw e;
    } finally {
      disk?.stop();
      slot.tree = home;
      await staged.restore();
    }
    const oom = memoryNote(exit.memory);
    if (oom) out.err(Buffer.from(oom)); // the model reads why a process of it was killed
    await out.close();
    if (!exit.timedOut && !exit.killed && (await hooks.killedBeforeWriteBack?.())) exit = { ...exit, exitCode: null, killed: true };
    const shell = shellDir && req.shell && !exit.timedOut && !exit.killed ? await readShellState(shellDir.path, req.shell.keep).finally(shellDir.drop) : null;
    if (!shell) await shellDir?.drop();

    const t1 = Date.now();
    const deadline = writeBackDeadline(t0, t1, req.timeout_ms, limits.writeback_ms);
    const written = await syncOut({ slot, sync, owner: deps.owner, runId, limits, ran: !exit.timedOut && !exit.killed, diskExceeded: disk.exceeded, baseBytes, cwdMade, deadline, manifestFiles: synced.manifestFiles });
    const outputFile = out.truncated ? await keepFullOutput(sync, runId, logPath) : undefined;
    if (out.hasLog) await fs.rm(logPath, { force: true });
    clean = true;

    const result = runResult({ runId, out, outputFile, exit, disk_mb: limits.disk_mb, synced, written, diskExceeded: disk.exceeded, shell, cold: slot.cold, syncInMs, syncOutMs: Date.now() - t1 });
    // Benchmarks (bench/git-writeback.ts) read the sync timings here; the tools do not show them.
    if (process.env.TOOLSHED_LOG_SYNC_STATS) console.error(`sync-stats ${JSON.stringify({ run_id: runId, duration_ms: exit.durationMs, ...result.sync, manifest_ms: tManifest - t0, walk_ms: written.walkMs })}`);
    return result;
  } finally {
    await deps.cache.release(slot, clean);
  }
}

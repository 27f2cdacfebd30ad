/**
 * One run: materialize the workspace (warm slot: only changed files are fetched), run the
 * command in the sandbox, diff the tree, write back per file (see writeback.ts), settle
 * the slot back to what storage holds. Node only (never bundled for Workers).
 */
import { promises as fs } from "node:fs";
import { join } from "node:path";
import { ToolError } from "../../lib/shared/errors.js";
import { normalizePath } from "../../lib/layout/paths.js";
import { gitHomeFiles } from "../../lib/exec/git-identity.js";
import { UNSYNCED_SHOWN, type RunRequest, type RunResult, type Skipped } from "../../lib/exec/types.js";
import type { SyncClient } from "../../lib/sync/types.js";
import { OutputCollector } from "./output.js";
import { watchDisk } from "./disk-quota.js";
import { modesDelta, settleModes } from "./exec-bits.js";
import { dropLinks, linksDelta, makeLinks, runDelta, settleLinks, slotModes } from "./links.js";
import { keepFullOutput } from "./output-log.js";
import { makeShellDir, readShellState, wrapCommand } from "./shell-state.js";
import type { Sandbox } from "./sandbox.js";
import type { SandboxExit } from "./sandbox-spec.js";
import { conditionalManifest } from "../../lib/sync/view.js";
import { diff, type Change } from "./changes.js";
import { walk, type WalkResult } from "./walk.js";
import { pool, pruneSettled, type Owner, type ReconcileStats, type Slot } from "./tree.js";
import { reconcile } from "./reconcile.js";
import type { TreeCache } from "./slot-cache.js";
import { stageTree } from "./stage.js";
import { dirChanges, dirOutcome, reconcileDirs, settleDirs, splitManifest, writeBackDirs, type DirOutcome } from "./dirs.js";
import { writeBack, type WriteBackOutcome } from "./writeback.js";
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
  /** Whether the run is this invocation's (run-once.ts): awaited before the command; false stops the run there. */
  claimed?: Promise<boolean>;
}

const MiB = 1024 * 1024;

/** Makes the working directory; returns the directories it made (not the command's: they get no marker). */
async function ensureCwd(slot: Slot, cwd: string, owner: Owner): Promise<Set<string>> {
  const made = new Set<string>();
  let rel = "";
  for (const seg of cwd === "" ? [] : cwd.split("/")) {
    rel = rel ? `${rel}/${seg}` : seg;
    const abs = join(slot.tree, rel);
    const st = await fs.lstat(abs).catch(() => null);
    if (st?.isDirectory()) continue;
    if (st) throw new ToolError("NOT_A_DIRECTORY", `working_dir ${cwd}: ${rel} is a file.`, { path: cwd });
    await fs.mkdir(abs, { mode: 0o755 });
    if (owner) await fs.lchown(abs, owner.uid, owner.gid);
    made.add(rel);
  }
  return made;
}

/**
 * Puts the slot back to exactly what storage holds after the write-back, and its view of
 * storage with it (what was written, what was deleted). Any change ends Slot.synced: the next
 * run reconciles in full. Only the directories settle emptied are looked at (pruneSettled);
 * explicit directories (slot.dirs, after settleDirs) stay.
 */
async function settle(slot: Slot, after: WalkResult, changes: Change[], outcome: WriteBackOutcome | null): Promise<void> {
  const removed: string[] = [];
  if (changes.length) slot.synced = null;
  for (const c of changes) {
    const written = outcome?.written.get(c.path);
    if (written) {
      slot.files.set(c.path, written);
      slot.view.set({ path: c.path, etag: written.etag, size: written.size });
    } else {
      slot.files.delete(c.path);
      if (c.kind !== "deleted") removed.push(c.path);
    }
  }
  // Thousands after a cut write-back: side by side (an unlink can wait on the disk).
  await pool(16, removed, (p) => fs.rm(join(slot.tree, p), { force: true }));
  for (const p of outcome?.deleted ?? []) slot.view.delete(p);
  for (const s of after.skipped) {
    // A name that is not UTF-8 is reached through its bytes only: its shown path names nothing.
    await fs.rm(after.rawPaths.get(s.path) ?? join(slot.tree, s.path), { recursive: true, force: true });
    removed.push(s.path);
  }
  pruneSettled(slot.tree, after, removed, slot.dirs);
}

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
    // the slot's view crosses the wire, and an unchanged workspace on a synced slot needs no
    // reconcile at all (it would change nothing). The request goes out first; the sandbox is
    // set up while it is answered, and its command waits at the gate until the tree is ready.
    const listed = conditionalManifest(sync, slot.view, slot.modes?.etag ?? null); // slot.view := storage
    listed.catch(() => {}); // awaited below, unless staging fails first
    const logPath = join(deps.workDir, "logs", `${runId}-${Date.now()}.log`);
    const out = new OutputCollector(limits.output_bytes, logPath);
    const overQuota = new AbortController();
    // The tree is bound by path when the sandbox starts: it moves first, and is reconciled where it is bound.
    const home = slot.tree;
    const staged = await stageTree(home, deps.stageDir);
    slot.tree = staged.path;
    // The session's shell: restored before the command, its end state saved in a scratch directory outside the tree.
    const shellDir = req.shell ? await makeShellDir(deps.stageDir, deps.owner) : null;
    const command = req.shell && shellDir ? wrapCommand(req.command, req.shell, deps.sandbox.shellPath(shellDir.path), cwd) : req.command;
    let go!: (ready: boolean) => void;
    const gate = new Promise<boolean>((r) => (go = r));
    let disk: ReturnType<typeof watchDisk> | null = null;
    let exit: SandboxExit;
    let rec: ReconcileStats;
    let manifestFiles: number;
    let cwdMade: Set<string>;
    let syncInMs: number;
    let tManifest = t0;
    let baseBytes = 0;
    try {
      const running = deps.sandbox.run({
        tree: staged.path, cwd, command, ...(shellDir ? { shellDir: shellDir.path } : {}), env: req.env ?? {}, home: gitHomeFiles(req.git), network: req.network === true, apiUrl: req.sync.url, limits, ...(req.egress_secrets ? { egressSecrets: req.egress_secrets } : {}),
        timeoutMs: req.timeout_ms, onStdout: out.out, onStderr: out.err, gate,
        signal: hooks.signal ? AbortSignal.any([hooks.signal, overQuota.signal]) : overQuota.signal,
        ...(req.stdin !== undefined ? { stdin: req.stdin } : {}),
      });
      running.catch(() => {}); // awaited below, after the gate
      try {
        const manifest = await listed;
        tManifest = Date.now();
        manifestFiles = slot.view.size;
        const modes = manifest.modes; // null: this API keeps no execute bits; they are then left alone
        const modesChanged = modes !== "same" && (modes === null ? slot.modes !== null : modes.etag !== slot.modes?.etag);
        if (modes !== "same") slot.modes = modes && slotModes(modes);
        if (manifest.unchanged && slot.synced && !modesChanged) rec = { downloaded_files: 0, downloaded_bytes: 0, skipped: [...slot.synced.skipped], clean: true };
        else {
          slot.synced = null;
          // Files first, then explicit directories (markers: manifest entries ending in "/", infra/container/dirs.ts).
          const manifestParts = splitManifest(slot.view.values());
          await dropLinks(slot); // symlinks last: links.ts
          rec = await reconcile(slot, manifestParts.files, sync, deps.owner);
          const dirRec = await reconcileDirs(slot, manifestParts.dirs, deps.owner);
          const linkSkips = await makeLinks(slot, deps.owner);
          rec.skipped.push(...manifestParts.skipped, ...dirRec.skipped, ...linkSkips);
          rec.clean &&= dirRec.clean && linkSkips.length === 0;
          if (rec.clean) slot.synced = { skipped: [...rec.skipped] };
        }
        if (hooks.claimed && !(await hooks.claimed)) {
          clean = true; // the slot is as reconcile left it
          throw new ToolError("CONFLICT", "Another attempt of this call claimed the run.");
        }
        cwdMade = await ensureCwd(slot, cwd, deps.owner);
        syncInMs = Date.now() - t0;
        for (const f of slot.files.values()) baseBytes += f.size;
        hooks.onStart?.(out);
        disk = watchDisk(staged.path, baseBytes, limits.disk_mb * MiB, () => overQuota.abort());
        await deps.cache.beforeCommand(); // exclusive mode: dropped trees are gone before the command starts
      } catch (e) {
        go(false); // the command never starts; the sandbox ends
        await running.catch(() => {});
        await out.close();
        if (out.hasLog) await fs.rm(logPath, { force: true });
        await shellDir?.drop();
        throw e;
      }
      go(true);
      exit = await running;
    } finally {
      disk?.stop();
      slot.tree = home;
      await staged.restore();
    }
    await out.close();
    const shell = shellDir && req.shell && !exit.timedOut && !exit.killed ? await readShellState(shellDir.path, req.shell.keep).finally(shellDir.drop) : null;
    if (!shell) await shellDir?.drop();

    const t1 = Date.now();
    const after = await walk(slot.tree, slot.listings);
    const tWalk = Date.now();
    const changes = await diff(slot, after);
    let afterBytes = 0;
    for (const f of after.files.values()) afterBytes += f.size;
    // The sample may have missed a last burst: the exact figure decides too.
    const quotaHit = disk.exceeded || afterBytes - baseBytes > limits.disk_mb * MiB;
    const killed = exit.killed && !disk.exceeded;
    const finished = !exit.timedOut && !exit.killed && !quotaHit;
    // Directories by the rule of dirs.ts: markers removed before the files are written, made after.
    const dirDelta = dirChanges(slot.dirs, after, cwdMade);
    const dirPlan = dirOutcome(dirDelta, Math.max(0, limits.max_writeback_files - changes.length));
    const dirsOut: DirOutcome | null = finished ? dirPlan.outcome : null;
    if (dirsOut) await writeBackDirs(sync, dirPlan.accepted, "deleted", dirsOut);
    const deadline = writeBackDeadline(t0, t1, req.timeout_ms, limits.writeback_ms);
    const wb = finished ? await writeBack({ tree: slot.tree, changes, sync, runId, maxFiles: limits.max_writeback_files, deadline, workspaceFiles: manifestFiles }) : null;
    if (dirsOut) await writeBackDirs(sync, dirPlan.accepted, "created", dirsOut);

    const outputFile = out.truncated ? await keepFullOutput(sync, runId, logPath) : undefined;
    if (out.hasLog) await fs.rm(logPath, { force: true });
    settleDirs(slot, dirDelta, dirsOut);
    await settle(slot, after, changes, wb);
    const modeSkips: Skipped[] = [];
    let linksChanged: string[] = [];
    const delta = wb && runDelta(modesDelta(slot, after, changes, wb), linksDelta(slot, after));
    if (delta) {
      try {
        slot.modes = slotModes(await sync.updateModes(delta));
        linksChanged = Object.keys(delta.links ?? {}).sort();
      } catch (e) {
        const why = String((e as Error).message ?? e).slice(0, 200);
        for (const path of [...delta.add, ...delta.remove]) modeSkips.push({ path, reason: "error", detail: `execute bit not saved: ${why}` });
        for (const path of Object.keys(delta.links ?? {})) modeSkips.push({ path, reason: "error", detail: `symlink change not saved: ${why}` });
      }
    }
    settleModes(slot, after);
    modeSkips.push(...(await settleLinks(slot, after, deps.owner)));
    clean = true;

    const skipped: Skipped[] = [...rec.skipped, ...after.skipped, ...(wb?.skipped ?? []), ...(dirsOut?.skipped ?? []), ...modeSkips];
    // Where the whole output is, for the note of a cut (null: it was cut, and the log could not be saved).
    const full = outputFile ?? (out.truncated ? null : undefined);
    const cut = out.merged.parts().cut;
    const result: RunResult = {
      run_id: runId,
      stdout: out.stdout.text(full),
      stderr: out.stderr.text(full),
      output: out.merged.text(full),
      ...(cut ? { output_cut: cut } : {}),
      exit_code: exit.exitCode,
      duration_ms: exit.durationMs,
      timed_out: exit.timedOut,
      killed,
      ...(quotaHit ? { limit_exceeded: { disk_mb: limits.disk_mb } } : {}),
      truncated: out.truncated,
      ...(outputFile ? { output_file: outputFile } : {}),
      files_changed: wb ? [...wb.created, ...wb.modified].sort() : [],
      files_created: wb?.created ?? [],
      files_deleted: wb?.deleted ?? [],
      dirs_created: dirsOut ? [...dirsOut.created.keys()].sort() : [],
      dirs_deleted: dirsOut?.deleted ?? [],
      ...(linksChanged.length ? { links_changed: linksChanged } : {}),
      conflicts: [...(wb?.conflicts ?? []), ...(dirsOut?.conflicts ?? [])],
      skipped,
      discarded: finished ? [] : [...changes.map((c) => c.path), ...dirDelta.map((d) => `${d.path}/`)],
      ...(shell ? { shell } : {}),
      ...(wb?.unsynced.paths.length ? { unsynced: { count: wb.unsynced.paths.length, paths: wb.unsynced.paths.slice(0, UNSYNCED_SHOWN), reasons: wb.unsynced.reasons } } : {}),
      sync: {
        cache: slot.cold ? "cold" : "warm",
        manifest_files: manifestFiles,
        downloaded_files: rec.downloaded_files,
        downloaded_bytes: rec.downloaded_bytes,
        uploaded_files: wb ? wb.created.length + wb.modified.length : 0,
        uploaded_bytes: wb?.uploaded_bytes ?? 0,
        deleted_files: wb?.deleted.length ?? 0,
        sync_in_ms: syncInMs,
        sync_out_ms: Date.now() - t1,
      },
    };
    // Benchmarks (bench/git-writeback.ts) read the sync timings here; the tools do not show them.
    if (process.env.TOOLSHED_LOG_SYNC_STATS) console.error(`sync-stats ${JSON.stringify({ run_id: runId, duration_ms: exit.durationMs, ...result.sync, manifest_ms: tManifest - t0, walk_ms: tWalk - t1 })}`);
    return result;
  } finally {
    await deps.cache.release(slot, clean);
  }
}

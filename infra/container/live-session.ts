/**
 * A live sandbox's life (issue #29, DESIGN §6; protocol: lib/sync/live-types.ts). An invocation
 * whose request has `live` starts ONE sandbox (live-shell.ts) in a slot it holds for its whole life
 * (a fresh run of the same workspace meanwhile gets another slot), then polls its channel for the
 * session's commands: a command runs (live-command.ts) and its result is posted, as the next poll
 * when its status is what a poll would read (one request per command: pollsWithAnswer); `wait` polls
 * again; `end` ends. It ends by itself after `idle_ms` without a command ("idle"), past
 * `max_life_ms` ("max_life": the handover), when a command ends the sandbox (timed out, `exit`,
 * crash, disk limit), or when its channel is lost (after bounded retries: "crashed"). On any end:
 * the sandbox is killed (its processes listed as lost first), what its background processes
 * changed since the last command is written back, the slot is released, and `ended` is posted.
 * Node only.
 */
import { gitHomeFiles } from "../../lib/exec/git-identity.js";
import type { RunRequest, RunResult } from "../../lib/exec/types.js";
import type { LiveChannel } from "../../lib/sync/live-client.js";
import { boundedEnded, boundedStatus, lostOf, type LiveEnded, type LiveLost, type LiveEndReason, type LiveNext, type LiveResultPost, type LiveStatus } from "../../lib/sync/live-types.js";
import type { ExecResponse, RunRecordClient, SyncClient } from "../../lib/sync/types.js";
import type { ManifestQuery } from "../../lib/sync/manifest.js";
import { manifestAnswerOf } from "../../lib/sync/manifest-wire.js";
import { viewQuery, type CarriedManifest } from "../../lib/sync/view.js";
import { carriedFilesOf } from "../../lib/sync/carried-files.js";
import { viewMarks } from "./view-marks.js";
import { ChannelLost, retryingChannel, type RetryPolicy } from "./live-channel.js";
import { finalWritten, runLiveCommand, writeBackBackground, type LiveContext } from "./live-command.js";
import { LiveShell } from "./live-shell.js";
import { openJournal } from "./change-journal.js";
import { errorOf } from "./run-once.js";
import { runIdOf, validateRequest } from "./run-request.js";
import { MiB, type RunnerDeps } from "./runner.js";
import { makeShellDir } from "./shell-state.js";
import { watchDisk } from "./disk-quota.js";
import { slotBytes } from "./sync-in.js";
import { stageTree } from "./stage.js";

/** A background subshell of the live shell, as GET .../sandbox and a loss list it. */
export const SUBSHELL = "bash (a subshell of the session's shell)";

/** Time the sandbox may outlive `max_life_ms` for its final write-back before its own timeout kills it. */
const END_MARGIN_MS = 60_000;

export interface LiveOptions {
  channel: LiveChannel<RunRequest, RunResult>;
  /** The sync client of a request (its own token). */
  syncOf: (req: RunRequest) => SyncClient;
  /** The live token's run record: a command's kill check, set once the key that started the sandbox is gone (live-command.ts). Absent: not checked. */
  records?: RunRecordClient;
  /** The handler shutting down: the sandbox ends ("max_life": the session's next call starts a new one). */
  signal?: AbortSignal;
  retry?: RetryPolicy;
}

/** The manifest answer a command came with, for the view query its poll sent; undefined when none came or it is not one the runner can use (it then asks). */
function carriedOf(view: { query: ManifestQuery; version: number }, body: unknown): CarriedManifest | undefined {
  if (body === undefined) return undefined;
  try {
    const answer = manifestAnswerOf(body);
    return answer ? { ...view, answer } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a command's answer may be the runner's next poll (LiveResultPost.poll), its status then
 * the poll's: only when it is what a poll would read. It was read as the command ended, when a
 * process the command left running may not have exec'd yet (listed by its shell's command line
 * until the next poll, 20 s on); so when the command left a process that did not run at the poll
 * that brought it (by pid and command line), or a list is cut, the answer goes alone and the poll
 * reads the status anew after it.
 */
function pollsWithAnswer(polled: LiveStatus | null, after: LiveStatus): boolean {
  if (!polled || polled.processes_total !== undefined || after.processes_total !== undefined) return false;
  const ran = new Set(polled.processes.map((p) => `${p.pid} ${p.command}`));
  return after.processes.every((p) => ran.has(`${p.pid} ${p.command}`));
}

/** The sandbox's end: how it ended, and its last status. */
export async function runLive(start: RunRequest, deps: RunnerDeps, opts: LiveOptions): Promise<LiveEnded> {
  const spec = start.live!;
  const limits = validateRequest(start);
  const channel = retryingChannel(opts.channel, opts.retry);
  await deps.sandbox.check();
  const slot = await deps.cache.acquire(start.tenant, start.workspace, new URL(start.sync.url).origin);
  let clean = false;
  const home = slot.tree;
  const staged = await stageTree(home, deps.stageDir).catch(async (e) => {
    await deps.cache.release(slot, false);
    throw e;
  });
  slot.tree = staged.path; // the sandbox binds the tree by this path for its whole life
  const shellDir = await makeShellDir(deps.stageDir, deps.owner);
  const journal = openJournal(staged.path, deps.workDir);
  const startedAt = Date.now();
  let shell: LiveShell | null = null;
  let lastUsed = startedAt;
  let infra = new Set<number>();
  /** What those run: a process of the session running the same is a fork of the session shell (`( … ) &`, a loop or function sent to the background), shown as SUBSHELL, not by the loop's internal script. */
  let infraCommands = new Set<string>();
  let unsure = false;

  /** The processes last seen: what a sandbox that died by itself lost. */
  let seen: LiveStatus["processes"] = [];
  const status = async (): Promise<LiveStatus> => {
    const probe = shell?.alive ? shell.probe : null;
    const [procs, ports] = probe ? await Promise.all([probe.processes(), probe.ports()]) : [[], []];
    if (procs.length) seen = procs.filter((p) => !infra.has(p.pid!)).map((p) => ({ pid: p.pid!, command: infraCommands.has(p.command) ? SUBSHELL : p.command }));
    // Bounded (LIVE_LIST_MAX): the poll, the coordinator's state and GET .../sandbox stay small however many run.
    return boundedStatus({
      generation: spec.generation,
      started_at: startedAt,
      last_used_at: lastUsed,
      processes: procs.length ? seen : [],
      ports: procs.length ? ports : [],
      wall_ms: Date.now() - startedAt,
      ...(procs.length ? { cpu_ms: procs.reduce((a, p) => a + p.cpuMs, 0), rss_bytes: procs.reduce((a, p) => a + p.rssBytes, 0) } : {}),
    });
  };

  /** The last command's answer, until the API has it: posted with the next poll when it may (pollsWithAnswer), else alone, and always before the sandbox's end. */
  let answer: LiveResultPost<RunResult> | null = null;
  /** Posts the answer still to go alone (the API answers 204); false: the channel is lost. */
  const postAnswer = async (): Promise<boolean> => {
    const post = answer;
    answer = null;
    if (!post) return true;
    try {
      await channel.result(post);
      return true;
    } catch (e) {
      if (e instanceof ChannelLost) return false;
      throw e;
    }
  };

  let reason: LiveEndReason = "crashed";
  // The final write-back's: the live token lasts the sandbox's life (a command's expires with its call).
  const sync: SyncClient = opts.syncOf(start);
  const runId = runIdOf(start);
  try {
    await deps.cache.beforeCommand(); // the process sandbox: the trees of other workspaces are gone before the sandbox starts (it could read them)
    shell = await LiveShell.start(
      deps.sandbox,
      { tree: staged.path, shellDir: shellDir.path, env: start.env ?? {}, home: gitHomeFiles(start.git), network: start.network === true, apiUrl: start.sync.url, limits, ...(start.egress_secrets ? { egressSecrets: start.egress_secrets } : {}), ...(start.egress_domains ? { egressDomains: start.egress_domains } : {}), timeoutMs: spec.max_life_ms + END_MARGIN_MS },
      spec.max_life_ms + END_MARGIN_MS,
      deps.owner,
    );
    // What runs now is the sandbox's own (bwrap's init, the loop, an egress helper; the process sandbox's loop): never listed as the session's.
    const own = await shell.probe!.processes();
    infra = new Set(own.map((p) => p.pid!));
    infraCommands = new Set(own.map((p) => p.command));
    const ctx: LiveContext = { deps, start, slot, shell, shellDir: shellDir.path, journal, unsure: false, records: opts.records };
    const gone = new AbortController();
    void shell.exited.finally(() => gone.abort()).catch(() => {});
    let first = true;
    let background = false;
    /** The view's marks, made again only when its entries changed since (view-marks.ts). */
    const marks = viewMarks();
    /** The status the last poll carried: what ran before the command it brought (pollsWithAnswer). */
    let polled: LiveStatus | null = null;
    for (;;) {
      const idleAt = lastUsed + spec.idle_ms;
      const lifeAt = startedAt + spec.max_life_ms;
      const now = Date.now();
      // An end before the next poll: the answer still to go is posted alone, at the end (postAnswer).
      if (now >= lifeAt) { reason = "max_life"; break; }
      if (now >= idleAt) { reason = "idle"; break; }
      if (opts.signal?.aborted) { reason = "max_life"; break; }
      if (!shell.alive) { reason = "crashed"; break; }
      // The poll ends at the sandbox's own deadline, when it dies, or when the handler shuts down.
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(), Math.min(idleAt, lifeAt) - now);
      const stop = AbortSignal.any([deadline.signal, gone.signal, ...(opts.signal ? [opts.signal] : [])]);
      // While processes run between commands, the tree's disk limit is watched too: past it the sandbox ends ("limit"; what they wrote is discarded).
      const disk = background ? watchDisk(slot.tree, slotBytes(slot), limits.disk_mb * MiB, () => void shell?.kill(), slot.files.size) : null;
      let next: LiveNext<RunRequest> | null = null;
      // The poll carries the query of the slot's view: a command comes with its answer (no manifest request of its own),
      // and, on a tree that is its view's fixpoint, the marks of the view: with the bytes of the few small files it lacks.
      const view = await viewQuery(slot.view, slot.modes?.etag ?? null);
      const held = slot.synced ? marks.of(slot.view, view.query) : undefined;
      const manifest = held === undefined ? view.query : { ...view.query, held };
      try {
        // The last command's answer, when it may, is this poll (one request); an API that answers it 204 has recorded it: then the poll is one of its own.
        // Cut short (a deadline), it is still to go: sent again (the API takes an answer once, by its seq), with the next poll or alone at the end.
        if (answer) {
          next = await channel.result({ ...answer, poll: { manifest } }, stop);
          polled = answer.status;
          answer = null;
        }
        if (!next) next = await channel.next({ ...(polled = await status()), manifest }, stop);
      } catch (e) {
        if (e instanceof ChannelLost) { reason = "crashed"; break; }
        if (!stop.aborted) throw e;
        next = null; // a deadline: the checks above say which
      } finally {
        clearTimeout(timer);
        disk?.stop();
      }
      if (disk?.exceeded) { reason = "limit"; break; }
      if (!next || "wait" in next) continue;
      if ("end" in next) { reason = next.end; break; }
      const { seq, request } = next.command;
      let response: ExecResponse<RunResult>;
      let end: LiveEndReason | null = null;
      // The status the answer carries is read as soon as the command is done, beside its sync out (off the answer's path).
      let statusRead = null as Promise<LiveStatus> | null; // set by commandDone (a closure: not narrowed to null)
      ctx.commandDone = () => void (statusRead = status());
      try {
        const cmdSync = opts.syncOf(request);
        const outcome = await runLiveCommand(ctx, seq, request, cmdSync, first, background, { manifest: carriedOf(view, next.command.manifest), files: carriedFilesOf(next.command.files) });
        first = false;
        response = { ok: true, result: outcome.result };
        end = outcome.end;
      } catch (e) {
        response = errorOf(e) as ExecResponse<RunResult>;
        // A sync that failed halfway leaves the tree unlike what the slot records: the sandbox ends, nothing more is written back from it.
        if (!shell.alive || ctx.unsure) end = "crashed";
      }
      lastUsed = Date.now();
      const after = { ...(await (statusRead ?? status())), last_used_at: lastUsed, wall_ms: lastUsed - startedAt };
      background = after.processes.length > 0; // none left: nothing can change the tree before the next command
      answer = { generation: spec.generation, seq, response, status: after };
      if (ctx.unsure) unsure = true;
      if (!end && pollsWithAnswer(polled, after)) continue; // posted with the next poll
      if (!(await postAnswer())) { reason = "crashed"; break; }
      if (end) { reason = end; break; }
    }
  } catch (e) {
    reason = "crashed";
    if (!shell) {
      // The sandbox never started: nothing to write back; the API hears it at once rather than after LIVE_STALE_MS.
      journal?.close();
      await shellDir.drop();
      slot.tree = home;
      await staged.restore();
      await deps.cache.release(slot, true);
      const now = Date.now();
      await channel.ended({ generation: spec.generation, reason: "crashed", lost_processes: [], status: { generation: spec.generation, started_at: startedAt, last_used_at: startedAt, processes: [], ports: [], wall_ms: now - startedAt } }).catch(() => {});
      throw e;
    }
  }

  // The end: the answer still to go posted first (an end the API had before it would count the command lost and run it again),
  // the processes listed, the sandbox killed, its background changes written back.
  if (!(await postAnswer().catch(() => false))) reason = "crashed";
  const last = await status();
  const lost: LiveLost = shell.alive ? lostOf(last) : { lost_processes: seen }; // bounded with the end, below
  await shell.kill().catch(() => {});
  let written: LiveEnded["written"];
  /** The workspace bytes the final write-back wrote (its end's usage record's bytes_written). */
  let writtenBytes = 0;
  try {
    if (unsure) throw new Error("the tree is not what the slot records");
    // Its key revoked or expired: nothing more of the sandbox is written back (a command killed for it left its changes in the tree).
    if (reason === "revoked") throw new Error("the sandbox's key is gone");
    const bg = await writeBackBackground({ deps, start, slot, shell, shellDir: shellDir.path, journal, unsure }, sync, runId, limits);
    written = finalWritten(bg);
    writtenBytes = bg.wb?.uploaded_bytes ?? 0;
    clean = true;
  } catch {
    // The write-back failed (the API unreachable): the slot is wiped; storage keeps what it had.
  } finally {
    journal?.close();
    await shellDir.drop();
    slot.tree = home;
    await staged.restore().catch(() => {});
    await deps.cache.release(slot, clean);
  }
  const { processes_total: _p, ports_total: _q, ...lastCost } = last; // none run now
  // Its network bytes since the last command's share (its background processes'), for its end's usage record.
  const net = shell.net.take();
  const netRest = net ? { net_bytes_in: net.bytesIn, net_bytes_out: net.bytesOut } : {};
  const ended = boundedEnded({ generation: spec.generation, reason, ...lost, status: { ...lastCost, processes: [], ports: [], wall_ms: Date.now() - startedAt, ...netRest, ...(writtenBytes ? { bytes_written: writtenBytes } : {}) }, ...(written ? { written } : {}) });
  await channel.ended(ended).catch(() => {}); // the API takes a runner that stopped polling for lost (LIVE_STALE_MS)
  return ended;
}

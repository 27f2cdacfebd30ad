/**
 * What bash, run_code, bash_output and kill_shell share: the executor, the run request
 * (with its short-lived sync token), the tenant's guard rails, and the model's output text
 * (what a run's write-back did: write-back-notes.ts).
 * Bundles for Workers.
 */
import { ToolError } from "../shared/errors.js";
import { randomId } from "../shared/hash.js";
import type { ExecCall, ExecDeps } from "./call.js";
import { gitIdentityKey, parseGitIdentity, type GitIdentity } from "./git-identity.js";
import { checkCommand, DEFAULT_GUARD, mergeGuard, type GuardLists, type GuardVerdict } from "./guard.js";
import { RUN_MARGIN_MS } from "../sync/run-records.js";
import { quotaMessage, RunKilled } from "./runs.js";
import { firstNames } from "./write-back-notes.js";
import { keyQuotaClaim, mintSyncToken, workspaceClaims } from "../sync/token.js";
import type { Executor, RunRequest, RunResult } from "./types.js";
import { discardedCount } from "./discarded.js";
import { readTenantPolicy } from "./tenant-policy.js";
import type { WebDomains } from "../shared/web-domains.js";

/** Bytes of command output handed to the model, head and tail (the runner cuts the middle, on line boundaries). */
export const MAX_COMMAND_OUTPUT = 30_000;

export function executorOf(deps: Pick<ExecDeps, "executor">): Executor {
  if (!deps.executor) throw new ToolError("UNAVAILABLE", "Commands are not enabled on this server (no executor configured). Locally, start the runner (infra/container/local-server.ts) and set TOOLSHED_RUNNER_URL.");
  return deps.executor;
}

export async function runRequest(
  ctx: ExecCall,
  input: { command: string; timeoutMs: number; cwd?: string; env?: Record<string, string>; stdin?: string; background?: boolean },
): Promise<RunRequest> {
  const deps = ctx.deps;
  if (!deps.syncSecret || !deps.syncUrl) throw new ToolError("UNAVAILABLE", "Commands are not enabled on this server (syncSecret / syncUrl not configured).");
  const key = `run_${randomId(20)}`;
  // The write-back is journaled under this call's undo id (the sync server commits one record part per request).
  const undo = ctx.ws.undo;
  const u = undo ? { s: undo.session, c: undo.stamp, n: undo.tool } : undefined;
  // A background run is billed where its result is stored (the sync server), to this call's key: the token says so.
  // A streamed one (its caller listens for progress) there too, when its caller left before taking its result.
  const m = input.background ? { k: ctx.auth.key_id ?? "" } : ctx.progress ? { k: ctx.auth.key_id ?? "", s: 1 as const } : undefined;
  const network = ctx.auth.scopes.includes("network");
  const [token, git, domains] = await Promise.all([
    mintSyncToken(deps.syncSecret, { ...workspaceClaims(ctx.ws), r: key, ...(u ? { u } : {}), ...(m ? { m } : {}), ...keyQuotaClaim(ctx.auth) }, Math.ceil((input.timeoutMs + RUN_MARGIN_MS) / 1000), { keys: deps.hmacKeys }),
    gitIdentityFor(ctx),
    network ? egressDomainsFor(ctx) : undefined,
  ]);
  return {
    version: 1,
    idempotency_key: key,
    tenant: ctx.ws.tenant,
    workspace: ctx.ws.id,
    command: input.command,
    timeout_ms: input.timeoutMs,
    ...(input.cwd ? { cwd: input.cwd } : {}),
    ...(input.env ? { env: input.env } : {}),
    ...(input.stdin !== undefined ? { stdin: input.stdin } : {}),
    network,
    ...(domains ? { egress_domains: domains } : {}),
    git,
    sync: { url: deps.syncUrl, token },
    limits: { ...deps.runLimits, output_bytes: MAX_COMMAND_OUTPUT },
  };
}

/**
 * The tenant policy's web domain lists for a run with network (the egress proxy enforces them:
 * infra/container/egress-domains.ts), or undefined when it sets none. The approval gate read the
 * same policy for this call through the same cache (tenant-policy.ts).
 */
async function egressDomainsFor(ctx: ExecCall): Promise<WebDomains | undefined> {
  const web = (await readTenantPolicy(ctx.deps.kv, ctx.ws.tenant, ctx.deps.policies)).web;
  if (!web || (!web.allowed_domains && !web.blocked_domains?.length)) return undefined;
  return { ...(web.allowed_domains ? { allowed_domains: web.allowed_domains } : {}), ...(web.blocked_domains?.length ? { blocked_domains: web.blocked_domains } : {}) };
}

/** `read`, once per call: later asks in the same call (the approval gate's and the tool's) get the first answer. */
function oncePerCall<T>(read: (ctx: ExecCall) => Promise<T>): (ctx: ExecCall) => Promise<T> {
  const answers = new WeakMap<ExecCall, Promise<T>>();
  return (ctx) => {
    let a = answers.get(ctx);
    if (!a) {
      a = read(ctx);
      answers.set(ctx, a);
    }
    return a;
  };
}

/**
 * A tenant setting in KV (git identity, guard rails) through the isolate's cache of tenant settings
 * (deps.policies, 5 s, as the tenant policy: lib/shared/isolate-cache.ts), keyed by its KV key. The
 * operator sets these in KV directly; a change reaches an isolate within those 5 s on top of KV's own
 * propagation (up to about 60 s).
 */
function tenantSetting(ctx: ExecCall, key: string): Promise<string | null> {
  const load = () => ctx.deps.kv.get(key);
  return ctx.deps.policies ? (ctx.deps.policies.get(key, load) as Promise<string | null>) : load();
}

/** The git identity of the tenant's commits (KV, lib/exec/git-identity.ts), read once per call. */
const gitIdentityFor = oncePerCall((ctx): Promise<GitIdentity> => tenantSetting(ctx, gitIdentityKey(ctx.ws.tenant)).then(parseGitIdentity));

/**
 * A command tool's `startReads` (lib/contract/tool.ts): its git identity, and its guard rails when it
 * checks the command (`guard`), read beside the approval gate's reads. A failed read fails the
 * tool when it asks for it, as before; unasked (a held call) it is dropped quietly.
 */
export const commandReads =
  (guard: boolean) =>
  (ctx: ExecCall): void => {
    if (guard) guardFor(ctx).catch(() => {});
    gitIdentityFor(ctx).catch(() => {});
  };

/** The tenant's guard rails: KV `guard/<tenant>` = {blocked?, caution?, replace?}, else the defaults (read once per call: the gate and bash both ask). */
export const guardFor = oncePerCall(readGuard);

const verdicts = new WeakMap<ExecCall, { command: string; verdict: Promise<GuardVerdict> }>();

/**
 * The guard rails' verdict on the call's command, checked once per call: the approval gate asks it
 * (a caution rule holds the call: lib/run/pending/destructive.ts) and bash asks it again (a blocked rule
 * refuses it); the second ask gets the first answer, so each pattern runs once a call. Another command
 * in the same call (none today) is checked afresh.
 */
export function guardVerdict(ctx: ExecCall, command: string): Promise<GuardVerdict> {
  const known = verdicts.get(ctx);
  if (known?.command === command) return known.verdict;
  const verdict = guardFor(ctx).then((lists) => checkCommand(command, lists));
  verdicts.set(ctx, { command, verdict });
  return verdict;
}

async function readGuard(ctx: ExecCall): Promise<GuardLists> {
  const raw = await tenantSetting(ctx, `guard/${ctx.ws.tenant}`);
  if (!raw) return DEFAULT_GUARD;
  try {
    return mergeGuard(JSON.parse(raw));
  } catch {
    return DEFAULT_GUARD; // a broken config must not disable the defaults
  }
}

/**
 * The model's text: the merged output as the runner cut it (once, on line boundaries, with a
 * note of what the real output lost and where the full output is: lib/shared/output-cut.ts; it is
 * never cut again here), the exit code appended when non-zero.
 */
export function commandOutput(r: Pick<RunResult, "output" | "exit_code" | "truncated">): { text: string; truncated: boolean } {
  let text = r.output;
  if (r.exit_code !== null && r.exit_code !== 0) text += `${text && !text.endsWith("\n") ? "\n" : ""}[exit code ${r.exit_code}]`;
  return { text: text === "" ? "(no output)" : text, truncated: r.truncated };
}

/**
 * The undo id of a finished run's write-back (the call's own: runRequest put it in the sync token),
 * when the run changed files, symlinks, execute bits or explicit directories; executeTool lifts it to the envelope's call_id.
 */
export function runCallId(callId: string | undefined, r: Pick<RunResult, "files_changed" | "files_deleted" | "dirs_created" | "dirs_deleted" | "links_changed" | "modes_changed" | "conflicts">): { call_id?: string } {
  if (!callId) return {};
  const changed = r.files_changed.length > 0 || r.files_deleted.length > 0 || (r.links_changed?.length ?? 0) > 0 || (r.modes_changed?.length ?? 0) > 0 || (r.dirs_created?.length ?? 0) > 0 || (r.dirs_deleted?.length ?? 0) > 0 || r.conflicts.some((c) => c.saved_as);
  return changed ? { call_id: callId } : {};
}

/** The `data` of a finished command. */
export function commandData(r: RunResult) {
  return {
    stdout: r.stdout,
    stderr: r.stderr,
    exit_code: r.exit_code,
    duration_ms: r.duration_ms,
    truncated: r.truncated,
    ...(r.output_file ? { output_file: r.output_file } : {}),
    ...(r.output_cut ? { output_cut: r.output_cut } : {}),
    files_changed: r.files_changed,
    files_deleted: r.files_deleted,
    ...(r.dirs_created?.length ? { dirs_created: r.dirs_created } : {}),
    ...(r.dirs_deleted?.length ? { dirs_deleted: r.dirs_deleted } : {}),
    ...(r.links_changed?.length ? { links_changed: r.links_changed } : {}),
    ...(r.modes_changed?.length ? { modes_changed: r.modes_changed } : {}),
    conflicts: r.conflicts,
    ...(r.unsynced ? { unsynced: r.unsynced } : {}),
    ...(r.skipped.length ? { skipped: r.skipped } : {}),
  };
}

/**
 * Why a finished run was stopped by a limit, for the model; null when it was not. The message ends
 * with the output so far (already cut like a finished command's): the message is all a model reads of
 * an error through MCP and the provider doors, where details.output never reaches it.
 */
function limitMessage(r: RunResult, seconds: number): { code: "TIMEOUT" | "QUOTA_EXCEEDED"; message: string } | null {
  // What it changed and lost, named in the message the model reads (data.discarded is the app's).
  const n = discardedCount(r);
  const lost = n ? `Not in the workspace${n > 5 ? ` (${n} changes)` : ""}: ${firstNames(r.discarded, n)}. ` : "";
  const soFar = `${lost}Its output so far:\n${commandOutput(r).text}`;
  if (r.timed_out)
    return { code: "TIMEOUT", message: `The command was stopped after ${seconds} s; its file changes were not written back. Use a larger timeout (max 600) or run_in_background: true. ${soFar}` };
  // The memory bound (limit_exceeded.memory_mb) stops no run: the kernel killed processes of it, and its output says so.
  if (r.limit_exceeded?.disk_mb !== undefined) return { code: "QUOTA_EXCEEDED", message: `${quotaMessage(r.limit_exceeded.disk_mb)} ${soFar}` };
  return null;
}

/**
 * A foreground run's result, as the tool that ran it takes it (bash, run_code; fresh or live): the
 * workspace bytes its sandbox fetched and wrote back and the sandbox's wall time are the call's (its usage
 * record's bytes_read, bytes_written and sandbox_ms: the sandbox's own sync requests bill no one), then a
 * run stopped by its timeout or its disk quota is the tool's error, and one killed because its key is gone
 * (a live sandbox's command: killed_by) throws RunKilled (still billed its sandbox time).
 */
export function takeRun(ws: { bytesRead: number; bytesWritten: number; sandboxMs?: number | undefined; netBytesIn: number; netBytesOut: number }, r: RunResult, seconds: number): void {
  const bytes = runStorageBytes(r);
  ws.bytesRead += bytes.bytes_read;
  ws.bytesWritten += bytes.bytes_written;
  // What the command exchanged with the web through its egress proxy, however it ended.
  ws.netBytesIn += r.net_bytes_in ?? 0;
  ws.netBytesOut += r.net_bytes_out ?? 0;
  // Billed however the run ended: a command stopped by its timeout or disk limit used the sandbox as long as one that answered.
  ws.sandboxMs = (ws.sandboxMs ?? 0) + Math.max(0, r.duration_ms ?? 0);
  // Killed because the key that started its (live) sandbox is gone: the call's key watch answers the key_gone refusal (lib/run/key-watch.ts).
  if (r.killed_by === "key_gone") throw new RunKilled();
  const stopped = stoppedError(r, seconds);
  if (stopped) throw stopped;
}

/**
 * The workspace bytes a run's sandbox fetched (bytes_read) and wrote back (bytes_written), as its result
 * reports them (RunResult.sync): the one reading of them, for a foreground run's call (takeRun) and a
 * background run's own record (lib/run/metering/detached-work.ts). 0 where the result has none (a run
 * stopped before its write-back, the runner's error).
 */
export function runStorageBytes(r: Partial<RunResult>): { bytes_read: number; bytes_written: number } {
  const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.round(v) : 0);
  return { bytes_read: n(r.sync?.downloaded_bytes), bytes_written: n(r.sync?.uploaded_bytes) };
}

/** A run stopped by its timeout or a limit, as an error that still carries the output so far; null otherwise. */
export function stoppedError(r: RunResult, seconds: number): ToolError | null {
  const why = limitMessage(r, seconds);
  if (!why) return null;
  return new ToolError(why.code, why.message, {
    output: commandOutput(r).text, stdout: r.stdout, stderr: r.stderr, duration_ms: r.duration_ms, discarded: r.discarded, ...(r.discarded_count !== undefined ? { discarded_count: r.discarded_count } : {}), ...(r.output_file ? { output_file: r.output_file } : {}),
  });
}

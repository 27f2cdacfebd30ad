/**
 * Live sessions (issue #29, DESIGN §6): the one runner protocol of a sandbox that outlives its
 * call. The container function cannot be called into while it runs, so a live runner is started
 * by an asynchronous invocation (a RunRequest with `live`, no command of its own) and then takes
 * its session's commands from the API by long poll over the sync channel, the way CI runners take
 * jobs, until its idle timeout or its maximum life; then it ends (files written back) and the
 * session's next call starts a new one. Locally and on Lambda alike.
 *
 * Routes (runner → API), authenticated by the live runner's sync token (its claims carry `l`, the
 * generation below; a token without `l` is refused on them, and a live token reaches only its own
 * session):
 *   POST /v1/sync/live/next    body LivePoll         → LiveNext   (long poll, at most LIVE_POLL_MS)
 *   POST /v1/sync/live/result  body LiveResultPost   → 204        (the answer of one command)
 *                              with `poll`           → LiveNext   (the answer, and the runner's next poll: held as `next` is)
 *   POST /v1/sync/live/ended   body LiveEnded        → 204        (the sandbox is gone; its last word)
 * A command's own sync operations (manifest, fetch, write-back, run record) use the command's own
 * token (LiveCommand.request.sync), minted per call as for a fresh run (undo journal claims included).
 * The conditional manifest usually needs no request of its own: the poll carries the runner's query
 * (LivePoll.manifest) and the command comes with its answer (LiveCommand.manifest), listed after the
 * command was handed over. The runner asks itself (POST /v1/sync/manifest) when none came, or when its
 * view changed since the query (a write-back of background changes before the command).
 *
 * Payloads are plain JSON; this layer does not look inside a command's request or result (they are
 * lib/exec's RunRequest and RunResult), hence the type parameters. Bundles for Workers.
 */
import type { ManifestQuery } from "./manifest.js";
import type { ManifestAnswerBody } from "./manifest-wire.js";

/** Longest a `next` poll is held open before it answers `{wait: true}` (the runner polls again). */
export const LIVE_POLL_MS = 20_000;
/** A live runner that has not polled for this long is taken for lost (crashed, frozen, cut off). */
export const LIVE_STALE_MS = LIVE_POLL_MS + 15_000;
/** Default idle timeout: a live sandbox with no command for this long ends. */
export const LIVE_IDLE_MS_DEFAULT = 5 * 60_000;
/** Upper bound of a configured idle timeout (Lambda's invocation limit is 15 min). */
export const LIVE_IDLE_MS_MAX = 14 * 60_000;
/** Longest life of one live runner (one invocation), less a margin for the final write-back. */
export const LIVE_MAX_LIFE_MS = 14 * 60_000;

/** RunRequest.live: this invocation starts a live sandbox for a session. */
export interface LiveSpec {
  /** One live runner of the session: a new one per start (handover, loss), so a stale runner is told apart. */
  generation: string;
  /** End after this long without a command. */
  idle_ms: number;
  /** End (hand over) after this long in all, whatever happens. */
  max_life_ms: number;
}

/**
 * A status or an end lists at most this many processes and ports (the lowest pids and ports first);
 * `processes_total`, `ports_total` and `lost_total` then count them all. A poll, the coordinator's
 * state (a DynamoDB item holds 350 KB) and GET .../sandbox stay small whatever the sandbox's process
 * limit (up to 4,096) lets run.
 */
export const LIVE_LIST_MAX = 64;
/** A process's command line, as a status lists it, is cut to this many characters. */
export const LIVE_COMMAND_MAX = 200;

export type LiveProcess = { pid: number; command: string };

/** Processes a sandbox's end loses: LIVE_LIST_MAX at most, and `lost_total` when more were running (LiveEnded, and the API's LiveLoss and LiveEnd). */
export interface LiveLost {
  lost_processes: LiveProcess[];
  /** How many were lost, when more than `lost_processes` lists. */
  lost_total?: number;
}

/** What the runner reports with every poll (GET .../sandbox shows it). */
export interface LiveStatus {
  generation: string;
  started_at: number;
  /** When the last command ended (or the sandbox started, before any). */
  last_used_at: number;
  /** Processes of the sandbox besides its session shell (pid as seen inside, command line cut to LIVE_COMMAND_MAX chars), LIVE_LIST_MAX at most. */
  processes: LiveProcess[];
  /** How many processes run, when more than `processes` lists. */
  processes_total?: number;
  /** TCP ports listening on the sandbox's loopback, LIVE_LIST_MAX at most. */
  ports: number[];
  /** How many ports listen, when more than `ports` lists. */
  ports_total?: number;
  /** Wall-clock ms the sandbox has existed so far. */
  wall_ms: number;
  /** CPU ms of the sandbox's processes so far, when the runner can tell. */
  cpu_ms?: number;
  /** Resident memory of the sandbox's processes, bytes, when the runner can tell. */
  rss_bytes?: number;
  /**
   * In its end's status only (LiveEnded), with network: what its egress proxy carried since the last
   * command took its share (each command's own are in its call's record: RunResult.net_bytes_in).
   */
  net_bytes_in?: number;
  net_bytes_out?: number;
  /**
   * In its end's status only (LiveEnded): the workspace bytes its final write-back wrote (what its
   * background processes changed since the last command; each command's own, and what background
   * processes wrote before it, are in its call's record: RunResult.sync.uploaded_bytes).
   */
  bytes_written?: number;
}

/**
 * The conditional manifest query a poll carries (lib/sync/manifest.ts), with `held`: the marks of
 * the view's entries (lib/sync/carried-files.ts), sent when the runner's tree is its view's
 * fixpoint; a command then comes with the bytes of the few small files the view lacks. Inside the
 * query, so that an API that predates it drops it with the query's unknown fields.
 */
export type LiveManifestQuery = ManifestQuery & { held?: string };

/** A poll: the runner's status, and the conditional manifest query of its view as it stands. */
export interface LivePoll extends LiveStatus {
  manifest?: LiveManifestQuery;
}

/** One command for the live sandbox: the call's RunRequest (command, cwd, timeout, env, stdin, shell, its own sync token). */
export interface LiveCommand<Req = unknown> {
  /** Per generation, from 1: a result names the command it answers. */
  seq: number;
  request: Req;
  /**
   * The answer to the poll's manifest query (LivePoll.manifest), in the form POST /v1/sync/manifest
   * answers (lib/sync/manifest-wire.ts), listed after the command was handed over. Absent: the poll
   * sent none, or the API could not answer it here; the runner asks itself.
   */
  manifest?: ManifestAnswerBody;
  /**
   * With `manifest`, when the poll's query carried `held`: the files of the answer the view lacks,
   * when they are few and small (lib/sync/carried-files.ts: CARRY_MAX_FILES, CARRY_MAX_BYTES),
   * each read at exactly the listed version, as [path, etag, base64 of the bytes]. The runner writes
   * one only where the manifest lists that etag, and fetches the rest as before.
   */
  files?: [string, string, string][];
}

/** The answer to a poll. */
export type LiveNext<Req = unknown> =
  | { command: LiveCommand<Req> }
  /** Nothing to do yet: poll again. */
  | { wait: true }
  /** The session's sandbox is to end now (DELETE .../sandbox, a newer generation, the coordinator lost it). */
  | { end: LiveEndReason };

/**
 * `ended`: ended on request (DELETE .../sandbox); `deleted`: a restart of the shell (bash restart: true);
 * `workspace_deleted`: its workspace was deleted (DELETE /v1/workspaces/{ws} ends it at once,
 * lib/exec/workspace-gone.ts; an idle poll's end that finds the workspace gone, lib/sync/live-server.ts);
 * `revoked`: the API key that started the sandbox was revoked or expired (checked at its polls).
 */
export type LiveEndReason = "idle" | "max_life" | "ended" | "deleted" | "workspace_deleted" | "replaced" | "crashed" | "shell_exited" | "timed_out" | "limit" | "revoked";

export interface LiveResultPost<Res = unknown> {
  generation: string;
  seq: number;
  /** The command's RunResult, or the error that stopped it (as the runner's ExecResponse carries it). */
  response: { ok: true; result: Res } | { ok: false; error: { code: string; message: string; details?: Record<string, unknown> } };
  status: LiveStatus;
  /**
   * Set: this post is also the runner's next poll, its status `status` (LivePoll less the status):
   * the API records the answer first, then serves the poll exactly as POST .../next would (the key's
   * check, held up to LIVE_POLL_MS, a command's manifest answer) and answers its LiveNext, one
   * request per command where there were two (the answer and the poll one step of the coordinator:
   * LiveHub.resultThenNext). An API that predates it ignores it and answers 204:
   * the runner then polls. The runner sets it only when `status` is what a poll would read
   * (infra/container/live-session.ts, `pollsWithAnswer`).
   */
  poll?: { manifest?: LiveManifestQuery };
}

/** The live runner's last word: why it ended, what was lost, what it cost. Files are never lost: they were written back. */
export interface LiveEnded extends LiveLost {
  generation: string;
  reason: LiveEndReason;
  status: LiveStatus;
  /**
   * (Optional, added by the runner side.) What the final write-back of background changes since the
   * last command did: paths written or deleted, and paths that conflicted with a change made in
   * storage meanwhile (storage's version kept, as today's write-back conflicts). Empty directories
   * made or removed are in `changed` and `deleted` as `dir/`. `not_written`: what was refused (a quota:
   * `why` says which), each path named with what it was (`d/ (empty directory)`); absent when none.
   */
  written?: { changed: string[]; deleted: string[]; conflicts: string[]; not_written?: string[]; why?: string };
}

/** Whether the key a live sandbox was started with still stands (not revoked, not expired): asked at its polls. */
export type KeyAlive = (tenant: string, keyId: string) => Promise<boolean>;

/**
 * The API's side of the channel, as the sync server sees it (implemented by lib/exec/live: a Durable
 * Object per session on Workers, memory in one Node process). `session` is the one the token names.
 */
export interface LiveHub {
  next(session: LiveSessionRef, status: LiveStatus, signal?: AbortSignal): Promise<LiveNext>;
  result(session: LiveSessionRef, post: LiveResultPost): Promise<void>;
  /**
   * A result that carries `poll` (LiveResultPost.poll): the answer recorded, then the runner's next
   * poll (its status the answer's) served as next serves one, in one step of the coordinator (one
   * write of a DynamoDB item where result and next were two).
   */
  resultThenNext(session: LiveSessionRef, post: LiveResultPost, signal?: AbortSignal): Promise<LiveNext>;
  /** `workspaceHere`: whether the token's workspace is still there (read only for an end its coordinator no longer holds). */
  ended(session: LiveSessionRef, ended: LiveEnded, workspaceHere?: () => Promise<boolean>): Promise<void>;
}

/** Which session a live token is for: from its verified claims only. */
export interface LiveSessionRef {
  tenant: string;
  workspace: string;
  session: string;
  generation: string;
  /** The API key that started the sandbox (the token's `l.k` claim), when it names one: the key its final write-back's record bills. */
  key_id?: string;
}

/** A list cut to LIVE_LIST_MAX, lowest first, with its whole count when cut (`total`: a count already known, as a list cut before). */
export function boundedList<T>(list: readonly T[], key: (t: T) => number, total = list.length): { list: T[]; total?: number } {
  const count = Math.max(total, list.length);
  const kept = list.length > LIVE_LIST_MAX ? [...list].sort((a, b) => key(a) - key(b)).slice(0, LIVE_LIST_MAX) : [...list];
  return count > kept.length ? { list: kept, total: count } : { list: kept };
}

/** Processes as a status or an end lists them: LIVE_LIST_MAX at most, each command cut to LIVE_COMMAND_MAX. */
function boundedProcesses(list: readonly LiveProcess[], total?: number): { list: LiveProcess[]; total?: number } {
  const b = boundedList(list, (p) => p.pid, total);
  return { ...b, list: b.list.map((p) => ({ pid: p.pid, command: String(p.command).slice(0, LIVE_COMMAND_MAX) })) };
}

/** `s` with its lists bounded (what the runner sends, and all the API keeps of what it is sent). */
export function boundedStatus<S extends LiveStatus>(s: S): S {
  const { processes_total: _p, ports_total: _q, ...rest } = s;
  const procs = boundedProcesses(s.processes, s.processes_total);
  const ports = boundedList(s.ports, (n) => n, s.ports_total);
  return { ...rest, processes: procs.list, ...(procs.total !== undefined ? { processes_total: procs.total } : {}), ports: ports.list, ...(ports.total !== undefined ? { ports_total: ports.total } : {}) } as S;
}

/** `e` with its lost processes and its status bounded. */
export function boundedEnded(e: LiveEnded): LiveEnded {
  const { lost_total: _l, ...rest } = e;
  const lost = boundedProcesses(e.lost_processes, e.lost_total);
  return { ...rest, lost_processes: lost.list, ...(lost.total !== undefined ? { lost_total: lost.total } : {}), status: boundedStatus(e.status) };
}

/** The processes of a (bounded) status, as its sandbox's end loses them. */
export const lostOf = (st: LiveStatus | undefined): LiveLost => ({ lost_processes: st?.processes ?? [], ...(st?.processes_total !== undefined ? { lost_total: st.processes_total } : {}) });

/**
 * The live coordinator's interface (issue #29, docs/live-sessions.md): what the tool's call asks of
 * a session's live sandbox (begin, run, release), what its runner asks (the LiveHub of
 * lib/sync/live-types.ts: next, result, ended) and what the routes ask (status, end). Three
 * implementations speak it, over one state machine (session-state.ts): memory.ts (one Node
 * process), a Durable Object per session (lib/runtime/live-object.ts), and a DynamoDB item per
 * session (dynamodb.ts, AWS). Every answer carries the generations that ended in it (`ends`):
 * accounting (lease, usage, audit) is the caller's, exactly once per generation. Pure types.
 */
import type { LiveEndReason, LiveEnded, LiveLost, LiveNext, LiveResultPost, LiveStatus } from "../../sync/live-types.js";

/** Which session: from the authenticated call (tool, route) or the live token's claims (runner). */
export interface LiveKey {
  tenant: string;
  workspace: string;
  session: string;
}

export interface LiveTimings {
  /** Longest a runner's poll is held (LIVE_POLL_MS). */
  poll_ms: number;
  /** A runner that has not polled for this long (or overran its command's timeout by it) is lost (LIVE_STALE_MS). */
  stale_ms: number;
  /** A runner that has not polled this long after its start was asked for never came (the call fails UNAVAILABLE). */
  start_wait_ms: number;
}

/** What a session's previous runner lost when it ended (told to the next call). Files are never lost. */
export interface LiveLoss extends LiveLost {
  generation: string;
  reason: LiveEndReason;
  /** The API key that started the lost sandbox (session-records.ts sandboxKeyId): only its calls hear the loss whole. */
  key_id?: string;
  /**
   * Its processes are those its runner found still running as it ended (its `ended`), not those of its last status
   * report, which an end the API decided (DELETE, a replacement) starts from: session-runner.ts ended.
   */
  reported?: true;
  /** The lost sandbox was started by another API key than the call told: it hears only that it ended, and why (session-records.ts takeLoss). */
  other_access?: true;
  /** Another key's call was told that it ended: not again (the loss stays for its own key). */
  others_told?: true;
  /**
   * What the sandbox's final write-back did (LiveEnded.written), when its runner said: told to the next
   * call, conflicts included. Each list's first LOSS_PATHS_KEPT paths and its whole count (`counts`):
   * a session's state stays small whatever a background process wrote (a DynamoDB item holds 350 KB).
   */
  written?: { changed: string[]; deleted: string[]; conflicts: string[]; not_written?: string[]; why?: string; counts: { changed: number; deleted: number; conflicts: number; not_written?: number } };
}

/** A generation that ended: what the caller accounts for. */
export interface LiveEnd extends LiveLost {
  generation: string;
  reason: LiveEndReason;
  /** The runner polled at least once (it existed). */
  arrived: boolean;
  started_at: number;
  ended_at: number;
  wall_ms: number;
  cpu_ms?: number;
  /** Network bytes not in any command's record: what its background processes exchanged after the last command (LiveStatus.net_bytes_in). */
  net_bytes_in?: number;
  net_bytes_out?: number;
  /** Workspace bytes not in any command's record: what its final write-back wrote (LiveStatus.bytes_written). */
  bytes_written?: number;
  /** The concurrent_runs lease it held (lib/limits). */
  lease?: string;
  /**
   * Accounted from its marker (forgotten-end.ts): no coordinator held it, so its runner's `ended`, should it come
   * after all, would account it from its report. Its end mark is made even for a deleted workspace's end.
   */
  from_marker?: true;
}

export type BeginAnswer =
  | { turn: string; generation: string; lost?: LiveLoss; ends: LiveEnd[] }
  /** No runner: start one with this generation, then run. */
  | { turn: string; start: { generation: string }; lost?: LiveLoss; ends: LiveEnd[] }
  /** Another call of the session holds the turn. */
  | { busy: { retry_after_s: number }; ends: LiveEnd[] }
  /**
   * `join` and the session has no sandbox this call may run in: none (its loss, if one is still
   * untold), or one started with other access (`other_access`: left alone). No turn is held, nothing was started.
   */
  | { none: { lost?: LiveLoss; other_access?: boolean }; ends: LiveEnd[] };

export interface RunOptions {
  /** The command's own timeout: its runner is lost only once it overran it by stale_ms. */
  timeout_ms: number;
  /** The concurrent_runs lease of a runner just started (kept with its generation). */
  lease?: string;
}

export type RunAnswer =
  | { response: LiveResultPost["response"]; ends: LiveEnd[] }
  /** The runner ended or was lost before it answered: start a new one (this generation, same turn) and run again. */
  | { lost: LiveLoss; /** The runner had taken the command (it may have partly run). */ interrupted: boolean; start: { generation: string }; ends: LiveEnd[] }
  /** The runner never polled within start_wait_ms: nothing ran. */
  | { unavailable: { waited_ms: number }; ends: LiveEnd[] }
  | { refused: "turn_expired"; ends: LiveEnd[] };

export interface CallOptions extends RunOptions {
  wait_ms: number;
  turn_ms: number;
  sandbox?: string;
  /**
   * The request leaves out the session's saved shell (its GET skipped): it runs only on a runner
   * that has answered a command already (its shell holds the state); else the call is only begun.
   */
  stateless?: boolean;
  /** Run only in the session's current sandbox (a call without keep_alive): never start one (BeginAnswer `none`). */
  join?: boolean;
}

/**
 * begin, run and give the turn back in one request (call.ts): `ran` when the session's runner took
 * the command (`released`: the turn was given back with the answer; else the caller holds `turn`
 * and releases it, after saving the shell state the answer reports, or after running again on a
 * loss); `begun` when it could not run as it was (busy; a runner to start; a runner whose shell
 * needs the saved state first; `none` to join): the caller goes on as after begin().
 */
export type CallAnswer = { begun: BeginAnswer } | { ran: RunAnswer; turn: string; released: boolean };

/** GET .../sandbox: what the runner last reported, and the session's state. */
export interface SandboxView extends LiveStatus {
  state: "starting" | "idle" | "running";
  /** When its runner took the status its processes and ports come from (none before its first report). */
  reported_at?: number;
  /** The API key that started it (session-records.ts sandboxKeyId): GET and DELETE show its processes' command lines to that key alone. */
  key_id?: string;
}

/** One interface, three implementations (memory.ts; lib/runtime/live-object.ts; dynamodb.ts). */
export interface LiveCoordinator {
  /** `sandbox`: what the call's sandbox is started with (network, secrets); a current one started otherwise is replaced. */
  begin(key: LiveKey, opts: { wait_ms: number; turn_ms: number; sandbox?: string; join?: boolean }): Promise<BeginAnswer>;
  /** begin + run + release in one request when the session's runner can take the command now (CallAnswer). */
  call(key: LiveKey, request: unknown, opts: CallOptions): Promise<CallAnswer>;
  run(key: LiveKey, turn: string, request: unknown, opts: RunOptions): Promise<RunAnswer>;
  release(key: LiveKey, turn: string): Promise<void>;
  next(key: LiveKey, generation: string, status: LiveStatus): Promise<LiveNext>;
  result(key: LiveKey, generation: string, post: LiveResultPost): Promise<void>;
  /** result, then the runner's next poll (its status the answer's), in one step: answered as next (LiveResultPost.poll). */
  resultThenNext(key: LiveKey, generation: string, post: LiveResultPost): Promise<LiveNext>;
  ended(key: LiveKey, generation: string, ended: LiveEnded): Promise<LiveEnd[]>;
  status(key: LiveKey): Promise<{ sandbox: SandboxView | null; ends: LiveEnd[] }>;
  end(key: LiveKey, reason: LiveEndReason): Promise<{ ended: SandboxView | null; ends: LiveEnd[] }>;
  /**
   * What a generation end() ended lost, as its runner reported at its end (the processes still running then), waiting
   * up to `wait_ms` for its report; null when it did not come in time, or its loss is no longer the session's to read.
   */
  lostAtEnd(key: LiveKey, generation: string, wait_ms: number): Promise<LiveLost | null>;
}

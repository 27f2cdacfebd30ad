/**
 * The contract between a tool (bash, run_code, ...) and the container function that runs commands. Pure types: bundles for Workers.
 *
 * The container function never holds storage or cloud credentials. It receives the
 * workspace through a SyncClient (lib/sync/types.ts): a narrow HTTP API of Toolshed (`/v1/sync/...`)
 * authenticated by a short-lived token scoped to one tenant + workspace + run.
 */
import type { OutputCut } from "../shared/output-cut.js";
import type { GitIdentity } from "./git-identity.js";
import type { SyncAccess } from "../sync/types.js";
import type { LiveSpec } from "../sync/live-types.js";
import type { Caller } from "../limits/store.js";
import type { WebDomains } from "../shared/web-domains.js";

/** Per-call limits of the sandbox; every field has a default in the runner. */
export interface RunLimits {
  /**
   * Private writable memory of each process (heap, stacks, private mappings: RLIMIT_DATA),
   * MiB (default 2048): allocating 4 GB fails. Address space reserved but not written (a JVM's
   * heap reservation, WebAssembly's guard regions) does not count, so java and wasm still run.
   */
  memory_mb: number;
  /** Address space of each process, MiB (default 32768: RLIMIT_AS): bounds what memory_mb cannot see (shared mappings). Large, since runtimes reserve far more than they use. */
  address_space_mb: number;
  /** Largest file a process may write, MiB (default 1024): writing 2 GB fails. */
  file_size_mb: number;
  /** Processes (threads) of the sandbox user (default 256): a fork bomb stops there. */
  processes: number;
  /** CPU seconds per process (default: the wall-clock timeout). */
  cpu_seconds: number;
  /** Open files per process (default 1024). */
  open_files: number;
  /** Size of the private /tmp (and /dev/shm), MiB (default 512). */
  tmp_mb: number;
  /** Memory of the whole sandbox (all its processes, its /tmp and /dev/shm), MiB (default 4096), in its own cgroup where the runner has one (docs/runner-security.md); 0: none. */
  sandbox_memory_mb: number;
  /** Bytes of stdout / stderr / merged output kept in the result, head + tail (default 30000). */
  output_bytes: number;
  /** Most changed files one run may write back (default 100000); the rest are reported in `unsynced`. */
  max_writeback_files: number;
  /**
   * Time the write-back may take after the command, ms; 0 (default): what the timeout leaves
   * of the run, and at least max(10 s, timeout / 4). Changes not started by then are reported
   * in `unsynced`, not written.
   */
  writeback_ms: number;
  /**
   * Most bytes the command may add to the workspace tree, MiB (default 4096): sampled while
   * it runs, checked exactly after; past it the command is stopped and nothing is written back.
   */
  disk_mb: number;
}

/** One destination of a tenant secret: the header `header: value` goes to requests whose host matches `host` (lib/shared/host-pattern.ts). */
export interface EgressSecret {
  name: string;
  host: string;
  header: string;
  /** The header's whole value (the secret in its format). */
  value: string;
}

/** The invocation payload of the container function. */
export interface RunRequest {
  version: 1;
  /**
   * Same key = same call: a retried invocation returns the stored result, never runs twice,
   * in any execution environment (the run record in storage, see RunRecordClient).
   */
  idempotency_key: string;
  tenant: string;
  workspace: string;
  /** Run by `bash -c` inside the sandbox. */
  command: string;
  /** Working directory, a canonical workspace path ("" = root). */
  cwd?: string;
  /** Wall-clock limit; every process is killed when it passes. */
  timeout_ms: number;
  /** Extra environment of the command (the sandbox starts from an empty environment). */
  env?: Record<string, string>;
  /** Bytes fed to the command's stdin (run_code passes the program this way). */
  stdin?: string;
  /** Allow network access (a per-tenant setting); default false: no network at all. */
  network?: boolean;
  /**
   * The tenant's secrets for the egress proxy (docs/secrets.md), decrypted by the API, with network
   * only. They travel only in this signed invocation: the runner hands them to the run's egress proxy,
   * outside the sandbox, never to the command's environment, files or argv.
   */
  egress_secrets?: EgressSecret[];
  /** The tenant policy's web domain lists (docs/web.md), with network only, when it sets any: the egress proxy enforces them. Added by runRequest alone. */
  egress_domains?: WebDomains;
  /** Who `git commit` names (the tenant's setting; default DEFAULT_GIT_IDENTITY), written to the sandbox HOME's .gitconfig. */
  git?: GitIdentity;
  sync: SyncAccess;
  limits?: Partial<RunLimits>;
  /** How often a background task sends its output to its run record and checks the kill flag, ms (MIN_OUTPUT_EVERY_MS to MAX_OUTPUT_EVERY_MS; default 1000). A streamed call (lib/exec/stream-run.ts) asks for 250. */
  output_every_ms?: number;
  /**
   * The session's shell (lib/exec/shell-session.ts): the command starts in the state of the
   * session's previous command and the runner captures the state it ends in (RunResult.shell).
   * Absent: a fresh shell, nothing captured.
   */
  shell?: ShellRequest;
  /** The W3C traceparent of the API's invocation span (docs/tracing.md): the runner continues the trace. Signed with the rest. */
  traceparent?: string;
  /**
   * This invocation starts a live sandbox for the session (lib/sync/live-types.ts): `command` is
   * empty; the runner takes the session's commands from /v1/sync/live/next with `sync.token` (a
   * live token) and answers each on /v1/sync/live/result, until it ends.
   */
  live?: LiveSpec;
}

/** What of a shell carries over to the session's next command: the working directory only (native bash), or also exported variables and functions (Anthropic's bash). */
export type ShellKeep = "cwd" | "all";

/** The state a command's shell ends in, as the runner captured it (bounded: MAX_SHELL_STATE_BYTES). */
export interface ShellState {
  /** Working directory, a canonical workspace path ("" = root). */
  cwd: string;
  /** Exported variables the command set or changed (never the runner's own: HOME, proxies, TOOLSHED_*, ...). keep "all" only. */
  env?: Record<string, string>;
  /** `declare -f` of the shell's functions. keep "all" only. */
  functions?: string;
}

export interface ShellRequest {
  keep: ShellKeep;
  /** Restored before the command; its cwd is ignored when the request has a cwd (working_dir). */
  state?: ShellState;
}

/** Most bytes of exported variables and functions a session's shell keeps; past it only the working directory is kept (and the output says so). */
export const MAX_SHELL_STATE_BYTES = 64 * 1024;

/** Bounds of RunRequest.output_every_ms. */
export const MIN_OUTPUT_EVERY_MS = 100;
export const MAX_OUTPUT_EVERY_MS = 10_000;

export interface Conflict {
  path: string;
  /** What the command did to the file. */
  change: "created" | "modified" | "deleted";
  /** Why it was not written back: the workspace's file changed (written, created or deleted) during the run. */
  reason: "changed_meanwhile";
  /** Where the command's version was saved instead (never for deletions). */
  saved_as?: string;
}

export interface Skipped {
  path: string;
  reason: "symlink" | "special_file" | "invalid_name" | "path_conflict" | "limit" | "error";
  detail?: string;
  /** A change in no file list whose save was refused (with the write-back the quotas refused whole): what it was. */
  change?: "execute_bit" | "symlink" | "dir_created" | "dir_deleted";
}

export type UnsyncedReason = "limit" | "deadline";

/** Changes of a finished run that were NOT written back: they are not in the workspace. */
export interface Unsynced {
  /** How many changed files (created, modified or deleted) were not written back. */
  count: number;
  /** The first of them in path order (at most UNSYNCED_SHOWN). */
  paths: string[];
  /** limit: more than max_writeback_files changes; deadline: the write-back's time ran out. */
  reasons: UnsyncedReason[];
}

/** Paths of `unsynced` listed in a result. */
export const UNSYNCED_SHOWN = 20;

export interface SyncStats {
  /** "warm": the run started from this workspace's local tree of an earlier run. */
  cache: "warm" | "cold";
  manifest_files: number;
  downloaded_files: number;
  downloaded_bytes: number;
  uploaded_files: number;
  uploaded_bytes: number;
  deleted_files: number;
  sync_in_ms: number;
  sync_out_ms: number;
  /**
   * A live sandbox's walk after the command: directories in the tree, how many of them its change journal vouched for
   * (not read again), whether a walk was made at all (false: the journal heard nothing since the last one, whose result
   * stood), and how many files were compared with the runner's record of them (only those of the directories read, when the journal allows).
   */
  walk_dirs?: { total: number; vouched: number; walked: boolean; compared: number };
  /** The sync-in's reconcile, when storage had changed: the manifest entries it went through, whether that was all of them (`whole`) or only those the manifest proved changed, and how many downloaded files came with a live command (`carried`: no request, lib/sync/carried-files.ts). */
  reconciled?: { entries: number; whole: boolean; carried?: number };
}

export interface RunResult {
  run_id: string;
  stdout: string;
  stderr: string;
  /** stdout and stderr merged in arrival order. */
  output: string;
  /** null when the command did not exit by itself (timed out or killed). */
  exit_code: number | null;
  duration_ms: number;
  /** With network: TCP payload bytes its egress proxy's upstream connections read and wrote (infra/container/egress-proxy.ts), the call's net_bytes_in / net_bytes_out. */
  net_bytes_in?: number;
  net_bytes_out?: number;
  timed_out: boolean;
  /** Stopped by kill (background tasks); `killed_by: "key_gone"`: because the key that started the task was revoked or expired (lib/sync/starting-key.ts). */
  killed: boolean;
  killed_by?: "key_gone";
  /** Some output was cut (head and tail kept). */
  truncated: boolean;
  /** What the cut of `output` left out of the real merged output (bytes, lines); absent when nothing was cut. */
  output_cut?: OutputCut;
  /** Name of the saved full merged output (not a workspace file: lib/sync/output-logs.ts; read it with bash_output {output_file}), when it was truncated. */
  output_file?: string;
  /** Created or modified files written back (created ones are also in files_created). */
  files_changed: string[];
  files_created: string[];
  files_deleted: string[];
  /** Explicit directories written back: made for directories the command left empty, removed with the directory. */
  dirs_created?: string[];
  dirs_deleted?: string[];
  /** Symlinks the command made, removed or repointed (docs/symlinks.md; links_removed: those removed, named apart in the model's output: write-back-notes.ts), and files whose execute bit it set or cleared: kept in the workspace's modes table, undone with the call. */
  links_changed?: string[];
  links_removed?: string[];
  modes_changed?: string[];
  conflicts: Conflict[];
  skipped: Skipped[];
  /** `disk_mb`: stopped for adding more than that to the workspace (nothing written back); `memory_mb`: the kernel killed processes past the sandbox's memory bound (the run went on, its output says so). */
  limit_exceeded?: { disk_mb?: number; memory_mb?: number };
  /** Changes not written back because the run timed out, was killed or exceeded a limit: the first DISCARDED_SHOWN in path order; `discarded_count`: how many, when more (lib/exec/discarded.ts). */
  discarded: string[];
  discarded_count?: number;
  /** Changes of a run that finished but were not written back (too many, or out of time); absent when all were. */
  unsynced?: Unsynced;
  /** The lists a result too large for its record was cut to fit (field → its whole length; lib/sync/result-size.ts); absent when none was. */
  lists_cut?: Record<string, number>;
  sync: SyncStats;
  /**
   * The state the command's shell ended in (RunRequest.shell), with notes for the model (a state
   * too large to keep); absent when none was asked for or the shell did not get to save it
   * (killed, timed out, `exec`): the session's state then stays as it was. `unchanged`: a live
   * sandbox's shell ended in the very state it started the command in (the one its previous command
   * reported, or the one its request restored): the saved state already holds it.
   */
  shell?: { state: ShellState; notes: string[]; unchanged?: true };
}

export type TaskStatus = "running" | "completed" | "killed" | "timed_out";

/** A background task: its id is the run id (runIdFor), its record lives in its workspace. */
export interface TaskRef {
  tenant: string;
  workspace: string;
  task_id: string;
}
export interface TaskPoll {
  task_id: string;
  status: TaskStatus;
  exit_code: number | null;
  /** Merged output produced since the previous poll (middle cut when very long). */
  output: string;
  /** The full result once the task is no longer running. */
  result?: RunResult;
  /** Set when the task failed before or after its command (e.g. the workspace sync failed). */
  error?: { code: string; message: string };
  /** The starting call's undo id (its write-back is journaled under it). */
  call_id?: string;
}

/** "stopping": the kill flag is set, the runner had not stopped yet when kill returned. */
export type KillStatus = "killed" | "already_completed" | "stopping";

/**
 * One interface, two implementations: lambda (lib/exec/lambda.ts) and local (infra/container).
 * Background tasks report to their run record in storage; the API reads and kills them there
 * (lib/sync/run-records.ts), never through the executor.
 */
export interface Executor {
  /**
   * Runs to completion (or timeout). Throws ToolError for infrastructure failures only. `caller`: the key the
   * command runs for, whose own concurrent_runs it counts against too (lib/exec/limited.ts); absent: the tenant's alone.
   */
  run(req: RunRequest, caller?: Caller): Promise<RunResult>;
  /** Hands a background task to the runner (an asynchronous Invoke) and returns at once. */
  start(req: RunRequest): Promise<void>;
  /**
   * Runs `work`, a foreground command's whole life that reaches the runner through start (a streamed
   * run, followed to its result: lib/exec/stream-run.ts), holding what run holds for its command
   * (a concurrent_runs slot: lib/exec/limited.ts). Absent: nothing is held.
   */
  foreground?<T>(req: RunRequest, work: () => Promise<T>, caller?: Caller): Promise<T>;
}

/**
 * The container function's event: a run request. `task: true` marks a background task: the
 * runner streams its output to the run record and polls the record's kill flag.
 */
export type ExecEvent = RunRequest & { action?: "run"; task?: boolean };

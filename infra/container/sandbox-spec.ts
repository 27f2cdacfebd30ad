/**
 * A sandbox, what a run asks of it, and how it ended: the one shape every sandbox (bwrap: sandbox.ts;
 * the per-tenant process sandbox: sandbox-process.ts) takes and gives, and supervise.ts runs to its end.
 */
import type { EgressSecret, RunLimits } from "../../lib/exec/types.js";
import type { WebDomains } from "../../lib/shared/web-domains.js";
import type { EgressBytes } from "./egress-proxy.js";
import type { LiveProbe } from "./live-status.js";

export interface SandboxSpec {
  /** Host directory bound read-write at /workspace. */
  tree: string;
  /** Working directory below /workspace (canonical workspace path). */
  cwd: string;
  command: string;
  env: Record<string, string>;
  /** Files the command's HOME starts with (relative path → text; writable copies): git's config and excludes. */
  home?: { path: string; text: string }[];
  stdin?: string;
  /** A stream fed to the command's stdin instead of `stdin`, for as long as it lasts (a live sandbox's commands: live-shell.ts). */
  input?: NodeJS.ReadableStream;
  /** Told the host pid of the spawned sandbox process (a live sandbox's status and end: live-status.ts). */
  onSpawn?(pid: number): void;
  /** Reach the internet through the egress proxy (public addresses only); false: no network at all. */
  network: boolean;
  /** With network: told how to read what the egress proxy's upstream connections carried so far (a live sandbox's commands each take their share: live-shell.ts). */
  onEgress?(carried: () => EgressBytes): void;
  /** Told the sandbox's memory bound and how to read its OOM kills so far, when it runs in a cgroup of its own (a live sandbox's commands each take their share: live-shell.ts). */
  onMemory?(memory: { limitMb: number; oomKills(): number }): void;
  /** The API's URL (the run's sync URL): the egress proxy refuses its host. */
  apiUrl?: string;
  /** RunRequest.egress_secrets: the egress proxy's only, never the command's (docs/secrets.md). */
  egressSecrets?: EgressSecret[];
  /** RunRequest.egress_domains: the tenant's domain lists, enforced by the egress proxy (egress-domains.ts); the process sandbox has no proxy and cannot. */
  egressDomains?: WebDomains;
  limits: RunLimits;
  timeoutMs: number;
  /**
   * The command starts once this resolves true; meanwhile the sandbox is set up (bubblewrap's
   * namespaces and mounts), so that cost overlaps whatever the caller still does (the manifest,
   * the claim). false or a rejection: the command never starts and the run ends as killed. The
   * timeout and durationMs count from the start. The working directory need not exist before.
   */
  gate?: Promise<boolean>;
  signal?: AbortSignal;
  /**
   * A bwrap sandbox started ahead of this run with this run's SandboxStart (sandbox-spare.ts): the run
   * takes it instead of starting one, unless it ended meanwhile. Its tree is `tree`.
   */
  spare?: StartedSandbox;
  /** A host directory the command may write (its shell's saved state, shell-state.ts), seen at `shellPath(dir)`. */
  shellDir?: string;
  onStdout(chunk: Buffer): void;
  onStderr(chunk: Buffer): void;
  /** Where the egress proxy's refusal lines go (default: onStderr): a live sandbox's to the running command's stderr, not the loop's. */
  onEgressRefusal?(line: Buffer): void;
}

/**
 * What is fixed when a bwrap sandbox starts (sandbox.ts): everything among bwrap's arguments. The run's
 * command, working directory, environment and rlimits come later, through its gate (sandbox-script.ts);
 * of its limits only the tmpfs size (tmp_mb) and its cgroup's bounds (sandbox_memory_mb, processes) are
 * fixed here.
 */
export type SandboxStart = Pick<SandboxSpec, "tree" | "home" | "shellDir" | "limits"> & {
  /** Whether the run feeds stdin (a pipe); false: /dev/null. */
  stdin: boolean;
};

/** A bwrap sandbox spawned with its SandboxStart and waiting at its gate for its run. */
export interface StartedSandbox {
  /** Hands it its run (once; a spec of the same SandboxStart): the command starts when the run's gate opens, its processes in its cgroup. */
  run(spec: SandboxSpec): Promise<SandboxExit>;
  /** Whether it still waits: bwrap has not exited. */
  alive(): boolean;
  /** Ends it unrun: its processes killed, its cgroup removed. */
  end(): Promise<void>;
}

export interface SandboxExit {
  exitCode: number | null;
  timedOut: boolean;
  killed: boolean;
  durationMs: number;
  /** A run with network: what its egress proxy's upstream connections carried (egress-proxy.ts); absent without network. */
  net?: EgressBytes;
  /** A run in a cgroup of its own (sandbox-cgroup.ts): its memory bound and how many of its processes the kernel's OOM killer killed. */
  memory?: { limitMb: number; oomKills: number };
}

export interface Sandbox {
  /** Throws UNAVAILABLE (saying what is missing) when the sandbox cannot run here. */
  check(): Promise<void>;
  run(spec: SandboxSpec): Promise<SandboxExit>;
  /** Host uid/gid commands run as (null: the handler's own); the slot trees belong to it. */
  readonly runAs: { uid: number; gid: number } | null;
  /**
   * true when the sandbox relies on its host for isolation between tenants (a Lambda
   * execution environment per tenant): the handler then requires the invocation's tenant
   * and keeps only the current workspace's files (see sandbox-process.ts); and, since its
   * commands share the host's processes and /tmp, runs nothing beside a live sandbox.
   */
  readonly hostIsolated: boolean;
  /** Where the command sees SandboxSpec.shellDir. */
  shellPath(hostDir: string): string;
  /**
   * What a live sandbox of this kind holds (its processes, ports, and when nothing of it is left:
   * live-status.ts), for the run whose spawned process is `hostPid` and whose loop shell reported
   * `shellPid` (its `$$`).
   */
  liveProbe(hostPid: number, shellPid: number): Promise<LiveProbe>;
  /**
   * bubblewrap only: a sandbox spawned now, with no network, waiting at its gate for a run whose
   * fixed part is `fixed` (a spare started ahead of its run: sandbox-spare.ts).
   */
  prestart?(fixed: Omit<SandboxStart, "stdin">): StartedSandbox;
}

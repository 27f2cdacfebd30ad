/**
 * What a run asks of a sandbox, and how it ended: the one shape every sandbox (bwrap: sandbox.ts;
 * the per-tenant process sandbox: sandbox-process.ts) takes and gives, and supervise.ts runs to its end.
 */
import type { EgressSecret, RunLimits } from "../../lib/exec/types.js";
import type { WebDomains } from "../../lib/shared/web-domains.js";
import type { EgressBytes } from "./egress-proxy.js";

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
  /** A host directory the command may write (its shell's saved state, shell-state.ts), seen at `shellPath(dir)`. */
  shellDir?: string;
  onStdout(chunk: Buffer): void;
  onStderr(chunk: Buffer): void;
  /** Where the egress proxy's refusal lines go (default: onStderr): a live sandbox's to the running command's stderr, not the loop's. */
  onEgressRefusal?(line: Buffer): void;
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

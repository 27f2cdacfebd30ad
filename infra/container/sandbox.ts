/**
 * The sandbox of user commands: bubblewrap. New user, pid, net, ipc, uts, mount and
 * cgroup namespaces (always the net one: a run with network gets out only through the
 * runner's egress proxy, egress-forwarder.ts); a read-only /usr and a minimal /etc; the workspace tree bound
 * read-write at /workspace; private size-limited /tmp and /dev/shm; an empty environment;
 * rlimits set inside before the command starts; its own cgroup (sandbox-cgroup.ts) bounding the memory and processes of all of it; a seccomp filter (seccomp.ts) installed by
 * bwrap just before the command's exec. No bwrap, no run: never unsandboxed.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, lstatSync, mkdirSync, openSync, readlinkSync, statSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { Writable } from "node:stream";
import { delimiter, join } from "node:path";
import { ToolError } from "../../lib/shared/errors.js";
import type { RunLimits } from "../../lib/exec/types.js";
import { openRunEgress, type EgressOptions, type RunEgress } from "./egress-forwarder.js";
import type { EgressBytes } from "./egress-proxy.js";
import { ETC_BINDS, ETC_FILES, homeFile, SANDBOX_UID, writeEtc } from "./sandbox-files.js";
import { hostSeccompProgram } from "./seccomp.js";
import { killGroup, supervise } from "./supervise.js";
import { namespaceProbe, type LiveProbe } from "./live-status.js";
import { gateInto, sandboxCgroups, type Cgroups } from "./sandbox-cgroup.js";
import type { SandboxExit, SandboxSpec } from "./sandbox-spec.js";

export const DEFAULT_LIMITS: RunLimits = {
  memory_mb: 2048,
  address_space_mb: 32_768,
  file_size_mb: 1024,
  processes: 256,
  cpu_seconds: 0, // 0: the wall-clock timeout, rounded up
  open_files: 1024,
  tmp_mb: 512,
  sandbox_memory_mb: 4096, // memory_mb + 2 × tmp_mb + 1 GiB: what one process and both tmpfs may hold, and room for the rest
  output_bytes: 30_000,
  max_writeback_files: 100_000,
  writeback_ms: 0, // 0: the rest of the timeout, at least max(10 s, timeout / 4): runner.ts
  disk_mb: 4096,
};

export const INSTALL_HINT =
  "bubblewrap (bwrap) is required to run commands and was not found. Install it: `apt-get install bubblewrap` (Debian/Ubuntu), `dnf install bubblewrap` (Fedora/Amazon Linux). Toolshed never runs a command without its sandbox.";

export interface SandboxOptions {
  /** Path of the bwrap binary (default: found on PATH). */
  bwrapPath?: string;
  /** Host uid/gid the sandbox runs as. Default when the handler is root: 65534 (nobody). */
  hostIds?: { uid: number; gid: number } | null;
  /** Directory for the sandbox's synthetic /etc files and its seccomp program. */
  stateDir: string;
  /**
   * The seccomp program bwrap installs before the command (default: `hostSeccompProgram()`,
   * null on an architecture other than x64/arm64). Tests pass null for a control without it.
   */
  seccomp?: Buffer | null;
  /** The egress proxy of runs with network: limits; for tests only, a DNS and `allowLoopback`. */
  egress?: EgressOptions;
  /** The cgroups of its sandboxes, one execution environment's (default: made where this runner's own cgroup allows, sandbox-cgroup.ts); closed with it. */
  cgroups?: Cgroups;
}

/** The uid/gid user code runs as on the host: never root. */
function defaultHostIds(): { uid: number; gid: number } | null {
  return process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : null;
}

/** bwrap runs as the sandbox uid and binds the tree by path: every ancestor needs o+x. */
export function assertTraversable(dir: string): void {
  for (let d = dir; ; d = dirname(d)) {
    const st = statSync(d);
    if ((st.mode & 0o001) === 0) throw new ToolError("INTERNAL", `The runner directory ${d} must be traversable by the sandbox user (chmod o+x ${d}), or use a root under /tmp.`);
    if (d === dirname(d)) return;
  }
}

function findOnPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? "/usr/bin:/bin").split(delimiter)) {
    const p = join(dir, name);
    if (dir && existsSync(p)) return p;
  }
  for (const p of ["/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"]) if (existsSync(p)) return p;
  return null;
}

const FD_ETC = 3;
/** The seccomp program's descriptor: after the /etc files. */
const FD_SECCOMP = FD_ETC + ETC_FILES.length;

/** The whole environment of a command: these few variables and the call's own. */
export function commandEnv(tmp: string, extra: Record<string, string>): Record<string, string> {
  return { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: tmp, TMPDIR: tmp, LANG: "C.UTF-8", TERM: "dumb", USER: "user", ...extra };
}

/**
 * bash sets the limits (soft = hard) in the sandboxed process, then execs the command ($1).
 * Memory is RLIMIT_DATA (what a process writes), not RLIMIT_AS alone: an address-space limit
 * of 2 GiB stops `java` and WebAssembly, which reserve gigabytes they never touch. rlimits
 * are per process, so the command also volunteers as the OOM killer's first victim
 * (oom_score_adj 1000): if the host runs short, it dies before the handler does. Only
 * descriptors 0-2 reach the command.
 *
 * `helper`: a process started first, before the gate opens (so its start overlaps the run's
 * setup), with only descriptors 0-2 (stdin /dev/null); it prints "ready" once it serves, and the
 * command starts only after that (the egress forwarder, egress-forwarder.ts).
 */
export function limitsScript(l: RunLimits, timeoutMs: number, gate?: { fd: number; cwd: string }, helper?: { command: string; failure: string }): string {
  const cpu = l.cpu_seconds > 0 ? l.cpu_seconds : Math.ceil(timeoutMs / 1000) + 1;
  const lim = `ulimit -c 0 -u ${l.processes} -d ${l.memory_mb * 1024} -v ${l.address_space_mb * 1024} -f ${l.file_size_mb * 1024} -t ${cpu} -n ${l.open_files}`;
  // Descriptors beyond 0-2 that the handler inherited without close-on-exec would reach the command: closed.
  // (Not `done 2>/dev/null`: bash would save stderr in a descriptor the loop then closes.)
  const closeFds = `for f in /proc/self/fd/*; do n=\${f##*/}; [ "$n" -gt 2 ] && { eval "exec $n<&-"; } 2>/dev/null; done`;
  // The gate: one line "go" on its descriptor starts the command (in `cwd`, made meanwhile); anything else ends it unrun.
  const wait = gate ? `read -r g <&${gate.fd} && [ "$g" = go ] || exit 125; cd -- ${shellQuote(gate.cwd)} || exit 125; ` : "";
  const launch = helper ? `exec {helper}< <(${closeFds}; ${helper.command} </dev/null); ` : "";
  const ready = helper ? `read -r ok <&$helper; exec {helper}<&-; [ "$ok" = ready ] || { echo ${shellQuote(helper.failure)} >&2; exit 125; }; ` : "";
  return `${launch}${wait}${ready}${closeFds}; echo 1000 2>/dev/null >/proc/self/oom_score_adj; ${lim} || { echo "toolshed: could not set limits" >&2; exit 125; }; exec /bin/bash -c "$1"`;
}

/** `s` as one shell word. */
export const shellQuote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

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
  /** Its execution environment ends, none of its runs left: what it holds for the environment goes (bwrap: the environment's parent cgroup). */
  close?(): Promise<void>;
}

/** Where bubblewrap binds SandboxSpec.shellDir. */
const SHELL_MOUNT = "/run/toolshed-shell";

export function bwrapSandbox(opts: SandboxOptions): Sandbox {
  const hostIds = opts.hostIds === undefined ? defaultHostIds() : opts.hostIds;
  const seccomp = opts.seccomp === undefined ? hostSeccompProgram() : opts.seccomp;
  const cgroups = opts.cgroups ?? sandboxCgroups();
  let etcDir: string | null = null;
  let seccompFile: string | null = null;
  /** The first descriptor of the HOME files: after the seccomp program's, if any. */
  const fdHome = FD_SECCOMP + (seccomp ? 1 : 0);
  let checked: Promise<void> | null = null;

  const bwrap = () => {
    const p = opts.bwrapPath ?? findOnPath("bwrap");
    if (!p || !existsSync(p)) throw new ToolError("UNAVAILABLE", INSTALL_HINT, { reason: "bwrap_missing" });
    return p;
  };

  /** Arguments up to (not including) the command. */
  function baseArgs(spec: Pick<SandboxSpec, "tree" | "cwd" | "limits" | "env" | "home" | "gate" | "shellDir">, egress: RunEgress | null): string[] {
    // --unshare-all includes the network: never --share-net, the host's network is never the sandbox's.
    const a = ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session", "--hostname", "toolshed"];
    a.push("--uid", String(SANDBOX_UID), "--gid", String(SANDBOX_UID));
    a.push("--ro-bind", "/usr", "/usr");
    for (const top of ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]) {
      try {
        const st = lstatSync(top);
        if (st.isSymbolicLink()) a.push("--symlink", readlinkSync(top), top);
        else if (st.isDirectory()) a.push("--ro-bind", top, top);
      } catch {
        /* absent on this system */
      }
    }
    a.push("--dir", "/etc");
    // Handler-private files are passed as open file descriptors (3, 4, ...) and copied in.
    ETC_FILES.forEach((name, i) => a.push("--ro-bind-data", String(FD_ETC + i), `/etc/${name}`));
    for (const name of ETC_BINDS) a.push("--ro-bind-try", `/etc/${name}`, `/etc/${name}`);
    if (egress) a.push(...egress.args);
    a.push("--proc", "/proc", "--dev", "/dev");
    const tmpBytes = String(spec.limits.tmp_mb * 1024 * 1024);
    a.push("--size", tmpBytes, "--tmpfs", "/tmp", "--size", tmpBytes, "--tmpfs", "/dev/shm");
    // HOME (/tmp) starts with these files, copied from descriptors after the seccomp program's.
    const dirs = new Set<string>();
    (spec.home ?? []).forEach((f, i) => {
      const parts = f.path.split("/").slice(0, -1);
      for (let k = 1; k <= parts.length; k++) {
        const d = `/tmp/${parts.slice(0, k).join("/")}`;
        if (!dirs.has(d)) a.push("--dir", d);
        dirs.add(d);
      }
      a.push("--file", String(fdHome + i), `/tmp/${f.path}`);
    });
    // The tree by path: bwrap (as the sandbox uid) must traverse to it; slot dirs are 0711.
    // With a gate the script changes to the working directory itself: it may not exist yet.
    if (spec.shellDir) a.push("--bind", spec.shellDir, SHELL_MOUNT);
    a.push("--bind", spec.tree, "/workspace", "--chdir", spec.cwd && !spec.gate ? `/workspace/${spec.cwd}` : "/workspace");
    a.push("--clearenv");
    for (const [k, v] of Object.entries(commandEnv("/tmp", { ...egress?.env, ...spec.env }))) a.push("--setenv", k, v);
    // bwrap reads the filter from this descriptor and installs it just before exec.
    if (seccomp) a.push("--seccomp", String(FD_SECCOMP));
    return a;
  }

  async function run(spec: SandboxSpec): Promise<SandboxExit> {
    const bin = bwrap();
    // A run with network gets its own egress proxy, outside the sandbox, closed with the run.
    const egress = spec.network ? await openRunEgress(opts.stateDir, spec.apiUrl, { ...opts.egress, ...(spec.egressSecrets ? { secrets: spec.egressSecrets } : {}), ...(spec.egressDomains ? { domains: spec.egressDomains } : {}) }, (line) => (spec.onEgressRefusal ?? spec.onStderr)(Buffer.from(`${line}\n`))) : null;
    if (!egress) return spawnRun(bin, spec, null);
    spec.onEgress?.(() => egress.carried());
    let closed: Promise<EgressBytes> | undefined;
    const close = () => (closed ??= egress.close());
    try {
      // What its connections carried goes with the exit (the run's net_bytes_in / net_bytes_out).
      const exit = await spawnRun(bin, spec, egress);
      return { ...exit, net: await close() };
    } finally {
      await close();
    }
  }

  async function spawnRun(bin: string, asked: SandboxSpec, egress: RunEgress | null): Promise<SandboxExit> {
    // Its own cgroup (sandbox-cgroup.ts), entered before the gate opens: then a run without a gate of its own gets one.
    const cg = cgroups.make(asked.limits.sandbox_memory_mb, asked.limits.processes);
    const spec = cg && !asked.gate ? { ...asked, gate: Promise.resolve(true) } : asked;
    etcDir ??= writeEtc(opts.stateDir);
    if (seccomp && !seccompFile) {
      seccompFile = join(opts.stateDir, "seccomp.bpf");
      writeFileSync(seccompFile, seccomp, { mode: 0o600 });
    }
    const fds = ETC_FILES.map((n) => openSync(join(etcDir!, n), "r"));
    if (seccompFile) fds.push(openSync(seccompFile, "r")); // FD_SECCOMP: right after the /etc files
    for (const f of spec.home ?? []) fds.push(openSync(homeFile(opts.stateDir, f.text), "r")); // fdHome, fdHome + 1, ...
    // The gate's pipe comes last: the script reads "go" from it (limitsScript), then closes it with the others.
    const gateFd = spec.gate ? 3 + fds.length : null;
    const script = limitsScript(spec.limits, spec.timeoutMs, gateFd === null ? undefined : { fd: gateFd, cwd: spec.cwd ? `/workspace/${spec.cwd}` : "/workspace" }, egress?.helper);
    const args = [...baseArgs(spec, egress), "--", "/bin/bash", "-c", script, "toolshed", spec.command];
    let child: ChildProcess;
    try {
      // The bwrap process gets an EMPTY environment: its /proc/<pid>/environ is visible inside.
      child = spawn(bin, args, {
        env: {},
        detached: true,
        stdio: [spec.stdin !== undefined || spec.input ? "pipe" : "ignore", "pipe", "pipe", ...fds, ...(gateFd === null ? [] : ["pipe" as const])],
        ...(hostIds ? { uid: hostIds.uid, gid: hostIds.gid } : {}),
      });
    } catch (e) {
      await cg?.remove();
      throw e;
    } finally {
      for (const fd of fds) closeSync(fd); // the child has its copies
    }
    // bwrap's pid 1 dies with its parent (--die-with-parent), and every process of the pid
    // namespace dies with pid 1: killing the group is enough to end them all.
    const pipe = gateFd === null ? null : (child.stdio[gateFd] as Writable);
    pipe?.on("error", () => {}); // bwrap gave up before the gate opened: its exit says why
    if (cg) spec.onMemory?.({ limitMb: cg.memoryMb, oomKills: () => cg.oomKills() });
    const wait = cg ? gateInto(cg, child.pid, spec.gate) : spec.gate;
    const gate = wait && pipe ? { wait, open: () => pipe.end("go\n") } : undefined;
    try {
      const exit = await supervise(child, spec, () => killGroup(child), (e) => (e.code === "ENOENT" ? new ToolError("UNAVAILABLE", INSTALL_HINT) : e), gate);
      return cg ? { ...exit, memory: { limitMb: cg.memoryMb, oomKills: cg.oomKills() } } : exit;
    } finally {
      await cg?.remove();
    }
  }

  return {
    check() {
      checked ??= (async () => {
        const tree = join(opts.stateDir, "probe");
        mkdirSync(tree, { recursive: true, mode: 0o755 });
        const errs: Buffer[] = [];
        const r = await run({
          tree, cwd: "", command: "true", env: {}, network: false, limits: DEFAULT_LIMITS, timeoutMs: 10_000,
          onStdout: () => {}, onStderr: (c) => errs.push(c),
        });
        if (r.exitCode !== 0) {
          const why = Buffer.concat(errs).toString().trim();
          throw new ToolError("UNAVAILABLE", `The command sandbox (bubblewrap) cannot start here: ${why || `exit ${r.exitCode}`}. It needs unprivileged user namespaces (Linux; not inside a container that blocks them). Toolshed never runs a command without its sandbox.`, { reason: "sandbox_unavailable" });
        }
      })();
      checked.catch(() => {
        checked = null;
      });
      return checked;
    },
    run,
    runAs: hostIds,
    hostIsolated: false,
    shellPath: () => SHELL_MOUNT,
    liveProbe: namespaceProbe,
    close: () => cgroups.close(),
  };
}

/**
 * The sandbox of user commands: bubblewrap. New user, pid, net, ipc, uts, mount and
 * cgroup namespaces (always the net one: a run with network gets out only through the
 * runner's egress proxy, egress-forwarder.ts); a read-only /usr and a minimal /etc; the workspace tree bound
 * read-write at /workspace; private size-limited /tmp and /dev/shm; an empty environment;
 * rlimits set inside before the command starts; its own cgroup (sandbox-cgroup.ts) bounding the memory and processes of all of it; a seccomp filter (seccomp.ts) installed by
 * bwrap just before the command's exec. No bwrap, no run: never unsandboxed.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, lstatSync, mkdirSync, openSync, readlinkSync, statSync, unlinkSync, writeFileSync, writeSync } from "node:fs";
import type { Writable } from "node:stream";
import { delimiter, dirname, join } from "node:path";
import { ToolError } from "../../lib/shared/errors.js";
import type { RunLimits } from "../../lib/exec/types.js";
import { openRunEgress, type EgressOptions, type RunEgress } from "./egress-forwarder.js";
import type { EgressBytes } from "./egress-proxy.js";
import { ETC_BINDS, ETC_FILES, homeFile, SANDBOX_UID, writeEtc } from "./sandbox-files.js";
import { hostSeccompProgram } from "./seccomp.js";
import { killGroup, supervise } from "./supervise.js";
import { namespaceProbe } from "./live-status.js";
import { gateInto, sandboxCgroups, type Cgroups } from "./sandbox-cgroup.js";
import { commandEnv, gatedScript, gatePayload } from "./sandbox-script.js";
import type { Sandbox, SandboxExit, SandboxSpec, SandboxStart, StartedSandbox } from "./sandbox-spec.js";

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
  /** The cgroups of its sandboxes (default: made where this runner's own cgroup allows, sandbox-cgroup.ts). */
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
  function baseArgs(spec: SandboxStart, egress: RunEgress | null): string[] {
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
    // The script changes to the run's working directory itself, after the gate: it may not exist before.
    if (spec.shellDir) a.push("--bind", spec.shellDir, SHELL_MOUNT);
    a.push("--bind", spec.tree, "/workspace", "--chdir", "/workspace");
    // What is fixed in advance; the run's own variables come through the gate (sandbox-script.ts).
    a.push("--clearenv");
    for (const [k, v] of Object.entries(commandEnv("/tmp", { ...egress?.env }))) a.push("--setenv", k, v);
    // bwrap reads the filter from this descriptor and installs it just before exec.
    if (seccomp) a.push("--seccomp", String(FD_SECCOMP));
    return a;
  }

  async function run(spec: SandboxSpec): Promise<SandboxExit> {
    const bin = bwrap();
    // A run with network gets its own egress proxy, outside the sandbox, closed with the run.
    const egress = spec.network ? await openRunEgress(opts.stateDir, spec.apiUrl, { ...opts.egress, ...(spec.egressSecrets ? { secrets: spec.egressSecrets } : {}), ...(spec.egressDomains ? { domains: spec.egressDomains } : {}) }, (line) => (spec.onEgressRefusal ?? spec.onStderr)(Buffer.from(`${line}\n`))) : null;
    if (spec.spare?.alive() && !spec.network) return spec.spare.run(spec); // started ahead with this run's SandboxStart (sandbox-spare.ts)
    void spec.spare?.end();
    const started = () => start(bin, { tree: spec.tree, home: spec.home, shellDir: spec.shellDir, limits: spec.limits, stdin: spec.stdin !== undefined || !!spec.input }, egress);
    if (!egress) return started().run(spec);
    spec.onEgress?.(() => egress.carried());
    let closed: Promise<EgressBytes> | undefined;
    const close = () => (closed ??= egress.close());
    try {
      // What its connections carried goes with the exit (the run's net_bytes_in / net_bytes_out).
      const exit = await started().run(spec);
      return { ...exit, net: await close() };
    } finally {
      await close();
    }
  }

  /**
   * Spawns bwrap with everything fixed in advance (sandbox-spec.ts SandboxStart) and leaves its script
   * at the gate; `run` hands it its run. A run's sandbox is started and handed its run at once
   * (run above); a spare is handed one later (sandbox-spare.ts).
   */
  function start(bin: string, fixed: SandboxStart, egress: RunEgress | null): StartedSandbox {
    // Its own cgroup (sandbox-cgroup.ts), its processes moved in from the spawn on, before the gate opens.
    const cg = cgroups.make(fixed.limits.sandbox_memory_mb, fixed.limits.processes);
    etcDir ??= writeEtc(opts.stateDir);
    if (seccomp && !seccompFile) {
      seccompFile = join(opts.stateDir, "seccomp.bpf");
      writeFileSync(seccompFile, seccomp, { mode: 0o600 });
    }
    const fds = ETC_FILES.map((n) => openSync(join(etcDir!, n), "r"));
    if (seccompFile) fds.push(openSync(seccompFile, "r")); // FD_SECCOMP: right after the /etc files
    for (const f of fixed.home ?? []) fds.push(openSync(homeFile(opts.stateDir, f.text), "r")); // fdHome, fdHome + 1, ...
    // The run's payload (sandbox-script.ts gatePayload): a file of its own, unlinked at once, known to the script by this descriptor.
    const payloadPath = join(opts.stateDir, `gate-${randomBytes(9).toString("hex")}`);
    const payload = openSync(payloadPath, "wx+", 0o600);
    unlinkSync(payloadPath);
    const payloadFd = 3 + fds.length;
    // The gate's pipe comes last: the script reads "go" from it, then the payload, then closes both with the others.
    const gateFd = payloadFd + 1;
    const args = [...baseArgs(fixed, egress), "--", "/bin/bash", "-c", gatedScript({ gate: gateFd, payload: payloadFd }, egress?.helper), "toolshed"];
    let child: ChildProcess;
    try {
      // The bwrap process gets an EMPTY environment: its /proc/<pid>/environ is visible inside.
      child = spawn(bin, args, {
        env: {},
        detached: true,
        stdio: [fixed.stdin ? "pipe" : "ignore", "pipe", "pipe", ...fds, payload, "pipe"],
        ...(hostIds ? { uid: hostIds.uid, gid: hostIds.gid } : {}),
      });
    } catch (e) {
      closeSync(payload);
      void cg?.remove();
      throw e;
    } finally {
      for (const fd of fds) closeSync(fd); // the child has its copies
    }
    // bwrap's pid 1 dies with its parent (--die-with-parent), and every process of the pid
    // namespace dies with pid 1: killing the group is enough to end them all.
    const pipe = child.stdio[gateFd] as Writable;
    pipe.on("error", () => {}); // bwrap gave up before the gate opened: its exit says why
    child.on("error", () => {}); // supervise() says why, when it runs
    const entered = cg ? gateInto(cg, child.pid) : (gate: Promise<boolean>) => gate;
    let handed = false;
    const alive = () => child.exitCode === null && child.signalCode === null;
    return {
      alive,
      async end() {
        if (!handed) closeSync(payload);
        handed = true;
        killGroup(child);
        await cg?.remove();
      },
      async run(spec) {
        if (handed) throw new Error("this sandbox was handed a run already");
        handed = true;
        try {
          writeSync(payload, gatePayload(spec), 0, undefined, 0); // read by the script only after "go"
        } finally {
          closeSync(payload);
        }
        if (cg) spec.onMemory?.({ limitMb: cg.memoryMb, oomKills: () => cg.oomKills() });
        const gate = { wait: entered(spec.gate ?? Promise.resolve(true)), open: () => pipe.end("go\n") };
        try {
          const exit = await supervise(child, spec, () => killGroup(child), (e) => (e.code === "ENOENT" ? new ToolError("UNAVAILABLE", INSTALL_HINT) : e), gate);
          return cg ? { ...exit, memory: { limitMb: cg.memoryMb, oomKills: cg.oomKills() } } : exit;
        } finally {
          await cg?.remove();
        }
      },
    };
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
    prestart: (fixed) => start(bwrap(), { ...fixed, stdin: false }, null),
  };
}

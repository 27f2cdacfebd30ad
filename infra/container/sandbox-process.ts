/**
 * The sandbox for hosts without namespaces: AWS Lambda, which refuses user namespaces,
 * chroot, ptrace and new seccomp filters, so bubblewrap cannot start there.
 *
 * There the boundary between tenants is the host: a Lambda function with tenant isolation
 * mode PER_TENANT gives each tenant its own Firecracker microVM, and the handler keeps only
 * the current workspace's files in it (`hostIsolated`). Inside, this sandbox gives every
 * command what can still be given without privileges:
 * - an empty environment plus a few variables (no credentials: the image's entrypoint
 *   removes the role's variables before the handler starts, and the role has no permissions);
 * - rlimits (memory, file size, processes, CPU, open files), as under bubblewrap;
 * - a fresh private HOME/TMPDIR per run, and the scratch directories (/tmp, /dev/shm)
 *   emptied after the run: nothing of one call is left for the next;
 * - every process of the command's uid killed when the call returns, found in /proc (not
 *   by process group: `setsid` cannot escape it), stopped first so a fork bomb cannot outrun it;
 * - a live sandbox (live-shell.ts) is one run whose command is the session's shell: its HOME,
 *   the scratch directories and its processes last until its end, where the reap and the wipe
 *   come; the handler runs nothing beside it (handler.ts), and Lambda gives the execution
 *   environment one invocation at a time, so no other session ever shares them;
 * - no network unless the host gives it: the function's egress is a deployment setting
 *   (`egress`); a call whose network setting the host cannot honour is refused, never run.
 * What it cannot hide: the image's own files (public, no secrets) are readable.
 * Never used where bubblewrap works; see infra/container/README.md, "On AWS Lambda".
 */
import { spawn } from "node:child_process";
import { existsSync, promises as fs, readFileSync } from "node:fs";
import { join } from "node:path";
import { ToolError } from "../../lib/shared/errors.js";
import { rawPath, readEntries, type DirEntry } from "./dir-entries.js";
import type { Sandbox } from "./sandbox-spec.js";
import { commandEnv, limitsScript } from "./sandbox-script.js";
import type { SandboxExit, SandboxSpec } from "./sandbox-spec.js";
import { supervise } from "./supervise.js";
import { processProbe, threadStates } from "./live-status.js";
import { sleep } from "../../lib/shared/sleep.js";

export type Ids = { uid: number; gid: number };

export interface ProcessSandboxOptions {
  /** Handler-private directory: each run gets a fresh HOME/TMPDIR below it, removed after the run. */
  stateDir: string;
  /**
   * What the host does with the function's network: "none" (no route out but to the sync
   * endpoint: a VPC without NAT) or "open". Commands without network need "none"; commands
   * with network need "open".
   */
  egress: "none" | "open";
  /** Run commands as this user (only a root handler can: tests). Default: the handler's own user. */
  runAs?: Ids | null;
  /** Directories a command can write outside its tree; their entries are removed after each run. */
  scratchDirs?: string[];
  /** Paths inside scratchDirs that are the handler's own and stay. */
  keep?: string[];
  /** A symlink repointed at the run's tree, and the path commands see it as (the image links /workspace to it). */
  workspace?: { link: string; path: string };
}


/** This process and its ancestors: the processes of our own user that must survive a reap. */
function selfAndAncestors(): Set<number> {
  const out = new Set<number>();
  for (let pid = process.pid; pid > 0 && !out.has(pid); ) {
    out.add(pid);
    try {
      // Field 4 of /proc/<pid>/stat, after the parenthesised name (which may hold spaces).
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      pid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    } catch {
      break;
    }
  }
  return out;
}

/**
 * Live processes whose real uid is `uid`, except `exclude`. A process is live while any of its
 * threads is: one whose first thread ended (pthread_exit) reads as a zombie in its status, and
 * runs on in its other threads.
 */
export async function processesOf(uid: number, exclude: Set<number>): Promise<number[]> {
  const pids: number[] = [];
  for (const name of await fs.readdir("/proc")) {
    if (!/^\d+$/.test(name) || exclude.has(Number(name))) continue;
    const status = await fs.readFile(`/proc/${name}/status`, "utf8").catch(() => "");
    const owner = /^Uid:\s+(\d+)/m.exec(status)?.[1];
    const state = /^State:\s+(\S)/m.exec(status)?.[1];
    if (owner === undefined || Number(owner) !== uid) continue;
    if ((state !== "Z" && state !== "X") || threadsLive(Number(name))) pids.push(Number(name));
  }
  return pids;
}

/** Whether a thread of `pid` is neither a zombie nor dead. */
const threadsLive = (pid: number) => threadStates(pid).some((t) => !"ZX".includes(t.state));

/** Kills every process of `uid` but `exclude`: stop them all (no more forks), then kill. */
export async function reap(uid: number, exclude: Set<number>, maxRounds = 200): Promise<void> {
  for (let round = 0; round < maxRounds; round++) {
    const pids = await processesOf(uid, exclude);
    if (pids.length === 0) return;
    for (const sig of ["SIGSTOP", "SIGKILL"] as const)
      for (const pid of pids) {
        try {
          process.kill(pid, sig);
        } catch {
          /* gone already */
        }
      }
    await sleep(round < 10 ? 1 : 20);
  }
  throw new ToolError("INTERNAL", `Processes of the command survived ${maxRounds} rounds of SIGKILL; this runner's execution environment should be recycled.`);
}

/**
 * Removes every entry of `dirs` except `keep` and the directories that lead to it. Names are
 * read as bytes (dir-entries.ts): an entry whose name is not UTF-8 is removed too.
 */
async function wipe(dirs: string[], keep: string[]): Promise<void> {
  const kept = (p: string) => keep.some((k) => k === p || k.startsWith(`${p}/`));
  for (const dir of dirs) {
    let entries: DirEntry[] = [];
    try {
      entries = readEntries(dir);
    } catch {
      continue;
    }
    const doomed = entries.filter((e) => e.name === null || !kept(join(dir, e.name))).map((e) => rawPath(dir, e.raw));
    await Promise.all(doomed.map((p) => fs.rm(p, { recursive: true, force: true }).catch(() => {})));
  }
}

/** Puts the HOME files (git's config and excludes) into a fresh HOME, owned by the command's user. */
async function writeHome(home: string, files: { path: string; text: string }[], owner: Ids | null): Promise<void> {
  for (const f of files) {
    const parts = f.path.split("/");
    for (let k = 1; k < parts.length; k++) {
      const d = join(home, ...parts.slice(0, k));
      await fs.mkdir(d, { recursive: true, mode: 0o755 });
      if (owner) await fs.chown(d, owner.uid, owner.gid);
    }
    const abs = join(home, f.path);
    await fs.writeFile(abs, f.text, { mode: 0o644 });
    if (owner) await fs.chown(abs, owner.uid, owner.gid);
  }
}

export function processSandbox(opts: ProcessSandboxOptions): Sandbox {
  const own = process.getuid?.() ?? 0;
  // A root handler must not run commands as root (and must not reap root's processes).
  const runAs: Ids | null = opts.runAs ?? (own === 0 ? { uid: 65533, gid: 65533 } : null);
  if (runAs?.uid === 0) throw new ToolError("INTERNAL", "The process sandbox never runs commands as root.");
  const uid = runAs?.uid ?? own;
  const exclude = runAs ? new Set<number>() : selfAndAncestors();
  let seq = 0;
  let queue: Promise<unknown> = Promise.resolve();

  async function runOne(spec: SandboxSpec): Promise<SandboxExit> {
    if (!spec.network && opts.egress !== "none")
      throw new ToolError("UNAVAILABLE", "Commands cannot run on this runner: it has no sandbox that can cut the network here, and its host allows egress. The operator must deploy the runner without egress (TOOLSHED_RUNNER_EGRESS=none), see infra/container/README.md.", { reason: "network_not_isolated" });
    if (spec.network && opts.egress === "none")
      throw new ToolError("UNAVAILABLE", "This API key allows network access, but the command runner has no egress. The operator must point TOOLSHED_RUNNER_FUNCTION_NETWORK at a runner deployed with egress; until then, run commands that need no network with a key without the network scope.", { reason: "no_egress" });
    // Nothing to set up ahead here: the gate is awaited first (SandboxSpec.gate).
    if (spec.gate && !(await spec.gate.catch(() => false))) return { exitCode: null, timedOut: false, killed: true, durationMs: 0 };
    const tmp = join(opts.stateDir, `run-${process.pid}-${++seq}`);
    await fs.mkdir(tmp, { recursive: true, mode: 0o700 });
    if (runAs) await fs.chown(tmp, runAs.uid, runAs.gid);
    await writeHome(tmp, spec.home ?? [], runAs);
    let root = spec.tree;
    if (opts.workspace) {
      await fs.rm(opts.workspace.link, { force: true });
      await fs.symlink(spec.tree, opts.workspace.link);
      root = opts.workspace.path;
    }
    const cwd = spec.cwd ? `${root}/${spec.cwd}` : root;
    try {
      const child = spawn("/bin/bash", ["-c", limitsScript(spec.limits, spec.timeoutMs), "toolshed", spec.command], {
        cwd,
        env: { ...commandEnv(tmp, spec.env), PWD: cwd },
        detached: true,
        stdio: [spec.stdin !== undefined || spec.input ? "pipe" : "ignore", "pipe", "pipe"],
        ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
      });
      return await supervise(child, spec, () => reap(uid, exclude), (e) => e);
    } finally {
      await fs.rm(tmp, { recursive: true, force: true });
      await wipe(opts.scratchDirs ?? [], opts.keep ?? []);
    }
  }

  return {
    runAs,
    hostIsolated: true,
    shellPath: (hostDir) => hostDir, // no mount namespace: the command sees the host path
    // A live sandbox's processes are all of the uid's but the handler's: the handler runs nothing beside it (handler.ts).
    liveProbe: async () => processProbe(() => processesOf(uid, exclude)),
    async check() {
      if (!existsSync("/bin/bash")) throw new ToolError("UNAVAILABLE", "The command runner image has no /bin/bash.");
      await fs.mkdir(opts.stateDir, { recursive: true, mode: 0o711 });
    },
    // One run at a time: the reap ends every process of the user, so runs cannot overlap
    // (a Lambda execution environment serves one invocation at a time anyway).
    run(spec) {
      const p = queue.then(() => runOne(spec));
      queue = p.catch(() => {});
      return p;
    },
  };
}

/**
 * A cgroup per bubblewrap sandbox (docs/runner-security.md, "Memory and processes per sandbox"):
 * every process of one sandbox, and the tmpfs pages of its /tmp and /dev/shm, under one memory
 * bound (RunLimits.sandbox_memory_mb; swap too where the knob exists) and one pids bound
 * (RunLimits.processes), so one sandbox running out of memory is OOM-killed inside its own cgroup,
 * never the runner nor another sandbox. Made where cgroup-place.ts finds room (v2, or v1's memory
 * and pids hierarchies); where none is writable sandboxes run without it (said once in the
 * runner's log). No process is spawned for any of it: a few file writes per run. Node only; Linux only.
 *
 * Its processes go in before the sandbox's gate opens (sandbox.ts): then every process of it is
 * bwrap's or the script waiting at the gate, and whatever they start later is born inside.
 */
import { existsSync, mkdirSync, readdirSync, readlinkSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { findCgroupPlace, type CgroupPlace } from "./cgroup-place.js";
import { processTree, readSync } from "./live-status.js";
import { sleep } from "../../lib/shared/sleep.js";

export interface SandboxCgroup {
  /** The memory bound, MiB. */
  readonly memoryMb: number;
  /** Moves `rootPid` and every process below it in, scanning again until a scan finds none new (none moved by an earlier call). */
  enter(rootPid: number): Promise<void>;
  /** How many processes of it the kernel's OOM killer killed so far (v2 memory.events, v1 memory.oom_control: oom_kill). */
  oomKills(): number;
  /** Kills what is left in it and removes it (its directories in every hierarchy). */
  remove(): Promise<void>;
}

export interface Cgroups {
  /** A new cgroup bounded to `memoryMb` MiB and `processes` processes; null where this runner has no place for one. */
  make(memoryMb: number, processes: number): SandboxCgroup | null;
}

const MiB = 1024 * 1024;
/** bwrap's own processes in the cgroup (the outer one and the namespace's init): the command keeps its `processes`. */
const BWRAP_OWN = 2;
/** A sandbox cgroup's name: toolshed-<pid namespace>-<runner pid>-<its start time>-<n>. */
const NAME = /^toolshed-(\d+)-(\d+)-(\d+)-\d+$/;
/** The inode of this process's pid namespace: a runner in another one (another container) has pids this one cannot look up. */
const pidNamespace = (): string => {
  try {
    return /\[(\d+)\]/.exec(readlinkSync("/proc/self/ns/pid"))?.[1] ?? "0";
  } catch {
    return "0";
  }
};
/**
 * Cgroups made by this process so far: their names' last part. One count for the whole process, since
 * a runner holds a Cgroups per execution environment (the local Invoke stand-in: one per tenant's
 * environment) and their names must never meet.
 */
let cgroupsMade = 0;

/** Field 22 of /proc/<pid>/stat (its start time, in ticks since boot): with the pid, names one process for good. */
const startOf = (pid: number | string): string => {
  const s = readSync(`/proc/${pid}/stat`);
  return s ? (s.slice(s.lastIndexOf(")") + 2).split(" ")[19] ?? "") : "";
};

/** Processes (v2 and v1: cgroup.procs) of a cgroup directory. */
const procsOf = (dir: string): number[] => readSync(join(dir, "cgroup.procs")).split("\n").filter(Boolean).map(Number);

/** The children of `pid` (each thread's /proc/<pid>/task/<tid>/children). */
function childrenOf(pid: number): number[] {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  return tids.flatMap((t) => readSync(`/proc/${pid}/task/${t}/children`).split(" ").filter(Boolean).map(Number));
}

/** `rootPid` and every process below it: by the children lists (a few reads), or a scan of /proc where the kernel has none (CONFIG_PROC_CHILDREN). */
async function treeOf(rootPid: number): Promise<number[]> {
  if (!existsSync(`/proc/self/task/${process.pid}/children`)) return (await processTree(rootPid)).map((p) => p.hostPid);
  const found: number[] = [];
  for (const queue = [rootPid]; queue.length; ) {
    const p = queue.shift()!;
    found.push(p);
    queue.push(...childrenOf(p));
  }
  return found;
}

/** Writes `text` to a knob of the cgroup, when the knob exists (v1 memsw is absent without swap accounting). */
const knob = (dir: string, name: string, text: string, optional = false) => {
  try {
    writeFileSync(join(dir, name), text);
  } catch (e) {
    if (!optional) throw e;
  }
};

/** Kills the processes of `dirs`' cgroups and removes them, waiting (up to `ms`) for the kernel to let them go. */
async function drop(dirs: string[], ms = 2000): Promise<boolean> {
  for (const until = Date.now() + ms; ; ) {
    for (const d of dirs) {
      knob(d, "cgroup.kill", "1", true); // v2 (5.14+): the kernel kills them all at once, forks included
      for (const pid of procsOf(d)) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          /* gone meanwhile */
        }
      }
    }
    const left = dirs.filter((d) => {
      try {
        rmdirSync(d);
        return false;
      } catch (e) {
        return (e as NodeJS.ErrnoException).code !== "ENOENT";
      }
    });
    if (!left.length) return true;
    if (Date.now() > until) return false;
    dirs = left;
    await sleep(5);
  }
}

function makeIn(place: CgroupPlace, name: string, memoryMb: number, processes: number): SandboxCgroup {
  const v2 = place.version === 2;
  const memory = join(place.memory, name);
  const pids = place.pids && place.pids !== place.memory ? join(place.pids, name) : null;
  const dirs = [memory, ...(pids ? [pids] : [])];
  const bytes = String(memoryMb * MiB);
  /** The processes moved in so far: a second enter() writes only those new since. */
  const moved = new Set<number>();
  /** The directories this call made: only these are dropped when it fails (one that existed is another sandbox's). */
  const made: string[] = [];
  try {
    for (const d of dirs) {
      mkdirSync(d); // the kernel fills it with the controllers' files
      made.push(d);
    }
    if (v2) {
      knob(memory, "memory.max", bytes);
      knob(memory, "memory.swap.max", "0", true);
      if (place.pids) knob(memory, "pids.max", String(processes + BWRAP_OWN));
    } else {
      knob(memory, "memory.limit_in_bytes", bytes);
      knob(memory, "memory.memsw.limit_in_bytes", bytes, true); // memory + swap: no swap beyond the bound
      if (pids) knob(pids, "pids.max", String(processes + BWRAP_OWN));
    }
  } catch (e) {
    void drop(made);
    throw e;
  }
  return {
    memoryMb,
    async enter(rootPid) {
      for (let round = 0; round < 50; round++) {
        const fresh = (await treeOf(rootPid)).filter((p) => !moved.has(p));
        if (!fresh.length) return;
        for (const p of fresh) {
          for (const d of dirs) {
            try {
              writeFileSync(join(d, "cgroup.procs"), String(p));
            } catch (e) {
              if ((e as NodeJS.ErrnoException).code !== "ESRCH") throw e; // ended meanwhile
            }
          }
          moved.add(p);
        }
      }
      throw new Error("the sandbox's processes kept forking before its command started");
    },
    oomKills() {
      const text = readSync(join(memory, v2 ? "memory.events" : "memory.oom_control"));
      return Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0);
    },
    async remove() {
      if (!(await drop(dirs))) console.error(`cgroups: ${memory} could not be removed yet; a runner start after this runner's end sweeps it`);
    },
  };
}

/**
 * Removes the cgroups a runner that is gone left behind (a crash): those named after a process
 * (pid and start time, in this pid namespace) that no longer runs. Another runner's, still running
 * or in another pid namespace, are left alone.
 */
function sweep(place: CgroupPlace): number {
  let swept = 0;
  for (const parent of new Set([place.memory, place.pids].filter((d): d is string => d !== null))) {
    let names: string[];
    try {
      names = readdirSync(parent);
    } catch {
      continue;
    }
    for (const n of names) {
      const m = NAME.exec(n);
      if (!m || m[1] !== pidNamespace() || startOf(m[2]!) === m[3]) continue; // not ours to judge, or its runner still runs
      void drop([join(parent, n)]);
      swept++;
    }
  }
  return swept;
}

/**
 * The runner's cgroups: their place found on first use (`find`: cgroup-place.ts; tests give their own),
 * leftovers of a crashed runner swept then, and a runner without a place says so once in its log.
 */
export function sandboxCgroups(opts: { find?: () => CgroupPlace | { none: string }; log?: (line: string) => void } = {}): Cgroups {
  const log = opts.log ?? ((line: string) => console.error(line));
  let place: CgroupPlace | null | undefined;
  const prefix = `toolshed-${pidNamespace()}-${process.pid}-${startOf(process.pid)}`;
  const found = (): CgroupPlace | null => {
    if (place !== undefined) return place;
    const p = (opts.find ?? findCgroupPlace)();
    if ("none" in p) {
      log(`cgroups: ${p.none}; sandboxes run without a memory and process bound per sandbox (only the per-process limits), see docs/runner-security.md`);
      return (place = null);
    }
    const swept = sweep(p);
    log(`cgroups: v${p.version}, one per sandbox under ${p.memory}${swept ? ` (${swept} left by an ended runner removed)` : ""}`);
    return (place = p);
  };
  return {
    make(memoryMb, processes) {
      const p = found();
      if (!p || memoryMb <= 0) return null;
      try {
        return makeIn(p, `${prefix}-${++cgroupsMade}`, memoryMb, processes);
      } catch (e) {
        log(`cgroups: a sandbox's cgroup could not be made under ${p.memory} (${(e as Error).message}); it runs without one`);
        return null;
      }
    },
  };
}

/**
 * What a sandbox's command waits for when it has a cgroup: every process of `rootPid` moved into `cg`,
 * and the run's own gate. The move starts at once, beside the sandbox's setup (a write to cgroup.procs
 * costs milliseconds on v1): what bwrap forks after it is born inside. The function returned takes the
 * run's gate (given at once, or later for a sandbox started ahead of its run: sandbox-spare.ts); once
 * it opens, a last scan moves what bwrap forked meanwhile, before the command may start. A move that
 * fails is logged and the command runs without the bound, as on a host without cgroups.
 */
export function gateInto(cg: SandboxCgroup, rootPid: number | undefined): (gate: Promise<boolean>) => Promise<boolean> {
  const failed = (e: Error) => console.error(`cgroups: a sandbox's processes could not be moved into its cgroup (${e.message}); it runs without its bound`);
  if (!rootPid) return (gate) => gate;
  const early = cg.enter(rootPid).then(() => true, (e: Error) => (failed(e), false));
  return async (gate) => {
    const go = await gate.finally(() => early);
    if (go && (await early)) await cg.enter(rootPid).catch(failed);
    return go;
  };
}

/**
 * A cgroup per bubblewrap sandbox (docs/runner-security.md, "Memory and processes per sandbox"):
 * every process of one sandbox, and the tmpfs pages of its /tmp and /dev/shm, under one memory
 * bound (RunLimits.sandbox_memory_mb; swap too where the knob exists) and one pids bound
 * (RunLimits.processes), so one sandbox running out of memory is OOM-killed inside its own cgroup,
 * never the runner nor another sandbox. Made inside its execution environment's parent
 * (environment-cgroup.ts: the CPU shared equally between environments, then between an environment's
 * sandboxes), where cgroup-place.ts finds room (v2, or v1's memory, pids and cpu hierarchies); where
 * none is writable sandboxes run without it (said once in the runner's log). No process is spawned
 * for any of it: a few file writes per run. Node only; Linux only.
 *
 * Its processes go in before the sandbox's gate opens (sandbox.ts): then every process of it is
 * bwrap's or the script waiting at the gate, and whatever they start later is born inside.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { findCgroupPlace, type CgroupPlace } from "./cgroup-place.js";
import { cgroupName, drop, knob, sweep } from "./cgroup-dirs.js";
import { makeEnvironmentCgroup, type EnvironmentCgroup } from "./environment-cgroup.js";
import { processTree, readSync } from "./live-status.js";

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

/** The cgroups of one execution environment's sandboxes. */
export interface Cgroups {
  /** A new cgroup bounded to `memoryMb` MiB and `processes` processes; null where this runner has no place for one. */
  make(memoryMb: number, processes: number): SandboxCgroup | null;
  /** The environment ends (its sandboxes have): its parent is removed, with anything left in it. A make after it starts a new parent. */
  close(): Promise<void>;
}

const MiB = 1024 * 1024;
/** bwrap's own processes in the cgroup (the outer one and the namespace's init): the command keeps its `processes`. */
const BWRAP_OWN = 2;

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

/** A sandbox's cgroup in `place` (its environment's parent): one directory per hierarchy; its CPU takes its share of the environment's (no knob). */
function makeIn(place: CgroupPlace, name: string, memoryMb: number, processes: number): SandboxCgroup {
  const v2 = place.version === 2;
  const memory = join(place.memory, name);
  /** Its directory in each hierarchy (v2: the one). */
  const dirs = [...new Set([place.memory, place.pids, place.cpu])].filter((d) => d !== null).map((d) => join(d, name));
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
    } else {
      knob(memory, "memory.limit_in_bytes", bytes);
      knob(memory, "memory.memsw.limit_in_bytes", bytes, true); // memory + swap: no swap beyond the bound
    }
    if (place.pids) knob(join(place.pids, name), "pids.max", String(processes + BWRAP_OWN));
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
 * One execution environment's sandbox cgroups: their place found on first use (`find`: cgroup-place.ts;
 * tests give their own), leftovers of a crashed runner swept then, and a runner without a place says
 * so once in its log; the environment's parent (environment-cgroup.ts) made with its first sandbox
 * and removed by close(). Where the parent cannot be made, its sandboxes' cgroups go directly in the
 * place, CPU not shared per environment, as the log says.
 */
export function sandboxCgroups(opts: { find?: () => CgroupPlace | { none: string }; log?: (line: string) => void } = {}): Cgroups {
  const log = opts.log ?? ((line: string) => console.error(line));
  let place: CgroupPlace | null | undefined;
  const found = (): CgroupPlace | null => {
    if (place !== undefined) return place;
    const p = (opts.find ?? findCgroupPlace)();
    if ("none" in p) {
      log(`cgroups: ${p.none}; sandboxes run without a memory and process bound per sandbox (only the per-process limits), see docs/runner-security.md`);
      return (place = null);
    }
    const swept = sweep([p.memory, p.pids, p.cpu]);
    const cpu = p.cpu ? `an equal CPU weight per execution environment (${p.version === 2 ? "cpu.weight" : "cpu.shares"})` : "no writable cpu controller, so CPU is not weighed per execution environment";
    log(`cgroups: v${p.version}, one per sandbox under ${p.memory}, inside its execution environment's; ${cpu}${swept ? ` (${swept} left by an ended runner removed)` : ""}`);
    return (place = p);
  };
  let env: EnvironmentCgroup | null = null;
  /** Where this environment's sandboxes go: its parent, made with its first sandbox. */
  let inside: CgroupPlace | undefined;
  const parent = (p: CgroupPlace): CgroupPlace => {
    if (inside) return inside;
    try {
      env = makeEnvironmentCgroup(p);
      if (p.cpu && !env.place.cpu) log(`cgroups: this execution environment's CPU weight could not be set under ${p.cpu}; its sandboxes run unweighed`);
      return (inside = env.place);
    } catch (e) {
      log(`cgroups: this execution environment's cgroup could not be made under ${p.memory} (${(e as Error).message}); its sandboxes' cgroups go directly there, CPU not shared per environment`);
      return (inside = { ...p, cpu: null });
    }
  };
  return {
    make(memoryMb, processes) {
      const p = found();
      if (!p || memoryMb <= 0) return null;
      const where = parent(p);
      try {
        return makeIn(where, cgroupName(), memoryMb, processes);
      } catch (e) {
        log(`cgroups: a sandbox's cgroup could not be made under ${where.memory} (${(e as Error).message}); it runs without one`);
        return null;
      }
    },
    async close() {
      const ending = env;
      env = null;
      inside = undefined;
      if (ending && !(await ending.remove())) log(`cgroups: ${ending.place.memory} could not be removed yet; a runner start after this runner's end sweeps it`);
    },
  };
}

/**
 * What a sandbox's command waits for when it has a cgroup: every process of `rootPid` moved into `cg`,
 * and the run's own gate (none: at once). The move starts at once, beside the run's setup (a write to
 * cgroup.procs costs milliseconds on v1): what bwrap forks after it is born inside; a last scan after the
 * run's gate moves what it forked meanwhile. A move that fails is logged and the command runs without
 * the bound, as on a host without cgroups.
 */
export async function gateInto(cg: SandboxCgroup, rootPid: number | undefined, gate: Promise<boolean> = Promise.resolve(true)): Promise<boolean> {
  const failed = (e: Error) => console.error(`cgroups: a sandbox's processes could not be moved into its cgroup (${e.message}); it runs without its bound`);
  if (!rootPid) return gate;
  const early = cg.enter(rootPid).then(() => true, (e: Error) => (failed(e), false));
  const go = await gate.finally(() => early);
  if (go && (await early)) await cg.enter(rootPid).catch(failed);
  return go;
}

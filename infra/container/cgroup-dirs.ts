/**
 * The runner's cgroup directories, whatever they hold (an execution environment's parent,
 * environment-cgroup.ts; a sandbox's, sandbox-cgroup.ts): names that say which runner process made
 * them and nothing of a tenant, a knob written, the processes of one listed, a cgroup and everything
 * below it killed and removed, and the sweep of what a crashed runner left. Node only; Linux only.
 */
import { readdirSync, readlinkSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readSync } from "./live-status.js";
import { opaqueName } from "./opaque-name.js";
import { sleep } from "../../lib/shared/sleep.js";

/**
 * A name this module made: toolshed-<pid namespace>-<runner pid>-<its start time>-<random> (a sandbox's),
 * or -env-<random> (an execution environment's parent). Only the runner process and 64 random bits
 * (opaque-name.ts: a sandbox may see its cgroup's name, and a count would tell it how many sandboxes
 * other tenants ran); never a tenant. Runners before it ended names with a count: matched too.
 */
const NAME = /^toolshed-(\d+)-(\d+)-(\d+)-(?:env-)?[0-9a-f]+$/;

/** The inode of this process's pid namespace: a runner in another one (another container) has pids this one cannot look up. */
const pidNamespace = (): string => {
  try {
    return /\[(\d+)\]/.exec(readlinkSync("/proc/self/ns/pid"))?.[1] ?? "0";
  } catch {
    return "0";
  }
};

/** Field 22 of /proc/<pid>/stat (its start time, in ticks since boot): with the pid, names one process for good. */
const startOf = (pid: number | string): string => {
  const s = readSync(`/proc/${pid}/stat`);
  return s ? (s.slice(s.lastIndexOf(")") + 2).split(" ")[19] ?? "") : "";
};

/** What every name of this process begins with (read once: neither changes while it runs). */
let ownPrefix: string | undefined;

/** A new name for a cgroup of this runner: a sandbox's, or (`environment`) an execution environment's parent. */
export function cgroupName(environment = false): string {
  ownPrefix ??= `toolshed-${pidNamespace()}-${process.pid}-${startOf(process.pid)}`;
  return opaqueName(`${ownPrefix}-${environment ? "env-" : ""}`); // random: every environment's names must never meet, and none may count
}

/** Processes (v2 and v1: cgroup.procs) of a cgroup directory. */
export const procsOf = (dir: string): number[] => readSync(join(dir, "cgroup.procs")).split("\n").filter(Boolean).map(Number);

/** Writes `text` to a knob of the cgroup, when the knob exists (v1 memsw is absent without swap accounting). */
export const knob = (dir: string, name: string, text: string, optional = false) => {
  try {
    writeFileSync(join(dir, name), text);
  } catch (e) {
    if (!optional) throw e;
  }
};

/** `dir` and the cgroups below it, the deepest first (the order they can be removed in). */
function deepestFirst(dir: string): string[] {
  let below: string[];
  try {
    below = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => join(dir, e.name));
  } catch {
    below = [];
  }
  return [...below.flatMap(deepestFirst), dir];
}

/** Kills the processes of `dirs`' cgroups (and of those below them) and removes them, waiting (up to `ms`) for the kernel to let them go. */
export async function drop(dirs: string[], ms = 2000): Promise<boolean> {
  dirs = dirs.flatMap(deepestFirst);
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

/**
 * Removes the cgroups a runner that is gone left behind (a crash) in `parents`, with whatever they
 * hold: those named after a process (pid and start time, in this pid namespace) that no longer runs.
 * Another runner's, still running or in another pid namespace, are left alone. Returns how many.
 */
export function sweep(parents: (string | null)[]): number {
  let swept = 0;
  for (const parent of new Set(parents.filter((d): d is string => d !== null))) {
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

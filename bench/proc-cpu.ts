/**
 * CPU time of processes from /proc (Linux): robust on a shared machine where latency is not.
 * `own`: utime + stime; `reaped`: also cutime + cstime, the CPU of children the process has waited
 * for (the runner's sandboxes: bwrap and the command, ended and reaped before the run answers).
 */
import { readdirSync, readFileSync } from "node:fs";

const TICK_MS = 10; // USER_HZ is 100 on Linux

/** CPU time (ms) of `pids`, by command name; `reaped`: with their reaped children's. Gone processes count 0. */
export function cpuOf(pids: number[], opts: { reaped?: boolean } = {}): { total: number; by: Record<string, number> } {
  let total = 0;
  const by: Record<string, number> = {};
  for (const p of pids) {
    try {
      const s = readFileSync(`/proc/${p}/stat`, "utf8");
      const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
      const ticks = Number(f[11]) + Number(f[12]) + (opts.reaped ? Number(f[13]) + Number(f[14]) : 0);
      const ms = ticks * TICK_MS;
      const comm = readFileSync(`/proc/${p}/comm`, "utf8").trim();
      total += ms;
      by[comm] = (by[comm] ?? 0) + ms;
    } catch {}
  }
  return { total, by };
}

/** CPU time (ms) of each thread of process `pid`, by thread id (empty when it is gone). */
export function threadsOf(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const s = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
      out[tid] = (Number(f[11]) + Number(f[12])) * TICK_MS;
    } catch {}
  }
  return out;
}

/** The command name of process `pid` ("" when it is gone). */
export function commOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return "";
  }
}

/** The whole machine's CPU time so far (ms, all cores summed), from /proc/stat: busy, idle, and idle waiting on I/O. */
export function machineCpu(): { busy: number; idle: number; iowait: number } {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = f;
  return { busy: (user + nice + system + irq + softirq + steal) * TICK_MS, idle: idle * TICK_MS, iowait: iowait * TICK_MS };
}

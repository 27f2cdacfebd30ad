/**
 * What a live sandbox holds, read from the host's /proc (LiveStatus, lib/sync/live-types.ts): the
 * processes below the sandbox's host process that live in its pid namespace (pid as seen inside,
 * command line), the TCP ports listening in its network namespace (/proc/<pid>/net/tcp{,6} of a
 * process inside), and their resident memory and CPU time. Node only; Linux only.
 */
import { promises as fs } from "node:fs";

export interface SandboxProcess {
  hostPid: number;
  /** The pid as the sandbox sees it (last NSpid entry); null: not in a namespace of its own (the outer bwrap). */
  pid: number | null;
  command: string;
  rssBytes: number;
  /** utime + stime + cutime + cstime, in ms. */
  cpuMs: number;
}

const PAGE = 4096;
const TICK_MS = 10; // USER_HZ is 100 on Linux

const read = (path: string) => fs.readFile(path, "utf8").catch(() => null);

/** Fields of /proc/<pid>/stat after the command name: [state, ppid, ...] (index 0 is field 3). */
async function statOf(pid: number): Promise<string[] | null> {
  const s = await read(`/proc/${pid}/stat`);
  if (!s) return null;
  return s.slice(s.lastIndexOf(")") + 2).split(" ");
}

/** Every process below `rootPid` (itself included), found by parent links in /proc. */
export async function processTree(rootPid: number): Promise<SandboxProcess[]> {
  const names = await fs.readdir("/proc").catch(() => [] as string[]);
  const parent = new Map<number, number>();
  const stats = new Map<number, string[]>();
  await Promise.all(
    names.map(async (n) => {
      if (!/^\d+$/.test(n)) return;
      const f = await statOf(Number(n));
      if (!f) return;
      parent.set(Number(n), Number(f[1]));
      stats.set(Number(n), f);
    }),
  );
  const children = new Map<number, number[]>();
  for (const [pid, pp] of parent) children.set(pp, [...(children.get(pp) ?? []), pid]);
  const tree: number[] = [];
  for (const queue = stats.has(rootPid) ? [rootPid] : []; queue.length; ) {
    const p = queue.shift()!;
    tree.push(p);
    queue.push(...(children.get(p) ?? []));
  }
  const out: SandboxProcess[] = [];
  for (const hostPid of tree) {
    const f = stats.get(hostPid)!;
    const [status, cmdline] = await Promise.all([read(`/proc/${hostPid}/status`), read(`/proc/${hostPid}/cmdline`)]);
    if (status === null) continue; // gone meanwhile
    const ns = /^NSpid:\s*(.*)$/m.exec(status)?.[1]?.trim().split(/\s+/).map(Number) ?? [];
    const cpuTicks = [11, 12, 13, 14].reduce((a, i) => a + (Number(f[i]) || 0), 0);
    out.push({
      hostPid,
      pid: ns.length > 1 ? ns[ns.length - 1]! : null,
      command: (cmdline ?? "").split("\0").filter(Boolean).join(" ").slice(0, 200),
      rssBytes: (Number(f[21]) || 0) * PAGE,
      cpuMs: cpuTicks * TICK_MS,
    });
  }
  return out;
}

/**
 * The processes of the pid namespace `hostPid` lives in, read from the sandbox's own /proc (through
 * /proc/<hostPid>/root: the procfs mount the sandbox cannot change), so only its few processes are
 * read, never the host's. `pid` is as seen inside; `hostPid` is not known here (0).
 */
export async function namespaceProcesses(hostPid: number): Promise<SandboxProcess[]> {
  const proc = `/proc/${hostPid}/root/proc`;
  const names = await fs.readdir(proc).catch(() => [] as string[]);
  const out: SandboxProcess[] = [];
  await Promise.all(
    names.map(async (n) => {
      if (!/^\d+$/.test(n)) return;
      const s = await read(`${proc}/${n}/stat`);
      if (!s) return;
      const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
      if (f[0] === "Z" || f[0] === "X") return;
      const cmdline = await read(`${proc}/${n}/cmdline`);
      const cpuTicks = [11, 12, 13, 14].reduce((a, i) => a + (Number(f[i]) || 0), 0);
      out.push({ hostPid: 0, pid: Number(n), command: (cmdline ?? "").split("\0").filter(Boolean).join(" ").slice(0, 200), rssBytes: (Number(f[21]) || 0) * PAGE, cpuMs: cpuTicks * TICK_MS });
    }),
  );
  return out.sort((a, b) => a.pid! - b.pid!);
}

/** TCP ports in LISTEN in the network namespace of `hostPid`. */
export async function listeningPorts(hostPid: number): Promise<number[]> {
  const ports = new Set<number>();
  for (const file of ["tcp", "tcp6"]) {
    const text = await read(`/proc/${hostPid}/net/${file}`);
    for (const line of (text ?? "").split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[3] === "0A") ports.add(parseInt(cols[1]!.split(":")[1]!, 16)); // 0A: TCP_LISTEN
    }
  }
  return [...ports].sort((a, b) => a - b);
}

/** The pid namespace of a process ("pid:[4026532xyz]"), or null when it is gone or not ours to read. */
export async function pidNamespaceOf(hostPid: number): Promise<string | null> {
  return fs.readlink(`/proc/${hostPid}/ns/pid`).catch(() => null);
}

/** Whether any live (not zombie) process is left in the pid namespace `ns`. */
export async function namespaceInUse(ns: string): Promise<boolean> {
  const names = await fs.readdir("/proc").catch(() => [] as string[]);
  for (const n of names) {
    if (!/^\d+$/.test(n) || (await pidNamespaceOf(Number(n))) !== ns) continue;
    const f = await statOf(Number(n));
    if (f && f[0] !== "Z" && f[0] !== "X") return true;
  }
  return false;
}

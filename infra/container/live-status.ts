/**
 * What a live sandbox holds, read from the host's /proc (LiveStatus, lib/sync/live-types.ts): its
 * processes (pid as the sandbox sees it, command line, resident memory, CPU time), the TCP ports
 * listening in it, and when nothing of it is left. Each kind of sandbox says what "its" means
 * (Sandbox.liveProbe): under bubblewrap, the processes of the sandbox's pid namespace and the
 * ports of its network namespace (`namespaceProbe`); under the process sandbox (Lambda), the
 * processes of the commands' uid and the LISTEN sockets they hold (`processProbe`).
 * Node only; Linux only.
 */
import { promises as fs, readdirSync, readFileSync } from "node:fs";
import { sleep } from "../../lib/shared/sleep.js";

export interface SandboxProcess {
  hostPid: number;
  /** The pid as the sandbox sees it (last NSpid entry); null: not in a namespace of its own (the outer bwrap). */
  pid: number | null;
  command: string;
  rssBytes: number;
  /** utime + stime + cutime + cstime, in ms. */
  cpuMs: number;
}

/** What a live sandbox holds, as its kind of sandbox finds it (Sandbox.liveProbe). */
export interface LiveProbe {
  /** Its live (not zombie) processes; `pid` as the sandbox's commands see it. */
  processes(): Promise<SandboxProcess[]>;
  /** The TCP ports in LISTEN that its commands can reach and that are its own. */
  ports(): Promise<number[]>;
  /** Resolves once no process of it is left, or after `ms` (what ends it has killed them: this waits for the kernel to be done). */
  emptied(ms: number): Promise<void>;
  /**
   * The host pids of every process of it that runs what the commands chose, zombies too (one whose
   * first thread ended may still run others): what hold-still.ts stops. A process cannot leave the
   * set (a namespace, a uid), so a scan taken while they are all stopped finds them all.
   */
  pids(): Promise<number[]>;
}

const PAGE = 4096;
const TICK_MS = 10; // USER_HZ is 100 on Linux

const read = (path: string) => fs.readFile(path, "utf8").catch(() => null);

/** A file of /proc (or a cgroup's) read now ("" when gone). */
export function readSync(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

/** The thread ids of a process ([] when gone). */
function tasksOf(pid: number): string[] {
  try {
    return readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
}

/** Each thread of `pid` with its state letter (R, S, D, T, t, Z, X...), read now; [] when gone. */
export const threadStates = (pid: number): { tid: string; state: string }[] =>
  tasksOf(pid).flatMap((tid) => {
    const s = readSync(`/proc/${pid}/task/${tid}/stat`);
    return s ? [{ tid, state: s[s.lastIndexOf(")") + 2] ?? "X" }] : [];
  });

/** The number of the system call a thread is blocked in (/proc/<pid>/task/<tid>/syscall), or null (running, or gone). */
export function blockedIn(pid: number, tid: string): number | null {
  const first = readSync(`/proc/${pid}/task/${tid}/syscall`).split(" ")[0];
  return first && /^\d+$/.test(first) ? Number(first) : null;
}

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

/** A process as read from `proc` (a procfs mount) under the name `n`; null when gone or a zombie. */
async function processAt(proc: string, n: number, hostPid: number): Promise<SandboxProcess | null> {
  const [s, cmdline] = await Promise.all([read(`${proc}/${n}/stat`), read(`${proc}/${n}/cmdline`)]);
  if (!s) return null;
  const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
  if (f[0] === "Z" || f[0] === "X") return null;
  const cpuTicks = [11, 12, 13, 14].reduce((a, i) => a + (Number(f[i]) || 0), 0);
  return { hostPid, pid: n, command: (cmdline ?? "").split("\0").filter(Boolean).join(" ").slice(0, 200), rssBytes: (Number(f[21]) || 0) * PAGE, cpuMs: cpuTicks * TICK_MS };
}

/**
 * The processes of the pid namespace `hostPid` lives in, read from the sandbox's own /proc (through
 * /proc/<hostPid>/root: the procfs mount the sandbox cannot change), so only its few processes are
 * read, never the host's. `pid` is as seen inside; `hostPid` is not known here (0).
 */
async function namespaceProcesses(hostPid: number): Promise<SandboxProcess[]> {
  const proc = `/proc/${hostPid}/root/proc`;
  const names = (await fs.readdir(proc).catch(() => [] as string[])).filter((n) => /^\d+$/.test(n));
  const out = await Promise.all(names.map((n) => processAt(proc, Number(n), 0)));
  return out.filter((p): p is SandboxProcess => p !== null).sort((a, b) => a.pid! - b.pid!);
}

/** TCP ports in LISTEN in the network namespace of `pid` (/proc/<pid>/net/tcp{,6}); with `inodes`, only those sockets'. */
async function listeningPorts(pid: number, inodes?: Set<string>): Promise<number[]> {
  const ports = new Set<number>();
  for (const text of await Promise.all(["tcp", "tcp6"].map((file) => read(`/proc/${pid}/net/${file}`)))) {
    for (const line of (text ?? "").split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      // 0A: TCP_LISTEN; column 9 is the socket's inode
      if (cols[3] === "0A" && (!inodes || inodes.has(cols[9]!))) ports.add(parseInt(cols[1]!.split(":")[1]!, 16));
    }
  }
  return [...ports].sort((a, b) => a - b);
}

/** Adds the socket inodes `pid` holds open (its `socket:[inode]` links in /proc/<pid>/fd) to `into`. */
async function socketInodes(pid: number, into: Set<string>): Promise<void> {
  const fds = await fs.readdir(`/proc/${pid}/fd`).catch(() => [] as string[]);
  await Promise.all(
    fds.map(async (fd) => {
      const m = /^socket:\[(\d+)\]$/.exec(await fs.readlink(`/proc/${pid}/fd/${fd}`).catch(() => ""));
      if (m) into.add(m[1]!);
    }),
  );
}


/**
 * A bubblewrap sandbox's: `hostPid` the outer bwrap, `shellPid` the loop shell's pid inside. Its
 * processes are those of the loop's pid namespace, its ports those of its network namespace, and
 * it is gone once its pid namespace is empty (its init dies after the outer bwrap, and takes the rest).
 */
export async function namespaceProbe(hostPid: number, shellPid: number): Promise<LiveProbe> {
  const tree = await processTree(hostPid);
  const loop = tree.find((p) => p.pid === shellPid)?.hostPid ?? 0;
  const init = tree.find((p) => p.pid === 1)?.hostPid ?? 0;
  const ns = loop ? await pidNamespaceOf(loop) : null;
  return {
    processes: async () => (loop ? namespaceProcesses(loop) : []),
    ports: async () => (loop ? listeningPorts(loop) : []),
    async emptied(ms) {
      for (const until = Date.now() + ms; ns && Date.now() < until && (await namespaceInUse(ns)); ) await sleep(10);
    },
    pids: async () => (ns === null ? [] : init ? namespaceMembers(init, ns) : namespacePids(ns)),
  };
}

/**
 * The process sandbox's (no namespaces: Lambda): `pidsOf` lists the processes of the commands' uid
 * but the handler's own (the reap's list, sandbox-process.ts); one live sandbox at a time holds them
 * all. Its ports are the LISTEN sockets those processes hold, on the environment's loopback; it is
 * gone once no process of the uid is left.
 */
export function processProbe(pidsOf: () => Promise<number[]>): LiveProbe {
  return {
    async processes() {
      const out = await Promise.all((await pidsOf()).map((pid) => processAt("/proc", pid, pid)));
      return out.filter((p): p is SandboxProcess => p !== null).sort((a, b) => a.hostPid - b.hostPid);
    },
    async ports() {
      const pids = await pidsOf();
      const inodes = new Set<string>();
      await Promise.all(pids.map((pid) => socketInodes(pid, inodes)));
      // No namespaces: the handler's own network is theirs (read through its own /proc entry, which cannot vanish meanwhile).
      return inodes.size ? listeningPorts(process.pid, inodes) : [];
    },
    async emptied(ms) {
      for (const until = Date.now() + ms; Date.now() < until && (await pidsOf()).length; ) await sleep(10);
    },
    pids: pidsOf,
  };
}

/** The pid namespace of a process ("pid:[4026532xyz]"), or null when it is gone or not ours to read. */
async function pidNamespaceOf(hostPid: number): Promise<string | null> {
  return fs.readlink(`/proc/${hostPid}/ns/pid`).catch(() => null);
}

/** Host pids of `root` and of every process below it (zombies too), by the `children` of each of their threads. Synchronous: a few reads of /proc, each cheaper than a trip through the thread pool. */
function descendants(root: number): number[] {
  const out: number[] = [];
  for (let at = [root]; at.length; ) {
    out.push(...at);
    at = at.flatMap((pid) => tasksOf(pid).flatMap((t) => readSync(`/proc/${pid}/task/${t}/children`).split(" ").filter(Boolean).map(Number)));
  }
  return out;
}

/**
 * Host pids of the processes of the pid namespace whose init is `init`, zombies too: the init and
 * what is below it (an orphan becomes the init's child), read until they are as many as the
 * namespace's own /proc lists (through /proc/<init>/root: the procfs mount the sandbox cannot
 * change), since a process moved under another parent during one reading can be missed by it. It
 * reads only the sandbox's processes; after 10 readings that disagree, every host process's
 * namespace is read instead.
 */
async function namespaceMembers(init: number, ns: string): Promise<number[]> {
  for (let i = 0; i < 10; i++) {
    let listed: string[];
    try {
      listed = readdirSync(`/proc/${init}/root/proc`);
    } catch {
      return []; // the namespace is gone
    }
    const found = descendants(init);
    if (found.length === listed.filter((n) => /^\d+$/.test(n)).length) return found;
  }
  return namespacePids(ns);
}

/** Host pids of the processes in the pid namespace `ns` (zombies too). */
async function namespacePids(ns: string): Promise<number[]> {
  const names = (await fs.readdir("/proc").catch(() => [] as string[])).filter((n) => /^\d+$/.test(n));
  const found = await Promise.all(names.map(async (n) => ((await pidNamespaceOf(Number(n))) === ns ? Number(n) : null)));
  return found.filter((p) => p !== null);
}

/** Whether any live (not zombie) process is left in the pid namespace `ns`. */
async function namespaceInUse(ns: string): Promise<boolean> {
  const names = await fs.readdir("/proc").catch(() => [] as string[]);
  for (const n of names) {
    if (!/^\d+$/.test(n) || (await pidNamespaceOf(Number(n))) !== ns) continue;
    const f = await statOf(Number(n));
    if (f && f[0] !== "Z" && f[0] !== "X") return true;
  }
  return false;
}

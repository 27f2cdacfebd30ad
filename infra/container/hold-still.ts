/**
 * A live sandbox held still while the runner reads or changes its tree (docs/runner-security.md,
 * "A live sandbox holds still while the runner works on its tree").
 *
 * Between commands a live sandbox's background processes keep running, and the runner's own work
 * on the tree (the write-back's walk and reads, the sync-in's downloads, links and removals, the
 * settle) goes by path, as root on a local runner. A process that swaps a directory for a symlink
 * between two of those steps would make the runner read a host file into the workspace, or write
 * a downloaded file into a host directory. So every process of the sandbox is stopped (SIGSTOP, which
 * no process can catch or ignore) until one scan finds none of their threads running, the work is
 * done, and those stopped here are continued (SIGCONT). A process already stopped (by the command)
 * is left as it is. Node only; Linux only.
 */
import { blockedIn, threadStates } from "./live-status.js";

/** Resumes what holdStill stopped. */
export type Resume = () => void;

const turn = () => new Promise((r) => setImmediate(r));
const millisecond = () => new Promise((r) => setTimeout(r, 1));
/**
 * How long the threads just stopped are read every turn of the event loop (a stop takes effect
 * within microseconds on an idle core); after it, once a millisecond: on a busy machine a stopped
 * process waits for a core before it stops (10 ms and more at load 17), and reading it every turn
 * meanwhile only took a core from it (58 turns a hold, most of the runner's CPU per live command).
 */
const SPIN_MS = 1;

/**
 * The system calls (by process.arch) a thread sleeps in uninterruptibly (D) while the child it
 * made by vfork (posix_spawn, Python's subprocess) is stopped before its exec: fork, vfork, clone,
 * clone3. Such a thread is still: with its SIGSTOP pending, none of them makes a process
 * (copy_process gives up on a pending signal) or returns to the program before it stops.
 */
const SPAWN_CALLS: Record<string, number[]> = { x64: [56, 57, 58, 435], arm64: [220, 435] };

/** Whether any thread of `pid` can still run: not stopped (T), traced (t), dead (Z, X), nor waiting on a stopped vfork child. A process gone counts as still. */
const running = (pid: number) =>
  threadStates(pid).some((t) => !"TtZX".includes(t.state) && !(t.state === "D" && SPAWN_CALLS[process.arch]?.includes(blockedIn(pid, t.tid) ?? -1)));

/**
 * Stops every process `pids()` lists, scanning again until a scan finds each one stopped (a fork
 * made before its parent stopped is found by the next scan; a thread in a system call stops when it
 * returns). Between two scans only the threads of the processes just sent SIGSTOP are read, until
 * they hold still (every turn for SPIN_MS, then once a millisecond): a scan lists every process of
 * the sandbox (under bubblewrap, the pid namespace's whole tree from /proc), and one per turn while
 * a stop took effect was most of a live command's CPU on the runner (6.7 scans per hold at load
 * 16, docs/benchmarks/investigations-live.md); a hold takes two when nothing forks meanwhile.
 * Resolves with the resume, or null when they did not all stop within `waitMs`, or when the first
 * scan finds no process at all (a live sandbox always has its shell: one that cannot be seen cannot
 * be shown to hold still). The caller then ends the sandbox; what was stopped is resumed first.
 * `counts` (tests): the scans, and the readings between them.
 */
export async function holdStill(pids: () => Promise<number[]>, waitMs = 5000, counts?: { scans: number; readings: number }): Promise<Resume | null> {
  const stopped = new Set<number>();
  const resume: Resume = () => {
    for (const pid of stopped) {
      try {
        process.kill(pid, "SIGCONT");
      } catch {
        /* gone meanwhile */
      }
    }
  };
  /** SIGSTOP to each of `pids` (again to one still running: a process of the sandbox may have continued it). */
  const stop = (pids: number[]) => {
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGSTOP");
        stopped.add(pid);
      } catch {
        /* gone meanwhile */
      }
    }
  };
  const until = Date.now() + waitMs;
  for (let first = true; ; first = false) {
    const all = await pids();
    if (counts) counts.scans++;
    if (first && all.length === 0) return null;
    let moving = all.filter(running);
    if (moving.length === 0) return resume;
    // Until those stop: what they made before stopping, or continued, is found by the next scan.
    const from = performance.now();
    while (moving.length) {
      if (Date.now() > until) return resume(), null;
      stop(moving);
      await (performance.now() - from < SPIN_MS ? turn() : millisecond());
      if (counts) counts.readings++;
      moving = moving.filter(running);
    }
  }
}

/**
 * Runs `work` while every process `pids()` lists holds still (holdStill), and continues them after it;
 * when they do not all stop, `end()` them first: nothing of them runs during the work either way.
 */
export async function whileStill<T>(pids: () => Promise<number[]>, end: () => Promise<unknown>, work: () => Promise<T>): Promise<T> {
  const resume = await holdStill(pids);
  if (!resume) await end();
  try {
    return await work();
  } finally {
    resume?.();
  }
}

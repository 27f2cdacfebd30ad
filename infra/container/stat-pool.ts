/**
 * lstat of many paths at once, spread over worker threads: the walk after every run
 * (walk.ts) stats every file of the tree. On 10,000 files that was ~75 ms of a ~140 ms warm
 * run, one system call plus one BigIntStats (and its garbage) per file on the one thread.
 * Worker threads make the calls side by side and hand back plain values (mode, size, the
 * fingerprint string), so the main thread only collects them.
 *
 * One implementation: STAT_SOURCE is the code both the workers and the in-thread path run
 * (a tree too small to be worth a message, a machine with one core, a pool that failed).
 */
import { lstatSync } from "node:fs";
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";

/** What lstat said of each path, by index: mode and size, the fingerprint (tree.ts `fingerprint`), or the error's code. */
export interface Stats {
  mode: number[];
  size: number[];
  /** inode:size:mtime:ctime (ns), exactly as tree.ts `fingerprint` writes it. */
  fp: string[];
  /** Hard links of each path (a file with more than one is changed through any of its names: change-journal.ts). */
  nlink: number[];
  /** Index → error code (ENOENT, ENOTDIR, …) for the paths lstat failed on. */
  err: Record<number, string>;
}

/** `statAll(lstatSync, paths)`: the one place the stats are taken (plain JavaScript: it also runs as a worker's source). */
const STAT_SOURCE = `function statAll(lstatSync, paths) {
  const out = { mode: new Array(paths.length), size: new Array(paths.length), fp: new Array(paths.length), nlink: new Array(paths.length), err: {} };
  for (let i = 0; i < paths.length; i++) {
    let st;
    try {
      st = lstatSync(paths[i], { bigint: true });
    } catch (e) {
      out.err[i] = (e && e.code) || String(e);
      out.mode[i] = 0;
      out.size[i] = 0;
      out.fp[i] = "";
      out.nlink[i] = 0;
      continue;
    }
    out.mode[i] = Number(st.mode);
    out.size[i] = Number(st.size);
    out.nlink[i] = Number(st.nlink);
    out.fp[i] = st.ino + ":" + st.size + ":" + st.mtimeNs + ":" + st.ctimeNs;
  }
  return out;
}`;

const WORKER_SOURCE = `"use strict";
const { parentPort } = require("node:worker_threads");
const { lstatSync } = require("node:fs");
${STAT_SOURCE}
parentPort.on("message", (m) => parentPort.postMessage({ id: m.id, stats: statAll(lstatSync, m.paths) }));`;

const statAll = new Function("lstatSync", "paths", `${STAT_SOURCE}\nreturn statAll(lstatSync, paths);`) as (l: typeof lstatSync, paths: string[]) => Stats;

/** Below this many paths a batch is stated in the calling thread: a message costs more than it saves. */
export const MIN_PARALLEL = 512;

type Pending = { paths: string[]; worker: Worker; resolve: (s: Stats) => void };

class StatPool {
  private readonly workers: Worker[] = [];
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private turn = 0;
  private broken = false;

  constructor(private readonly size: number) {}

  /** Stats `paths` in the pool (in-thread when the pool is off or broken). */
  stat(paths: string[]): Promise<Stats> {
    if (this.inThread(paths)) return Promise.resolve(statAll(lstatSync, paths));
    const w = this.worker(this.turn++ % this.size);
    const id = this.nextId++;
    return new Promise<Stats>((resolve) => {
      this.pending.set(id, { paths, worker: w, resolve });
      w.ref(); // a batch under way keeps the process alive, an idle worker does not
      w.postMessage({ id, paths });
    });
  }

  /**
   * Stats `paths` in parts side by side: one per worker, and the last one in the calling
   * thread meanwhile (it would only wait). The parts come back in order.
   */
  spread(paths: string[]): Promise<Stats[]> {
    if (this.inThread(paths)) return Promise.resolve([statAll(lstatSync, paths)]);
    const per = Math.ceil(paths.length / (this.size + 1));
    const parts: Promise<Stats>[] = [];
    for (let i = 0; i < this.size; i++) parts.push(this.stat(paths.slice(i * per, (i + 1) * per)));
    parts.push(Promise.resolve(statAll(lstatSync, paths.slice(this.size * per))));
    return Promise.all(parts);
  }

  /** The pool is off or broken, or the batch too small to be worth a message. */
  private inThread(paths: string[]): boolean {
    return this.size < 1 || this.broken || paths.length < MIN_PARALLEL;
  }

  /** Stops the workers; later batches are stated in-thread. */
  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }

  private worker(i: number): Worker {
    const existing = this.workers[i];
    if (existing) return existing;
    const w = new Worker(WORKER_SOURCE, { eval: true });
    w.on("message", (m: { id: number; stats: Stats }) => {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      p?.resolve(m.stats);
      if (![...this.pending.values()].some((q) => q.worker === w)) w.unref();
    });
    const fail = () => {
      // A worker that stopped: its batches (and every later one) are stated in-thread instead.
      this.broken = true;
      for (const p of this.pending.values()) p.resolve(statAll(lstatSync, p.paths));
      this.pending.clear();
    };
    w.on("error", fail);
    w.on("exit", fail);
    w.unref(); // idle: never keeps the process alive (after the listeners: attaching one refs the worker again)
    this.workers[i] = w;
    return w;
  }
}

/** Workers beside the main thread: one per other core, at most 3; none on one core. */
const poolSize = (): number => Math.min(3, availableParallelism() - 1);

let shared: StatPool | null = null;
/** The process's pool, made on first use. */
const sharedPool = (): StatPool => (shared ??= new StatPool(poolSize()));

/** Stats `paths` (absolute, never followed: lstat), side by side where the machine has cores for it. */
export const statPaths = (paths: string[]): Promise<Stats> => sharedPool().stat(paths);

/** Stats `paths` in parts side by side, the calling thread taking one (see StatPool.spread). */
export const statSpread = (paths: string[]): Promise<Stats[]> => sharedPool().spread(paths);

/** A pool of `size` workers (0: in-thread), for tests that compare both ways. */
export const statPool = (size: number): StatPool => new StatPool(size);

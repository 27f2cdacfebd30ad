/**
 * The runner's half of a cold sync in (#31 §2), in process: download() of a workspace's files into
 * a new slot's tree, the API replaced by frames already in memory (encoded and parsed as on the
 * wire), so what is timed is only the runner: parsing frames, creating directories and files,
 * hashing. With --floor, the same directories and files made with nothing else (mkdir, open, write,
 * close, in path order, no placement: the file system's floor). Prints wall time and the process's
 * user and system CPU per run: system CPU is the kernel's share (on ext4 without a journal, the
 * scan past recently freed inodes: infra/container/spread-dirs.ts), and it varies less with the
 * machine's load than wall time. The slot's root is os.tmpdir() (TMPDIR); every run's tree is
 * kept until the process ends (no deletes between runs).
 *
 *   node bench/run-bundled.mjs bench/cold-download.ts [--files=10000] [--runs=3] [--floor]
 */
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { download } from "../infra/container/download.js";
import { spreadDirectories } from "../infra/container/spread-dirs.js";
import type { ReconcileStats, Slot } from "../infra/container/tree.js";
import { encodeFrame, readFrames, type BatchFile } from "../lib/sync/batch.js";
import type { SyncClient, SyncEntry } from "../lib/sync/types.js";
import { pickFiles } from "./corpus.ts";

const arg = (name: string, dflt: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
const N = Number(arg("files", "10000"));
const RUNS = Number(arg("runs", "3"));
const FLOOR = process.argv.includes("--floor");
const files = pickFiles(N);
const enc = new TextEncoder();
const bytes = new Map(files.map((f) => [f.path, enc.encode(f.text)]));
const entries: SyncEntry[] = files.map((f) => ({ path: f.path, etag: `e-${f.path.length}`, size: bytes.get(f.path)!.length }));
let requests = 0;

const client = {
  async fetchMany(paths: string[]) {
    requests++;
    const frames = paths.map((p) => encodeFrame({ path: p, etag: `e-${p.length}`, size: bytes.get(p)!.length, bytes: bytes.get(p)! } as BatchFile));
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (const f of frames) c.enqueue(f);
        c.close();
      },
    });
    return readFrames(body, paths, true);
  },
  async fetch() {
    throw new Error("not in this bench");
  },
} as unknown as SyncClient;

/** The same directories and files made with nothing else: mkdir, open, write, close (the file system's floor). */
function floor(tree: string): void {
  const made = new Set<string>();
  for (const e of entries) {
    const dir = dirname(e.path);
    if (dir !== "." && !made.has(dir)) (mkdirSync(join(tree, dir), { recursive: true }), made.add(dir));
    const fd = openSync(join(tree, e.path), "wx", 0o644);
    writeSync(fd, bytes.get(e.path)!);
    closeSync(fd);
  }
}

const root = mkdtempSync(join(tmpdir(), "cold-download-"));
chmodSync(root, 0o711);
const times: number[] = [];
try {
  for (let r = 0; r < RUNS; r++) {
    const dir = join(root, `s${r}`);
    const tree = join(dir, "tree");
    mkdirSync(join(dir, "incoming"), { recursive: true });
    mkdirSync(tree);
    await spreadDirectories(tree, join(dir, "incoming")); // flagged before the timing; spread: true keeps download() from flagging it inside it
    const slot = { key: "k", dir, tree, files: new Map(), view: new Map(), synced: null, dirs: new Map(), listings: new Map(), modes: null, links: new Map(), spread: true, cold: true, busy: true, lastUsed: 0 } as unknown as Slot;
    const stats: ReconcileStats = { downloaded_files: 0, downloaded_bytes: 0, skipped: [], clean: false, entries: entries.length, whole: true };
    requests = 0;
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    if (FLOOR) floor(tree);
    else await download(slot, entries, client, null, stats);
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(c0);
    times.push(ms);
    console.error(`[cold-download] ${FLOOR ? "floor" : "download"} run ${r}: ${Math.round(ms)} ms (cpu user ${Math.round(cpu.user / 1000)} ms, system ${Math.round(cpu.system / 1000)} ms), ${stats.downloaded_files} files, ${stats.downloaded_bytes} bytes, ${requests} requests, skipped ${stats.skipped.length}`);
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
console.log(JSON.stringify({ files: N, runs: times.map(Math.round) }));

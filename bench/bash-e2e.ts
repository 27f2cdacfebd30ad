/**
 * bash rows of `npm run bench`, end to end as `npm start` runs it: the Worker calls the runner
 * (infra/container/local-server.ts, bundled by infra/container/build.mjs) through the Lambda
 * Invoke API, and the runner syncs the workspace through the Worker's /v1/sync.
 *   cold: first call after the runner started with an empty cache (the runner is restarted)
 *   warm: unchanged workspace
 *   one file changed: a tool wrote one file just before the call (sync cost = this - warm)
 *   command writes one file: the command changes a file each call (write-back; the next call
 *     reconciles in full, since the slot changed)
 */
import { randomBytes } from "node:crypto";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { measure, type Cell, type MeasureOptions } from "./stats.ts";
import type { ToolshedClient } from "./toolshed.ts";

/** Why bash cannot be benchmarked here, or null when it can. */
export function bashUnavailable(): string | null {
  if (!existsSync("functions/bash.ts")) return "n/a (tool missing)";
  try {
    execFileSync("sh", ["-c", "command -v bwrap"], { stdio: "ignore" });
  } catch {
    return "n/a (bubblewrap missing: apt-get install bubblewrap)";
  }
  return null;
}

/**
 * The local Invoke stand-in as its own process; restart() empties its cache (new root).
 * The roots of restarted runners are kept until stop(): deleting 10,000+ files right before a
 * cold sample would make that sample's file creates slow (ext4 skips recently deleted inodes when
 * it allocates, scanning the bitmap for each create), which a fresh production environment never
 * pays. The bench must not measure its own cleanup.
 */
export class LocalRunner {
  private child: ChildProcess | null = null;
  private root = "";
  private retired: string[] = [];
  readonly port: number;
  /** Node's own flags for the runner process (e.g. `--inspect=127.0.0.1:PORT` for a CPU profile of it: bench/cpu-live.ts). */
  private readonly nodeFlags: string[];
  /** TOOLSHED_RUNNER_SECRET of this runner: give the same value to the API (docs/runner-security.md). */
  readonly secret = randomBytes(24).toString("hex");
  constructor(port: number, nodeFlags: string[] = []) {
    this.port = port;
    this.nodeFlags = nodeFlags;
  }

  /** The runner process's id (its sandboxes are its children), while it runs. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The Worker's settings that wire it to this runner (its URL and secret), with a fresh sync secret (`name` its prefix) and the Worker's public URL on `port`. */
  workerVars(port: number, name = "bench"): Record<string, string> {
    return { TOOLSHED_SYNC_SECRET: `${name}-${Math.random().toString(36).slice(2)}-secret`, TOOLSHED_RUNNER_URL: this.url, TOOLSHED_RUNNER_SECRET: this.secret, TOOLSHED_PUBLIC_URL: `http://127.0.0.1:${port}` };
  }

  static build(): void {
    execFileSync(process.execPath, ["infra/container/build.mjs"], { stdio: ["ignore", "ignore", "inherit"] });
  }

  async start(): Promise<void> {
    this.root = mkdtempSync(join(tmpdir(), "toolshed-bench-runner-"));
    chmodSync(this.root, 0o711);
    const child = spawn(process.execPath, [...this.nodeFlags, "dist/container/local-server.mjs"], {
      stdio: ["ignore", "ignore", "inherit"],
      // The time-to-interactive bursts start 50 runs of one tenant at once: the stand-in's fair share (8 of 32 by
      // default: infra/container/tenant-share.ts) would refuse most of them, and Lambda has no per-tenant bound.
      env: { TOOLSHED_RUNNER_CONCURRENCY: "64", TOOLSHED_RUNNER_TENANT_CONCURRENCY: "64", ...process.env, TOOLSHED_INVOKE_PORT: String(this.port), TOOLSHED_RUNNER_ROOT: this.root, TOOLSHED_RUNNER_SECRET: this.secret },
      detached: true,
    });
    this.child = child;
    const until = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the runner exited (${child.exitCode})`);
      try {
        await fetch(`${this.url}/`);
        return;
      } catch {}
      if (Date.now() > until) throw new Error("the runner did not start");
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Stops the runner and deletes every root it used. */
  async stop(): Promise<void> {
    await this.halt();
    for (const root of [...this.retired, this.root]) if (root) rmSync(root, { recursive: true, force: true });
    this.retired = [];
    this.root = "";
  }

  /** A new runner on a new, empty root; the old root is deleted by stop(), not now (see the class). */
  async restart(): Promise<void> {
    await this.halt();
    if (this.root) this.retired.push(this.root);
    await this.start();
  }

  private async halt(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      try {
        process.kill(-child.pid!, "SIGTERM");
      } catch {}
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {}
    }
  }
}

export interface BashRow {
  op: string;
  size: number;
  cell: Cell;
  note?: string;
}

export async function benchBash(runner: LocalRunner, clients: Map<number, ToolshedClient>, opts: MeasureOptions): Promise<BashRow[]> {
  const rows: BashRow[] = [];
  for (const size of [100, 10_000].filter((s) => clients.has(s))) {
    const ts = clients.get(size)!;
    const echo = async () => {
      const r = await ts.call("bash", { command: "echo hi" });
      if (r.body.data?.stdout !== "hi\n") throw new Error(`unexpected output ${JSON.stringify(r.body.output)}`);
      return r.ms;
    };
    const coldN = size > 1000 ? 3 : 5;
    // The workspace was filled by raw uploads (plain): its first run seals it into packs when the
    // upper layer is large enough (docs/versions.md, "Automatic seal"). That run is its own row, not a cold sample.
    await runner.restart();
    const firstMs = await echo();
    rows.push({ op: "bash echo hi, first run", size, cell: { n: 1, p50: Math.round(firstMs), p99: Math.round(firstMs), mean: Math.round(firstMs), errors: 0 }, note: "runner restarted; the first run on the raw uploads (it seals them into packs from 256 files)" });
    const cold = await measure(async () => {
      await runner.restart();
      return echo();
    }, { ...opts, iterations: coldN, minIterations: coldN, warmup: 0, budgetMs: Infinity });
    rows.push({ op: "bash echo hi, cold", size, cell: cold, note: "runner restarted (new empty root; old roots deleted when the bench ends): whole workspace downloaded" });
    const warm = await measure(echo, opts);
    rows.push({ op: "bash echo hi, warm", size, cell: warm });
    const changed = await measure(async (i) => {
      await ts.call("write", { file_path: "zz-bench/bash-sync.txt", content: `changed ${i}\n` });
      return echo();
    }, opts);
    rows.push({
      op: "bash echo hi, 1 file changed",
      size,
      cell: changed,
      note: warm.n && changed.n ? `sync cost of a one-file change ~ ${(changed.p50 - warm.p50).toFixed(1)} ms (p50 - warm p50)` : undefined,
    });
    const writes = await measure(async (i) => {
      const r = await ts.call("bash", { command: `mkdir -p zz-bench && echo ${i} > zz-bench/bash-own.txt && echo hi` });
      if (r.body.data?.stdout !== "hi\n" || !r.body.data?.files_changed?.includes("zz-bench/bash-own.txt")) throw new Error(`unexpected result ${JSON.stringify(r.body.output)}`);
      return r.ms;
    }, opts);
    rows.push({
      op: "bash echo hi, command writes 1 file",
      size,
      cell: writes,
      note: warm.n && writes.n ? `write-back of one file + full reconcile ~ ${(writes.p50 - warm.p50).toFixed(1)} ms (p50 - warm p50)` : undefined,
    });
  }
  return rows;
}

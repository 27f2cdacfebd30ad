/**
 * A bubblewrap sandbox started ahead of its run (#31 §4, time to interactive): after a run ends, off
 * every call's path, the runner starts one spare sandbox on an empty tree of its own and leaves it at
 * its gate; the next run of the same tenant on a fresh slot (a new workspace, or a second run beside a
 * busy slot) whose sandbox would be started with the same fixed arguments takes it, and bwrap's setup
 * (namespaces, mounts, the cgroup's move, bash's start: ~25-30 ms of CPU here) is off that run's path.
 * docs/runner-security.md, "A sandbox started ahead of its run", says why this keeps every isolation rule:
 * - one spare per execution environment (per Spares: one per handler), and it belongs to the tenant of
 *   the run after which it was started: only that tenant's runs take it; another's replaces it later;
 * - it is taken only when everything fixed among bwrap's arguments is what the run would get (no
 *   network, no stdin, the tmpfs size, the cgroup's bounds, the HOME files, a shell scratch directory
 *   or none: `fitOf`); the run's command, working directory, environment and rlimits come through the
 *   gate (sandbox-script.ts); otherwise the run starts its own sandbox and the spare waits;
 * - its tree is a fresh empty directory and its /tmp and /dev/shm its own fresh tmpfs: nothing of an
 *   earlier run is in it; its cgroup is made and entered before its gate can open;
 * - it is ended after `waitMs` unused, when the handler closes, and with the runner (--die-with-parent).
 */
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import { join } from "node:path";
import { gitHomeFiles } from "../../lib/exec/git-identity.js";
import type { RunLimits, RunRequest } from "../../lib/exec/types.js";
import type { Sandbox } from "./sandbox-spec.js";
import type { StartedSandbox } from "./sandbox-spec.js";
import { makeShellDir } from "./shell-state.js";
import type { Owner } from "./tree.js";

/** How long a spare waits for a run before it is ended. */
export const SPARE_WAIT_MS = 60_000;

/** A spare taken by a run: its tree (the run's fresh slot's, stage.ts adoptTree), its shell scratch directory, and the sandbox (SandboxSpec.spare). */
export interface Spare {
  tree: string;
  shellDir: { path: string; drop(): Promise<void> } | null;
  sandbox: StartedSandbox;
}

interface Waiting extends Spare {
  tenant: string;
  fit: string;
  timer: NodeJS.Timeout;
}

/**
 * What a run's sandbox is started with, as far as a spare must match it (everything among bwrap's
 * arguments); null for a run no spare serves (network: its egress proxy is the run's own; stdin).
 */
export function fitOf(req: RunRequest, limits: RunLimits): string | null {
  if (req.network === true || req.stdin !== undefined || req.live) return null;
  return JSON.stringify([limits.tmp_mb, limits.sandbox_memory_mb, limits.processes, gitHomeFiles(req.git), req.shell !== undefined]);
}

export class Spares {
  private waiting: Waiting | null = null;
  private starting = false;
  private closed = false;

  /** `stageDir`: where a run's tree is during its run (stage.ts); the spare's tree is made there. */
  constructor(private readonly sandbox: Sandbox, private readonly stageDir: string, private readonly owner: Owner, private readonly waitMs = SPARE_WAIT_MS) {}

  /** The waiting spare, for this run's fresh slot, when it is this tenant's and fits the run exactly; else null (it waits on). */
  take(req: RunRequest, limits: RunLimits): Spare | null {
    const w = this.waiting;
    if (!w || w.tenant !== req.tenant || w.fit !== fitOf(req, limits) || !w.sandbox.alive()) return null;
    this.waiting = null;
    clearTimeout(w.timer);
    return { tree: w.tree, shellDir: w.shellDir, sandbox: w.sandbox };
  }

  /**
   * After a run ended (its answer sent): makes sure a spare fitting such runs of this tenant waits. One
   * that does already stays; another (another tenant's, another fit, or one whose bwrap ended) is ended first.
   */
  async after(req: RunRequest, limits: RunLimits): Promise<void> {
    const fit = fitOf(req, limits);
    if (this.closed || this.starting || fit === null || !this.sandbox.prestart) return;
    const w = this.waiting;
    if (w && w.tenant === req.tenant && w.fit === fit && w.sandbox.alive()) return;
    this.starting = true;
    try {
      if (w) await this.end(w);
      const tree = join(this.stageDir, randomBytes(9).toString("base64url"));
      await fs.mkdir(tree, { mode: 0o755 });
      if (this.owner) await fs.chown(tree, this.owner.uid, this.owner.gid);
      const shellDir = req.shell ? await makeShellDir(this.stageDir, this.owner) : null;
      let sandbox: StartedSandbox;
      try {
        sandbox = this.sandbox.prestart({ tree, home: gitHomeFiles(req.git), ...(shellDir ? { shellDir: shellDir.path } : {}), limits });
      } catch (e) {
        await Promise.all([fs.rm(tree, { recursive: true, force: true }), shellDir?.drop()]);
        throw e;
      }
      const spare: Waiting = { tenant: req.tenant, fit, tree, shellDir, sandbox, timer: setTimeout(() => void this.end(spare), this.waitMs).unref() };
      if (this.closed) await this.end(spare);
      else this.waiting = spare;
    } finally {
      this.starting = false;
    }
  }

  /** Ends the waiting spare (the handler's close). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.waiting) await this.end(this.waiting);
  }

  /** Ends a spare no run took: its sandbox, its tree and its shell scratch directory. */
  private async end(w: Waiting): Promise<void> {
    if (this.waiting === w) this.waiting = null;
    clearTimeout(w.timer);
    await w.sandbox.end();
    await Promise.all([fs.rm(w.tree, { recursive: true, force: true }), w.shellDir?.drop()]);
  }
}

/** Live-session tests: an in-process LiveChannel (a queue) and waits on conditions. */
import { readdirSync, readFileSync } from "node:fs";
import type { LiveChannel } from "../../../lib/sync/live-client.js";
import type { LiveEnded, LiveNext, LivePoll, LiveResultPost, LiveStatus } from "../../../lib/sync/live-types.js";
import type { ManifestAnswer, ManifestQuery } from "../../../lib/sync/manifest.js";
import { manifestAnswerBody } from "../../../lib/sync/manifest-wire.js";
import type { RunRequest, RunResult } from "../../../lib/exec/types.js";

/** Resolves once `cond` holds (checked every 20 ms), or fails after `ms`. */
export async function until<T>(cond: () => T | Promise<T>, what: string, ms = 20_000): Promise<NonNullable<T>> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await cond();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The API's side, in process: commands are queued by the test, results and the end collected. */
export class QueueChannel implements LiveChannel<RunRequest, RunResult> {
  private queue: LiveNext<RunRequest>[] = [];
  private wake: (() => void) | null = null;
  private waiting = new Map<number, (p: LiveResultPost<RunResult>) => void>();
  private seq = 0;
  statuses: LiveStatus[] = [];
  polls = 0;
  endedWith: LiveEnded | null = null;

  /** Set: every poll fails (the API unreachable). */
  failing = false;
  /**
   * Set: a command handed to a poll that carried a manifest query comes with the answer to it, made
   * after the command was taken from the queue (as lib/sync/live-server.ts does); null: none.
   */
  carry: ((q: ManifestQuery) => Promise<ManifestAnswer | null>) | null = null;
  /** Commands handed over with a manifest answer. */
  carried = 0;

  async next(poll: LivePoll, signal?: AbortSignal): Promise<LiveNext<RunRequest>> {
    const { manifest, ...status } = poll;
    this.statuses.push(status);
    this.polls++;
    if (this.failing) throw new Error("connect ECONNREFUSED");
    while (!this.queue.length) {
      await new Promise<void>((resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason);
        this.wake = resolve;
        signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
    }
    const n = this.queue.shift()!;
    const answer = "command" in n && manifest && this.carry ? await this.carry(manifest) : null;
    if (!answer || !("command" in n)) return n;
    this.carried++;
    return { command: { ...n.command, manifest: manifestAnswerBody(answer) } };
  }
  async result(p: LiveResultPost<RunResult>): Promise<void> {
    this.waiting.get(p.seq)?.(p);
  }
  async ended(e: LiveEnded): Promise<void> {
    this.endedWith = e;
  }

  push(n: LiveNext<RunRequest>): void {
    this.queue.push(n);
    this.wake?.();
  }

  /** Sends a command and waits for its answer. */
  send(request: RunRequest): Promise<LiveResultPost<RunResult>> {
    const seq = ++this.seq;
    const answered = new Promise<LiveResultPost<RunResult>>((r) => this.waiting.set(seq, r));
    this.push({ command: { seq, request } });
    return answered;
  }

  /** Sends a command; its RunResult (throws the error answer). */
  async run(request: RunRequest): Promise<RunResult & { status: LiveStatus }> {
    const p = await this.send(request);
    if (!p.response.ok) throw new Error(`${p.response.error.code}: ${p.response.error.message}`);
    return { ...p.response.result, status: p.status };
  }
}

/** Host pids of processes whose command line contains `text`. */
export function hostPids(text: string): number[] {
  const out: number[] = [];
  for (const n of readdirSync("/proc")) {
    if (!/^\d+$/.test(n)) continue;
    try {
      if (readFileSync(`/proc/${n}/cmdline`, "utf8").split("\0").join(" ").includes(text)) out.push(Number(n));
    } catch {
      /* gone */
    }
  }
  return out;
}

/** The parent of a host process. */
export function parentOf(pid: number): number {
  const s = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(s.slice(s.lastIndexOf(")") + 2).split(" ")[1]);
}

/** The outermost bwrap above `pid` (the sandbox process the runner spawned). */
export function sandboxOf(pid: number): number {
  let top = -1;
  for (let p = pid; p > 1; p = parentOf(p)) if (readFileSync(`/proc/${p}/comm`, "utf8").trim() === "bwrap") top = p;
  if (top < 0) throw new Error(`no bwrap above ${pid}`);
  return top;
}

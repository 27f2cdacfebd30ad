/**
 * Live-session tests: the container tests' setup with live sandboxes (liveSetup), an in-process
 * LiveChannel (a queue) and waits on conditions.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { HandlerOptions } from "../../../infra/container/handler.js";
import type { LiveChannel } from "../../../lib/sync/live-client.js";
import type { LiveEnded, LiveNext, LivePoll, LiveResultPost, LiveSpec, LiveStatus } from "../../../lib/sync/live-types.js";
import type { ManifestAnswer, ManifestQuery } from "../../../lib/sync/manifest.js";
import { manifestAnswerBody } from "../../../lib/sync/manifest-wire.js";
import type { ExecResponse } from "../../../lib/sync/types.js";
import type { RunRequest, RunResult } from "../../../lib/exec/types.js";
import { expect } from "vitest";
import { setup } from "./helpers.js";

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
  /** The runner's requests in order: `next`, `result` (an answer alone), `result+poll` (an answer that is also the next poll), `ended`. */
  log: string[] = [];
  /** Set: an API that predates LiveResultPost.poll: an answer is recorded and answered 204 (null) whatever it carries; the runner polls. */
  old = false;

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
    this.log.push("next");
    return this.poll(poll, signal);
  }

  private async poll(poll: LivePoll, signal?: AbortSignal): Promise<LiveNext<RunRequest>> {
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
  /** As the API: the answer recorded first (once: a command's caller hears its first), then the poll it carries served as `next`. */
  async result(p: LiveResultPost<RunResult>, signal?: AbortSignal): Promise<LiveNext<RunRequest> | null> {
    const { poll, ...post } = p;
    this.log.push(poll && !this.old ? "result+poll" : "result");
    this.waiting.get(p.seq)?.(post);
    this.waiting.delete(p.seq);
    return poll && !this.old ? this.poll({ ...p.status, ...(poll.manifest ? { manifest: poll.manifest } : {}) }, signal) : null;
  }
  async ended(e: LiveEnded): Promise<void> {
    this.log.push("ended");
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

/** One live sandbox, started as the API's Event invocation would, taking its commands from its own QueueChannel. */
export interface LiveSandbox {
  generation: string;
  channel: QueueChannel;
  /** Resolves with its LiveEnded when it ends (rejects with the error answer). */
  ended: Promise<LiveEnded>;
  /** Runs a command in it; its RunResult (throws the error answer). */
  cmd(command: string, x?: Partial<RunRequest>): Promise<RunResult & { status: LiveStatus }>;
  /** Ends it as a deleted session would; its LiveEnded. */
  end(): Promise<LiveEnded>;
}

/**
 * The container tests' setup (helpers.ts) for live sandboxes: the runner takes each sandbox's
 * commands from the QueueChannel of its generation, and counts a channel lost after two failed
 * attempts 10 ms apart. `startLive` starts a sandbox (idle 60 s, 120 s at most, unless `live` says
 * otherwise); its `ended` rejects with the refusal (the error answer as `error`). `inTree` tells
 * whether a path is in a live sandbox's tree now (under the handler's root: `opts.root` or the setup's).
 */
export function liveSetup(opts: Partial<HandlerOptions> = {}, tenant?: string, workspace?: string) {
  const channels = new Map<string, QueueChannel>();
  const t = setup({ liveChannel: (req) => channels.get(req.live!.generation)!, liveRetry: { attempts: 2, firstDelayMs: 10 }, ...opts }, tenant, workspace);
  let gen = 0;
  function startLive(live: Partial<LiveSpec> = {}, extra: Partial<RunRequest> = {}): LiveSandbox {
    const generation = `g${++gen}`;
    const channel = new QueueChannel();
    channels.set(generation, channel);
    const event = t.req("", { live: { generation, idle_ms: 60_000, max_life_ms: 120_000, ...live }, ...extra });
    const ended = t.handler(event, { tenantId: event.tenant }).then((r: ExecResponse) => {
      if (!r.ok) throw Object.assign(new Error(`${r.error.code}: ${r.error.message}`), { error: r.error });
      return r.result as LiveEnded;
    });
    const cmd = (command: string, x: Partial<RunRequest> = {}) => channel.run(t.req(command, x));
    const end = () => (channel.push({ end: "deleted" }), ended);
    return { generation, channel, ended, cmd, end };
  }
  const stage = join(opts.root ?? t.root, "ws");
  /** A path as a live sandbox's tree holds it now (the tree is staged under <root>/ws while it lives). */
  const inTree = (path: string) => readdirSync(stage).some((d) => existsSync(join(stage, d, path)));
  return { t, startLive, inTree, stage };
}

/**
 * One scenario both sandbox kinds must pass: a tool's edit between two commands is in the tree
 * before the next runs; what background processes write between commands is written back at the
 * next command's end, and at the sandbox's end. `sleeper`: a `sleep N` left running, reported lost.
 * Returns the sandbox's LiveEnded (the caller checks its kind's cleanup).
 */
export async function toolEditsAndBackgroundWrites({ t, startLive, inTree, stage }: ReturnType<typeof liveSetup>, sleeper: string): Promise<LiveEnded> {
  await t.write("tool.txt", "v1\n");
  const s = startLive();
  // The background writers wait for the test's go-ahead (a file put in the tree once the command has answered), never for a time:
  // on a loaded machine a command's sync-out can come after any sleep, and would write the background file back with that command.
  const goAhead = (name: string) => {
    const d = readdirSync(stage).find((x) => existsSync(join(stage, x, "tool.txt")));
    writeFileSync(join(stage, d!, name), "");
  };
  const waitFor = (name: string) => `until [ -e ${name} ]; do sleep 0.02; done; rm -f ${name}`;
  expect((await s.cmd(`cat tool.txt; (${waitFor(".go1")}; echo bg1 > bg1.txt) &`)).stdout).toBe("v1\n");
  goAhead(".go1");
  await t.write("tool.txt", "v2\n"); // a tool's edit between calls
  await until(() => inTree("bg1.txt"), "the background write");
  const b = await s.cmd("cat tool.txt");
  expect(b.stdout).toBe("v2\n");
  expect(b.sync.downloaded_files).toBe(1);
  expect(b.files_created).toContain("bg1.txt");
  expect(await t.read("bg1.txt")).toBe("bg1\n");
  // The sleeper starts at once, apart from the writer: listed by its own command line, whenever the end comes.
  await s.cmd(`(exec ${sleeper}) & (${waitFor(".go2")}; echo bg2 > bg2.txt) &`);
  goAhead(".go2");
  await until(() => inTree("bg2.txt"), "the second background write");
  const e = await s.end();
  expect(e.written?.changed).toEqual(["bg2.txt"]);
  expect(e.lost_processes.map((p) => p.command)).toContain(sleeper);
  expect(await t.read("bg2.txt")).toBe("bg2\n");
  return e;
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

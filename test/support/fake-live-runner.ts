/**
 * A fake live runner for tests of the API side of live sessions (docs/live-sessions.md): an
 * Executor whose start(req) with `live` runs a small loop speaking the HTTP protocol of
 * lib/sync/live-types.ts against the app (POST /v1/sync/live/next, result, ended) with the live
 * token it was given. It "runs" a command by answering a RunResult whose output names its
 * generation and how many commands that generation ran (so a test sees which sandbox ran it).
 * Commands that steer it: `__block` waits until the test calls release(); `__end` posts ended
 * (crashed, one lost process) instead of a result; `__die` stops polling without a word; kill() makes
 * every generation so far stop polling without a word after its current poll (a runner killed between commands). Each of
 * `__end` and `__die` acts once per fake (the command, run again in a new sandbox, then answers).
 * Its shell, as a live shell's: a request's saved state is restored on the generation's first
 * command; `cd <dir>` moves it; each answer reports the state, `unchanged` when it is the one the
 * generation reported last (infra/container/live-command.ts). A fresh run (executor.run: a call in no
 * live sandbox) answers `fresh cmd=<command>`. Its answer is its next poll (LiveResultPost.poll), as
 * the runner's; with `pollAfterAnswer`, a runner from before that: each answer (204), then a poll.
 */
import type { Executor, RunRequest, RunResult } from "../../lib/exec/types.js";
import type { LiveNext, LiveStatus } from "../../lib/sync/live-types.js";

type Requester = { request: (path: string, init: RequestInit) => Response | Promise<Response> };

export interface FakeGeneration {
  generation: string;
  /** The RunRequest the live runner was started with. */
  start: RunRequest;
  commands: string[];
  /** The requests its commands came with (the saved shell they carried, or not). */
  requests: RunRequest[];
  /** Its shell's working directory, and the state it last reported (JSON). */
  cwd: string;
  reported?: string;
  /** Settles when its loop stops: how it ended. */
  done: Promise<"ended" | "died" | string>;
}

export function fakeLiveRunner(opts: { failStart?: boolean; neverPoll?: boolean; pollAfterAnswer?: boolean } = {}) {
  let app: Requester | undefined;
  const generations: FakeGeneration[] = [];
  const blocked: (() => void)[] = [];
  const blockedWaiters: (() => void)[] = [];
  const process = { pid: 5, command: "python3 -m http.server 8123" };
  const acted = new Set<string>();
  const once = (cmd: string) => !acted.has(cmd) && acted.add(cmd) !== undefined;
  const killed = new Set<string>();

  const post = (token: string, route: string, body: unknown) =>
    app!.request(`/v1/sync/live/${route}`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(body) });

  /** The shell's answer to a request that asks for one (RunRequest.shell), as a live shell's. */
  const shellOf = (g: FakeGeneration, req: RunRequest): Pick<RunResult, "shell"> => {
    if (!req.shell) return {};
    if (g.commands.length === 1 && req.shell.state) g.cwd = req.shell.state.cwd;
    const cd = /^cd (\S+)$/.exec(req.command);
    if (cd) g.cwd = cd[1]!;
    const json = JSON.stringify({ cwd: g.cwd });
    const unchanged = json === g.reported;
    g.reported = json;
    return { shell: { state: { cwd: g.cwd }, notes: [], ...(unchanged ? { unchanged: true as const } : {}) } };
  };

  const result = (g: FakeGeneration, req: RunRequest): RunResult => {
    const command = req.command;
    const output = `gen=${g.generation} n=${g.commands.length} cmd=${command}\n`;
    return {
      ...shellOf(g, req),
      run_id: "r", stdout: output, stderr: "", output, exit_code: 0, duration_ms: 3, timed_out: false, killed: false, truncated: false,
      files_changed: [], files_created: [], files_deleted: [], conflicts: [], skipped: [], discarded: [],
      sync: { cache: "warm", manifest_files: 0, downloaded_files: 0, downloaded_bytes: 0, uploaded_files: 0, uploaded_bytes: 0, deleted_files: 0, sync_in_ms: 0, sync_out_ms: 0 },
    };
  };

  async function loop(g: FakeGeneration): Promise<string> {
    const token = g.start.sync.token;
    const started = Date.now();
    const status = (): LiveStatus => ({ generation: g.generation, started_at: started, last_used_at: Date.now(), processes: [process], ports: [8123], wall_ms: Date.now() - started, cpu_ms: 7 });
    let r = await post(token, "next", status());
    for (;;) {
      if (killed.has(g.generation)) return "killed";
      if (r.status !== 200) return `refused ${r.status}`;
      const n = (await r.json()) as LiveNext<RunRequest>;
      if ("end" in n) {
        await post(token, "ended", { generation: g.generation, reason: n.end, lost_processes: [process], status: status() });
        return `end:${n.end}`;
      }
      if ("wait" in n) {
        r = await post(token, "next", status());
        continue;
      }
      const cmd = n.command.request.command;
      g.commands.push(cmd);
      g.requests.push(n.command.request);
      if (cmd === "__die" && once(cmd)) return "died";
      if (cmd === "__end" && once(cmd)) {
        // Its final write-back: one file its background process wrote, one that changed in the workspace meanwhile;
        // its background processes' network bytes since the last command (LiveStatus.net_bytes_in).
        await post(token, "ended", { generation: g.generation, reason: "crashed", lost_processes: [process], status: { ...status(), net_bytes_in: 300, net_bytes_out: 40 }, written: { changed: ["bg.txt"], deleted: [], conflicts: ["clash.txt"] } });
        return "ended";
      }
      if (cmd === "__block") {
        await new Promise<void>((resolve) => {
          blocked.push(resolve);
          blockedWaiters.splice(0).forEach((w) => w());
        });
      }
      const answer = { generation: g.generation, seq: n.command.seq, response: { ok: true, result: result(g, n.command.request) }, status: status() };
      r = await post(token, "result", opts.pollAfterAnswer ? answer : { ...answer, poll: {} });
      answers.push(r.status);
      if (opts.pollAfterAnswer && r.status === 204) r = await post(token, "next", status());
    }
  }

  /** The HTTP status of each answer posted (200: it was the next poll too; 204: alone). */
  const answers: number[] = [];
  /** The fresh runs (calls that ran in a fresh sandbox), by command. */
  const fresh: RunRequest[] = [];
  const executor: Executor = {
    // A fresh sandbox's run: its output says so; its shell ends where it started (or where `cd <dir>` went).
    run: async (req) => {
      fresh.push(req);
      const output = `fresh cmd=${req.command}\n`;
      const cd = /^cd (\S+)$/.exec(req.command);
      const shell = req.shell ? { shell: { state: { cwd: cd ? cd[1]! : req.shell.state?.cwd ?? "" }, notes: [] } } : {};
      return {
        ...shell, run_id: "f", stdout: output, stderr: "", output, exit_code: 0, duration_ms: 3, timed_out: false, killed: false, truncated: false,
        files_changed: [], files_created: [], files_deleted: [], conflicts: [], skipped: [], discarded: [],
        sync: { cache: "warm", manifest_files: 0, downloaded_files: 0, downloaded_bytes: 0, uploaded_files: 0, uploaded_bytes: 0, deleted_files: 0, sync_in_ms: 0, sync_out_ms: 0 },
      };
    },
    async start(req) {
      if (!req.live) throw new Error("the fake live runner runs live sandboxes only");
      if (opts.failStart) throw new Error("no capacity");
      const g: FakeGeneration = { generation: req.live.generation, start: req, commands: [], requests: [], cwd: "", done: Promise.resolve("") };
      generations.push(g);
      if (!opts.neverPoll) g.done = loop(g); // after start() answers, as an asynchronous Invoke
    },
  };

  return {
    executor,
    generations,
    fresh,
    answers,
    /** The app the loops speak to (set once it is made). */
    attach(a: Requester) {
      app = a;
    },
    /** Settles once a `__block` command is waiting. */
    blockedOne(): Promise<void> {
      return blocked.length ? Promise.resolve() : new Promise((resolve) => blockedWaiters.push(resolve));
    },
    release() {
      blocked.shift()?.();
    },
    /** Every generation started so far stops polling, without a word, once its current poll is answered (a killed runner); later ones run. */
    kill() {
      for (const g of generations) killed.add(g.generation);
    },
  };
}

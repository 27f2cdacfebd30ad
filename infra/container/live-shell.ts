/**
 * The persistent shell of a live sandbox (issue #29): ONE sandbox (Sandbox.run: bwrap's namespaces,
 * limits, seccomp, egress proxy, tmpfs /tmp and HOME; or the process sandbox's limits, HOME and
 * scratch directories, emptied at its end) for the session's whole life, whose command is a loop.
 * The runner writes a command number on the loop's stdin; the loop evals `<shell dir>/c<n>.sh` in the SAME
 * shell (so cwd, plain and exported variables, functions and aliases persist) with stdin from `c<n>.in` and stdout/stderr appended to `out`/`err` (tailed
 * here into the command's OutputCollector), saves the shell's state (shell-state.ts) and prints
 * `done <n> <status>` on its own stdout. Background processes keep running between commands,
 * with their ports on the sandbox's loopback (the process sandbox: the environment's). What the
 * sandbox holds, and when it is gone, its kind says (Sandbox.liveProbe, live-status.ts). Node only.
 *
 * The shell directory (SandboxSpec.shellDir) is the session's own: a command could read or write
 * it, and so reach only its own session's control files.
 */
import { constants, promises as fs } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import type { OutputCollector } from "./output.js";
import { envTo, saveScript } from "./shell-state.js";
import { shellQuote } from "./sandbox-script.js";
import type { Sandbox } from "./sandbox-spec.js";
import type { SandboxExit, SandboxSpec } from "./sandbox-spec.js";
import type { Owner } from "./tree.js";
import type { LiveProbe } from "./live-status.js";
import { whileStill } from "./hold-still.js";
import { Tail } from "./shell-dir-tail.js";
import { EgressShares } from "./egress-shares.js";

/** How often a running command's output files are read (the last read follows its end at once). */
const TAIL_MS = 100;
/** Of what background processes wrote between two commands, the next command shows at most the last this many bytes of each stream. */
export const BETWEEN_BYTES = 16 * 1024;

export type ShellSpec = Omit<SandboxSpec, "command" | "cwd" | "onStdout" | "onStderr" | "input" | "onSpawn" | "stdin" | "gate" | "signal" | "onEgressRefusal"> & { shellDir: string };

export interface CommandExit {
  exitCode: number | null;
  timedOut: boolean;
  /** The sandbox ended during the command: the shell exited (`exit`), or it was killed or crashed. */
  ended: "shell_exited" | "crashed" | null;
  durationMs: number;
}

/**
 * The loop (run by `bash -c` after the sandbox's limits are set, in the workspace root: under
 * bubblewrap /workspace, under the process sandbox its workspace link); `d`: the shell directory as it sees it.
 */
function loopScript(d: string): string {
  const q = shellQuote(d);
  // Up to the command's eval on line 1 (eval'd text is numbered from its eval's line: `line N:` and $LINENO are the
  // command's own, as commandOnFirstLine makes a fresh run's); read by a builtin, eval'd not sourced (errors say `bash:`).
  const first = [
    '__toolshed_root="$PWD"',
    `{ ${envTo(`${q}/base`)}; } 2>/dev/null`,
    `printf 'ready %s\\n' "$$"`,
    "while IFS= read -r __toolshed_seq; do IFS= read -r -d '' __toolshed_cmd <" + `${q}/c"$__toolshed_seq".sh || true`, // read ends at EOF with status 1: never an exit under the session's own `set -e`
    `eval "$__toolshed_cmd" <${q}/c"$__toolshed_seq".in >>${q}/out 2>>${q}/err`,
  ];
  return [
    first.join("; "),
    "  __toolshed_rc=$?",
    `  ${saveScript(q)}`,
    `  printf 'done %s %s\\n' "$__toolshed_seq" "$__toolshed_rc"`,
    "done",
  ].join("\n");
}

/** Removes what is under `path` in the shell directory, whatever the command made of it (a file, a link, a directory). */
const removeOwn = (path: string) => fs.unlink(path).catch(() => fs.rm(path, { recursive: true, force: true }));

/**
 * Writes a new file into the shell directory, never through a link: created where nothing is
 * (O_EXCL); should the command have left something under its name, that is removed first (the
 * names are new per command: as a rule nothing is there, and nothing is looked up before).
 */
async function writeNew(path: string, data: string): Promise<void> {
  const create = () => fs.open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
  const h = await create().catch(async (e: NodeJS.ErrnoException) => {
    if (e.code !== "EEXIST") throw e;
    await removeOwn(path);
    return create();
  });
  try {
    await h.writeFile(data);
  } finally {
    await h.close();
  }
}

export class LiveShell {
  /** Host pid of the sandbox process (the outer bwrap; the loop shell itself under the process sandbox). */
  hostPid = 0;
  /** The loop shell's pid as the sandbox sees it. */
  shellPid = 0;
  /** What the sandbox holds, as its kind finds it (Sandbox.liveProbe, live-status.ts); set once the loop is ready. */
  probe: LiveProbe | null = null;
  readonly exited: Promise<SandboxExit>;
  private readonly input = new PassThrough();
  private readonly stop = new AbortController();
  private lineBuf = "";
  private onLine: (words: string[]) => void = () => {};
  private sink: { out: (b: Buffer) => void; err: (b: Buffer) => void } = { out: () => {}, err: () => {} };
  private readonly outTail: Tail;
  private readonly errTail: Tail;
  /** What its egress proxy carried, taken by each command (and the rest by the sandbox's end); none without network. */
  readonly net = new EgressShares();
  /** Its cgroup's memory bound and OOM kills (SandboxSpec.onMemory), each command taking those since the last took; null without a cgroup. */
  private memory: { limitMb: number; oomKills(): number } | null = null;
  private oomTaken = 0;
  /** The loop's own stderr (the last 2 KiB): why a sandbox that ended at once ended. */
  stderr = "";
  private killedByUs = false;
  private gone = false;

  private constructor(sandbox: Sandbox, private readonly spec: ShellSpec, lifeMs: number) {
    this.outTail = new Tail(join(spec.shellDir, "out"), (b) => this.sink.out(b));
    this.errTail = new Tail(join(spec.shellDir, "err"), (b) => this.sink.err(b));
    this.exited = sandbox.run({
      ...spec, cwd: "", command: loopScript(sandbox.shellPath(spec.shellDir)), timeoutMs: lifeMs, input: this.input, signal: this.stop.signal,
      onSpawn: (pid) => (this.hostPid = pid),
      onEgress: (carried) => this.net.attach(carried),
      onMemory: (memory) => (this.memory = memory),
      onStdout: (c) => this.control(c),
      onStderr: (c) => (this.stderr = (this.stderr + c.toString("utf8")).slice(-2048)),
      // The egress proxy's refusal lines are the running command's stderr, not the loop's.
      onEgressRefusal: (line) => this.sink.err(line),
    });
    this.exited.then(() => (this.gone = true), () => (this.gone = true));
  }

  /** The memory bound and the OOM kills since the last take (a command's, and its background processes' since the last command); undefined without a cgroup. */
  takeMemory(): { limitMb: number; oomKills: number } | undefined {
    if (!this.memory) return undefined;
    const now = this.memory.oomKills();
    const share = Math.max(0, now - this.oomTaken);
    this.oomTaken = Math.max(now, this.oomTaken);
    return { limitMb: this.memory.limitMb, oomKills: share };
  }

  private control(chunk: Buffer): void {
    this.lineBuf += chunk.toString("utf8");
    let nl: number;
    while ((nl = this.lineBuf.indexOf("\n")) >= 0) {
      const line = this.lineBuf.slice(0, nl);
      this.lineBuf = this.lineBuf.slice(nl + 1);
      this.onLine(line.split(" "));
    }
  }

  /** Starts the sandbox and its loop; resolves once the loop waits for commands. */
  static async start(sandbox: Sandbox, spec: ShellSpec, lifeMs: number, owner: Owner): Promise<LiveShell> {
    for (const f of ["out", "err"]) {
      const path = join(spec.shellDir, f);
      await writeNew(path, "");
      if (owner) await fs.chown(path, owner.uid, owner.gid);
    }
    const shell = new LiveShell(sandbox, spec, lifeMs);
    const ready = new Promise<number>((resolve) => (shell.onLine = (w) => w[0] === "ready" && resolve(Number(w[1]))));
    const r = await Promise.race([ready, shell.exited.then((e) => e)]);
    if (typeof r !== "number") throw new Error(`the live sandbox ended as it started (exit ${r.exitCode}): ${shell.stderr.trim() || "no message"}`);
    shell.shellPid = r;
    shell.probe = await sandbox.liveProbe(shell.hostPid, r);
    return shell;
  }

  /**
   * Runs one command: `script` sourced in the shell, `stdin` its standard input, output into
   * `out`. Past `timeoutMs` the whole sandbox is killed (a live shell cannot be interrupted
   * safely): timedOut, and the caller ends the session.
   */
  async run(seq: number, script: string, stdin: string, timeoutMs: number, out: OutputCollector): Promise<CommandExit> {
    const d = this.spec.shellDir;
    // The script, its stdin and what background processes wrote since the last command, side by side (independent files).
    const [between] = await Promise.all([
      Promise.all([this.outTail.drain(BETWEEN_BYTES), this.errTail.drain(BETWEEN_BYTES)]),
      writeNew(join(d, `c${seq}.sh`), script),
      writeNew(join(d, `c${seq}.in`), stdin),
    ]);
    // What background processes wrote comes first, marked as theirs (docs/live-sessions.md).
    between.forEach((b, i) => {
      if (!b.data.length) return;
      const sink = i === 0 ? out.out : out.err;
      const cut = b.skipped ? ` (its last ${b.data.length} bytes; ${b.skipped} before them not shown)` : "";
      sink(Buffer.from(`[toolshed: ${i === 0 ? "stdout" : "stderr"} of background processes since the last command${cut}:]\n`));
      sink(b.data);
      sink(Buffer.from(`${b.data[b.data.length - 1] === 0x0a ? "" : "\n"}[toolshed: end of background output]\n`));
    });
    this.sink = { out: out.out, err: out.err };
    const t0 = Date.now();
    let timedOut = false;
    const done = new Promise<number>((resolve) => (this.onLine = (w) => w[0] === "done" && Number(w[1]) === seq && resolve(Number(w[2]))));
    const timer = setTimeout(() => {
      timedOut = true;
      void this.kill();
    }, timeoutMs);
    const tail = setInterval(() => void this.pumpAll(), TAIL_MS);
    try {
      this.input.write(`${seq}\n`);
      const r = await Promise.race([done, this.exited]);
      if (typeof r !== "number" && (timedOut || this.killedByUs)) await this.kill(); // nothing of it runs on when this returns
      await this.pumpAll();
      if (typeof r === "number") return { exitCode: r, timedOut: false, ended: null, durationMs: Date.now() - t0 };
      // The sandbox ended: killed by us (timeout), or the shell exited, or it was killed from outside.
      const ended = timedOut || this.killedByUs ? null : r.exitCode === null || r.exitCode === 137 ? "crashed" : "shell_exited";
      return { exitCode: timedOut ? null : ended === "shell_exited" ? r.exitCode : null, timedOut, ended: timedOut ? null : ended, durationMs: Date.now() - t0 };
    } finally {
      clearTimeout(timer);
      clearInterval(tail);
      this.sink = { out: () => {}, err: () => {} };
      await Promise.all([removeOwn(join(d, `c${seq}.sh`)), removeOwn(join(d, `c${seq}.in`))]);
    }
  }

  /** One read of both files at a time (a timer's and the last one never overlap). */
  private pumping: Promise<unknown> = Promise.resolve();
  private pumpAll(): Promise<unknown> {
    this.pumping = this.pumping.then(() => Promise.all([this.outTail.pump(), this.errTail.pump()])).catch(() => {});
    return this.pumping;
  }

  /**
   * Ends the sandbox and everything in it: resolves once no process of it is left (bwrap: its pid
   * namespace, whose init dies after the sandbox process and takes the rest with it; the process
   * sandbox: its uid, which the run's reap has emptied): nothing writes to the tree after this
   * (bounded: 5 s).
   */
  kill(): Promise<SandboxExit> {
    this.killing ??= (async () => {
      this.killedByUs = true;
      this.stop.abort();
      this.input.end();
      const exit = await this.exited;
      await this.probe?.emptied(5000);
      return exit;
    })();
    return this.killing;
  }
  private killing: Promise<SandboxExit> | null = null;

  /**
   * Runs `work` (the runner's own reads and writes of the tree) while every process of the sandbox is
   * stopped (hold-still.ts), so none can swap a path under it; they run on once it is done. A sandbox
   * whose processes do not all stop is killed first (then nothing of it runs during the work).
   */
  still<T>(work: () => Promise<T>): Promise<T> {
    if (!this.probe || !this.alive) return work();
    return whileStill(() => this.probe!.pids(), () => ((this.unheld = true), this.kill()), work);
  }
  /** Set once a hold found processes that would not stop (or none at all) and ended the sandbox for it (still). */
  unheld = false;

  /** Whether the sandbox still runs. */
  get alive(): boolean {
    return !this.stop.signal.aborted && this.hostPid > 0 && !this.gone;
  }
}

/**
 * One session's live sandbox, as its coordinator holds it (issue #29, docs/live-sessions.md): which
 * generation of live runner is current, the one command in flight, the runner's held poll, and what
 * the session's previous runner lost. In memory only: one Node process (memory.ts) or one Durable
 * Object per session (lib/runtime/live-object.ts) holds it; both speak coordinator.ts's interface
 * through this class, so they behave alike. Bundles for Workers.
 *
 * A turn is the right to run one command: calls of a session are serialized by it (a second call
 * waits up to its wait, then is told busy). Every operation answers the generations that ended in
 * it (`ends`): the caller accounts for them (lease, usage, audit) exactly once.
 */
import { randomId } from "../../shared/hash.js";
import type { LiveEndReason, LiveEnded, LiveNext, LiveResultPost, LiveStatus } from "../../sync/live-types.js";
import type { BeginAnswer, LiveEnd, LiveLoss, LiveTimings, RunAnswer, RunOptions, SandboxView } from "./types.js";
import type { Generation, Pending } from "./session-records.js";

type Waiter = () => void;

export class LiveSession {
  private gen: Generation | null = null;
  /** Ended generations whose runner may still poll: told `{end}` once, then forgotten. */
  private readonly told = new Map<string, LiveEndReason>();
  private loss: LiveLoss | null = null;
  /** The access of the last generation made: a restart after a loss (same turn) keeps it. */
  private lastSandbox = "";
  private turn: { id: string; expires_at: number } | null = null;
  private readonly turnWaiters: Waiter[] = [];
  private pending: Pending | null = null;
  private poll: { generation: string; answer: (n: LiveNext) => void } | null = null;

  constructor(
    private readonly timings: LiveTimings,
    private readonly now: () => number = Date.now,
  ) {}

  /** The current runner has answered a command: its shell holds the session's state. */
  get served(): boolean {
    return this.gen?.served === true;
  }

  /** Nothing held: the session can be forgotten. */
  get empty(): boolean {
    return !this.gen && !this.turn && !this.loss && this.told.size === 0 && !this.poll;
  }

  // ---- the tool's side ----

  /** Takes the session's turn, waiting up to waitMs for the call before it; tells whether a runner must be started. `join`: BeginAnswer `none`. */
  async begin(waitMs: number, turnMs: number, sandbox = "", join = false): Promise<BeginAnswer> {
    const stale = join ? this.checkStale() : [];
    if (join && !this.gen) return this.none(stale);
    const until = this.now() + waitMs;
    while (this.turn && this.turn.expires_at > this.now()) {
      const left = until - this.now();
      // Retry-After: when the turn would run out at the latest, within [1, 60] s (a command usually ends well before).
      if (left <= 0) return { busy: { retry_after_s: Math.min(60, Math.max(1, Math.ceil((this.turn.expires_at - this.now()) / 1000))) }, ends: [] };
      await this.waitTurn(Math.min(left, this.turn.expires_at - this.now()));
    }
    this.turn = { id: randomId(16), expires_at: this.now() + turnMs };
    const ends = this.checkStale();
    if (join && this.gen?.sandbox !== sandbox) {
      this.release(this.turn.id);
      return this.gen ? { none: { other_access: true }, ends } : this.none(ends);
    }
    // A sandbox started with other access (network, secrets) than this call's is not this call's: replaced.
    if (this.gen && this.gen.sandbox !== sandbox) ends.push(this.finish(this.gen, "replaced", this.gen.status?.processes ?? []));
    const loss = this.loss;
    this.loss = null;
    if (this.gen) return { turn: this.turn.id, generation: this.gen.generation, ...(loss ? { lost: loss } : {}), ends };
    return { turn: this.turn.id, start: { generation: this.newGeneration(sandbox) }, ...(loss ? { lost: loss } : {}), ends };
  }

  /**
   * Runs one command on the current runner (the caller holds the turn): answers its response, or
   * that the runner was lost (a new generation is made at once: start it and run again), or that
   * the runner never came.
   */
  run(turn: string, request: unknown, opts: RunOptions): Promise<RunAnswer> {
    if (!this.turn || this.turn.id !== turn) return Promise.resolve({ refused: "turn_expired", ends: [] });
    const ends = this.checkStale();
    if (!this.gen) return Promise.resolve(this.lostAnswer(ends));
    const gen = this.gen;
    if (opts.lease) gen.lease = opts.lease;
    this.turn.expires_at = this.now() + opts.timeout_ms + this.timings.start_wait_ms + this.timings.stale_ms;
    return new Promise<RunAnswer>((resolve) => {
      const timer = { t: undefined as ReturnType<typeof setTimeout> | undefined };
      const settle = (a: RunAnswer) => {
        clearTimeout(timer.t);
        if (this.pending === p) this.pending = null;
        resolve({ ...a, ends: [...ends, ...a.ends] });
      };
      const p: Pending = { seq: ++gen.seq, request, timeout_ms: opts.timeout_ms, settle };
      this.pending = p;
      // Not answered by the runner: checked when the runner should have come, or finished, by now.
      const check = () => {
        if (this.pending !== p) return;
        const late = this.lateness(gen, p);
        if (late === null) {
          timer.t = setTimeout(check, this.nextCheckIn(gen, p));
          return;
        }
        if (late === "never_started") {
          const end = this.finish(gen, "crashed", []);
          this.loss = null; // nothing was lost: it never ran
          settle({ unavailable: { waited_ms: this.now() - gen.requested_at }, ends: [end] });
          return;
        }
        const end = this.finish(gen, "crashed", gen.status?.processes ?? []);
        settle(this.lostAnswer([end]));
      };
      timer.t = setTimeout(check, this.nextCheckIn(gen, p));
      this.offer();
    });
  }

  /** Gives the turn back (the call answered); the next waiting call goes. */
  release(turn: string): void {
    if (this.turn?.id !== turn) return;
    this.turn = null;
    this.turnWaiters.shift()?.();
  }

  // ---- the runner's side (LiveHub) ----

  next(generation: string, status: LiveStatus): Promise<LiveNext> {
    const gen = this.gen;
    if (!gen || gen.generation !== generation) return Promise.resolve({ end: this.toldEnd(generation) });
    gen.seen_at = this.now();
    gen.status = status;
    if (gen.ending) return Promise.resolve({ end: gen.ending });
    this.poll?.answer({ wait: true }); // a runner polls once at a time; an older poll is answered now
    return new Promise<LiveNext>((resolve) => {
      const t = setTimeout(() => answer({ wait: true }), this.timings.poll_ms);
      const answer = (n: LiveNext) => {
        clearTimeout(t);
        if (this.poll?.answer === answer) this.poll = null;
        if (this.gen === gen) gen.seen_at = this.now();
        resolve(n);
      };
      this.poll = { generation, answer };
      this.offer();
    });
  }

  result(generation: string, post: LiveResultPost): void {
    const gen = this.gen;
    if (!gen || gen.generation !== generation) return;
    gen.seen_at = this.now();
    gen.status = post.status;
    const p = this.pending;
    if (!p || p.seq !== post.seq || p.taken_at === undefined) return;
    if (post.response.ok) gen.served = true;
    p.settle({ response: post.response, ends: [] });
  }

  /** The runner's last word. Answers its end when it was current (not already ended by end() or a loss). */
  ended(generation: string, ended: LiveEnded): LiveEnd[] {
    this.told.delete(generation);
    const gen = this.gen;
    if (!gen || gen.generation !== generation) {
      // Already ended here (DELETE, a replacement, a loss): its final write-back still goes into what the next call is told.
      if (this.loss?.generation === generation && ended.written) this.loss = { ...this.loss, written: ended.written };
      return [];
    }
    gen.status = ended.status;
    const end = this.finish(gen, ended.reason, ended.lost_processes, ended.written);
    this.pending?.settle(this.lostAnswer([]));
    return [end];
  }

  // ---- the routes ----

  status(): { sandbox: SandboxView | null; ends: LiveEnd[] } {
    const ends = this.checkStale();
    const g = this.gen;
    if (!g) return { sandbox: null, ends };
    const s = g.status;
    const now = this.now();
    return {
      sandbox: {
        generation: g.generation,
        state: g.seen_at === undefined ? "starting" : this.pending?.taken_at !== undefined ? "running" : "idle",
        started_at: s?.started_at ?? g.requested_at,
        last_used_at: s?.last_used_at ?? g.requested_at,
        processes: s?.processes ?? [],
        ports: s?.ports ?? [],
        wall_ms: s ? s.wall_ms + (now - (g.seen_at ?? now)) : 0,
        ...(s?.cpu_ms !== undefined ? { cpu_ms: s.cpu_ms } : {}),
        ...(s?.rss_bytes !== undefined ? { rss_bytes: s.rss_bytes } : {}),
      },
      ends,
    };
  }

  /** Ends the current runner now (DELETE, a start that failed): its next poll is told `reason`; a command in flight is answered lost. */
  end(reason: LiveEndReason): { ended: SandboxView | null; ends: LiveEnd[] } {
    const view = this.status();
    const g = this.gen;
    if (!g) return { ended: null, ends: view.ends };
    const end = this.finish(g, reason, g.status?.processes ?? []);
    this.pending?.settle(this.lostAnswer([]));
    return { ended: view.sandbox, ends: [...view.ends, end] };
  }

  // ---- inside ----

  /** A join with no runner to run in (nothing started or replaced, no turn held): an untold loss goes with it, the caller tells it. */
  private none(ends: LiveEnd[]): BeginAnswer {
    const loss = this.loss;
    this.loss = null;
    return { none: loss ? { lost: loss } : {}, ends };
  }

  private newGeneration(sandbox = this.gen?.sandbox ?? this.lastSandbox): string {
    const generation = `g_${randomId(16)}`;
    this.gen = { generation, requested_at: this.now(), seq: 0, sandbox };
    this.lastSandbox = sandbox;
    return generation;
  }

  /** A lost command's answer: what was lost, and (the caller holding the turn) a new generation to start. */
  private lostAnswer(ends: LiveEnd[]): RunAnswer {
    const loss = this.loss ?? { reason: "crashed" as const, lost_processes: [], generation: "" };
    const interrupted = this.pending?.taken_at !== undefined;
    this.loss = null;
    return { lost: loss, interrupted, start: { generation: this.newGeneration() }, ends };
  }

  /** The current generation leaves: its loss is kept for the next call, its runner told to end if it polls again. */
  private finish(g: Generation, reason: LiveEndReason, lost: { pid: number; command: string }[], written?: LiveLoss["written"]): LiveEnd {
    this.gen = null;
    this.told.set(g.generation, reason);
    if (this.told.size > 8) this.told.delete(this.told.keys().next().value!);
    if (this.poll?.generation === g.generation) this.poll.answer({ end: reason });
    // A runner that never came lost nothing; one that did is told to the session's next call.
    this.loss = g.seen_at !== undefined ? { generation: g.generation, reason, lost_processes: lost, ...(written ? { written } : {}) } : null;
    const now = this.now();
    const s = g.status;
    return {
      generation: g.generation, reason, arrived: g.seen_at !== undefined,
      started_at: s?.started_at ?? g.requested_at, ended_at: now,
      wall_ms: s ? Math.max(s.wall_ms, now - s.started_at) : 0,
      ...(s?.cpu_ms !== undefined ? { cpu_ms: s.cpu_ms } : {}),
      ...(g.lease ? { lease: g.lease } : {}),
      lost_processes: lost,
    };
  }

  private toldEnd(generation: string): LiveEndReason {
    const r = this.told.get(generation);
    this.told.delete(generation);
    return r ?? "replaced";
  }

  /** Hands the pending command to a held poll of the current generation. */
  private offer(): void {
    const p = this.pending;
    const poll = this.poll;
    if (!p || p.taken_at !== undefined || !poll || poll.generation !== this.gen?.generation) return;
    p.taken_at = this.now();
    poll.answer({ command: { seq: p.seq, request: p.request } });
  }

  /** null: in time; else why the runner is taken for gone. */
  private lateness(g: Generation, p?: Pending): "never_started" | "stale" | null {
    const now = this.now();
    if (g.seen_at === undefined) return now - g.requested_at > this.timings.start_wait_ms ? "never_started" : null;
    if (p?.taken_at !== undefined) return now - p.taken_at > p.timeout_ms + this.timings.stale_ms ? "stale" : null;
    return now - g.seen_at > this.timings.stale_ms ? "stale" : null;
  }

  private nextCheckIn(g: Generation, p: Pending): number {
    const now = this.now();
    const due = g.seen_at === undefined ? g.requested_at + this.timings.start_wait_ms : p.taken_at !== undefined ? p.taken_at + p.timeout_ms + this.timings.stale_ms : g.seen_at + this.timings.stale_ms;
    return Math.max(10, due - now + 1);
  }

  /** A runner that stopped polling (and runs no command) is lost; a held poll keeps it seen. */
  private checkStale(): LiveEnd[] {
    const g = this.gen;
    if (!g || this.pending || (this.poll && this.poll.generation === g.generation)) return [];
    const late = this.lateness(g);
    if (!late) return [];
    return [this.finish(g, "crashed", late === "stale" ? g.status?.processes ?? [] : [])];
  }

  private waitTurn(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        const i = this.turnWaiters.indexOf(done);
        if (i >= 0) this.turnWaiters.splice(i, 1);
        resolve();
      };
      const t = setTimeout(done, ms);
      this.turnWaiters.push(done);
    });
  }
}

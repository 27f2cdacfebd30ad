/**
 * One session's live sandbox in one process's memory (issue #29, docs/live-sessions.md): the state
 * machine of session-state.ts, with its waits as promises woken the moment a transition answers
 * them (a held poll handed a command, a call's command answered, the turn given back) and timers
 * for what time alone decides (a poll's poll_ms, a runner that is late). One Node process
 * (memory.ts) or one Durable Object per session (lib/runtime/live-object.ts) holds it; both speak
 * types.ts's interface through this class, so they behave alike. Bundles for Workers.
 */
import type { LiveEndReason, LiveEnded, LiveLost, LiveNext, LiveResultPost, LiveStatus } from "../../sync/live-types.js";
import { resultThenNext } from "./call.js";
import { emptyLiveState, isEmpty, isServed, type LiveState } from "./session-records.js";
import * as machine from "./session-state.js";
import type { BeginAnswer, LiveEnd, LiveLoss, LiveTimings, RunAnswer, RunOptions, SandboxView } from "./types.js";

type Waiter = () => void;

/**
 * Where a host keeps what the last runner lost beyond its own memory. The Durable Object's storage:
 * an object that no runner polls any more is evicted (seconds after a sandbox's idle end, in
 * workerd), and the session's next call must still be told what went with the sandbox.
 */
export interface LossKeeper {
  load(): LiveLoss | null;
  save(loss: LiveLoss | null): void;
}
type Timer = ReturnType<typeof setTimeout>;

export class LiveSession {
  private readonly state: LiveState = emptyLiveState();
  private readonly turnWaiters: Waiter[] = [];
  /** Who waits for any transition (lostAtEnd: a runner's report of its end). */
  private readonly changeWaiters = new Set<Waiter>();
  /** The held polls' holders, by poll id (two at once only while a newer poll replaces an older one). */
  private readonly polls = new Map<string, { ref: machine.PollRef; resolve: (n: LiveNext) => void; timer?: Timer }>();
  /** The pending commands' callers, by generation and seq. */
  private readonly runs = new Map<string, { resolve: (a: RunAnswer) => void; timer?: Timer }>();

  constructor(
    private readonly timings: LiveTimings,
    private readonly now: () => number = Date.now,
    private readonly kept?: LossKeeper,
  ) {
    if (kept) this.state.loss = kept.load();
  }

  /** The current runner has answered a command: its shell holds the session's state. */
  get served(): boolean {
    return isServed(this.state);
  }

  /** Nothing held: the session can be forgotten. */
  get empty(): boolean {
    return isEmpty(this.state);
  }

  // ---- the tool's side ----

  /** Takes the session's turn, waiting up to waitMs for the call before it; tells whether a runner must be started. `join`: BeginAnswer `none`. */
  async begin(waitMs: number, turnMs: number, sandbox = "", join = false): Promise<BeginAnswer> {
    const until = this.now() + waitMs;
    for (let first = true; ; first = false) {
      const step = this.apply((s, at) => machine.beginStep(s, at, turnMs, sandbox, join, first));
      if (!("held" in step)) return step;
      const left = until - this.now();
      if (left <= 0) return machine.busyAnswer(step.held, this.now());
      await this.waitTurn(Math.min(left, step.held - this.now()));
    }
  }

  /**
   * Runs one command on the current runner (the caller holds the turn): answers its response, or
   * that the runner was lost (a new generation is made at once: start it and run again), or that
   * the runner never came.
   */
  run(turn: string, request: unknown, opts: RunOptions): Promise<RunAnswer> {
    return new Promise<RunAnswer>((resolve) => {
      const r = this.apply((s, at) => machine.run(s, at, turn, request, opts));
      if ("answer" in r) return resolve(r.answer);
      const ref = r.pending;
      const waiter: { resolve: (a: RunAnswer) => void; timer?: Timer } = { resolve };
      this.runs.set(runKey(ref), waiter);
      // Not answered by the runner: checked when the runner should have come, or finished, by now.
      const check = () => {
        const due = this.apply((s, at) => machine.checkRun(s, at, ref));
        if (due !== null) waiter.timer = setTimeout(check, due);
      };
      const gen = this.state.gen;
      if (gen && this.state.pending) waiter.timer = setTimeout(check, machine.runCheckIn(gen, this.at(), this.state.pending));
    });
  }

  /** Gives the turn back (the call answered); the next waiting call goes. */
  release(turn: string): void {
    this.apply((s) => machine.release(s, turn));
  }

  // ---- the runner's side (LiveHub) ----

  next(generation: string, status: LiveStatus): Promise<LiveNext> {
    return this.poll((s, at) => machine.next(s, at, generation, status));
  }

  /** The answer, then the runner's next poll, in one transition (LiveResultPost.poll). */
  resultThenNext(generation: string, post: LiveResultPost): Promise<LiveNext> {
    return this.poll((s, at) => resultThenNext(s, at, generation, post));
  }

  result(generation: string, post: LiveResultPost): void {
    this.apply((s, at) => machine.result(s, at, generation, post));
  }

  /** The runner's last word. Answers its end when it was current (not already ended by end() or a loss). */
  ended(generation: string, ended: LiveEnded): LiveEnd[] {
    return this.apply((s, at) => machine.ended(s, at, generation, ended));
  }

  // ---- the routes ----

  status(): { sandbox: SandboxView | null; ends: LiveEnd[] } {
    return this.apply((s, at) => machine.status(s, at));
  }

  /** Ends the current runner now (DELETE, a start that failed): its next poll is told `reason`; a command in flight is answered lost. */
  end(reason: LiveEndReason): { ended: SandboxView | null; ends: LiveEnd[] } {
    return this.apply((s, at) => machine.end(s, at, reason));
  }

  /** What `generation`, ended by end(), lost as its runner reported at its end: waits up to waitMs for the report (woken by the transition that takes it). */
  async lostAtEnd(generation: string, waitMs: number): Promise<LiveLost | null> {
    const until = this.now() + waitMs;
    for (;;) {
      const r = machine.lostAtEnd(this.state, generation);
      if (r !== null) return r === "unknown" ? null : r;
      const left = until - this.now();
      if (left <= 0) return null;
      await new Promise<void>((resolve) => {
        const done = () => (clearTimeout(t), this.changeWaiters.delete(done), resolve());
        const t = setTimeout(done, left);
        this.changeWaiters.add(done);
      });
    }
  }

  // ---- inside ----

  private at(): machine.At {
    return { now: this.now(), timings: this.timings };
  }

  /** Applies a transition, then wakes whom it answered: held polls, the pending command's caller, the next call waiting for a turn given back. */
  private apply<T>(transition: (s: LiveState, at: machine.At) => T): T {
    const held = this.state.turn !== null;
    const loss = this.state.loss;
    const out = transition(this.state, this.at());
    if (this.kept && this.state.loss !== loss) this.kept.save(this.state.loss);
    for (const [id, holder] of this.polls) {
      const answer = machine.pollOutcome(this.state, this.at(), holder.ref, false);
      if (!answer) continue;
      this.polls.delete(id);
      clearTimeout(holder.timer);
      holder.resolve(answer);
    }
    const p = this.state.pending;
    const waiter = p?.outcome ? this.runs.get(runKey(p)) : undefined;
    if (p && waiter) {
      this.runs.delete(runKey(p));
      clearTimeout(waiter.timer);
      waiter.resolve(machine.collect(this.state, p)!);
    }
    if (held && !this.state.turn) this.turnWaiters.shift()?.();
    for (const w of [...this.changeWaiters]) w();
    return out;
  }

  /** A poll taken by `transition`: answered now, or held until pollOutcome answers it (at the latest when poll_ms has passed). */
  private poll(transition: (s: LiveState, at: machine.At) => LiveNext | { held: machine.PollRef }): Promise<LiveNext> {
    return new Promise<LiveNext>((resolve) => {
      const r = this.apply(transition);
      if (!("held" in r)) return resolve(r);
      const ref = r.held;
      const holder: { ref: machine.PollRef; resolve: (n: LiveNext) => void; timer?: Timer } = { ref, resolve };
      holder.timer = setTimeout(() => {
        this.polls.delete(ref.id);
        resolve(this.apply((s, at) => machine.pollOutcome(s, at, ref, true))!);
      }, this.timings.poll_ms);
      this.polls.set(ref.id, holder);
    });
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

const runKey = (p: machine.PendingRef) => `${p.generation} ${p.seq}`;

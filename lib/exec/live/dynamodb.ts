/**
 * The live coordinator over DynamoDB (AWS Lambda; docs/live-sessions.md, "The production design"):
 * every API environment that serves a session's calls or its runner's polls shares the session's
 * item (dynamodb-item.ts), so a held poll in one environment and the session's next call in another
 * meet. Every operation is the one state machine (session-state.ts) applied to a strongly
 * consistent read of the item and written back conditionally on the version read; a lost race
 * starts over from a fresh read (full-jitter backoff). Within one process a session's operations are
 * applied one after another, in the order they were asked (as one Durable Object takes them).
 *
 * A wait (for the turn, for the runner's answer or its lateness, a runner's poll for a command) is
 * a loop of reads: every WAIT_INTERVALS.fast_ms for the wait's first fast_for_ms, then every
 * slow_ms. A read that changes nothing writes nothing. Costs (docs/live-sessions.md): an idle
 * session's held polls read its item about 740 times a minute, and write it 6 times (each poll's
 * start and end); a command writes it 4 times (the turn with the command, the command handed to the
 * held poll, the answer with the runner's next poll, the answer collected with the turn given
 * back); a command handed to a poll held longer than fast_for_ms waits up to slow_ms to be seen.
 * Bundles for Node (the AWS entry).
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { backoffMs } from "../../shared/dynamodb-table.js";
import { ToolError } from "../../shared/errors.js";
import type { LiveNext, LiveResultPost } from "../../sync/live-types.js";
import { keepsTurn, ranAnswer, resultThenNext, runOptions, runsAtOnce } from "./call.js";
import { LiveItemTooLarge, liveItem } from "./dynamodb-item.js";
import { liveSessionId } from "./service.js";
import { isServed, type LiveState } from "./session-records.js";
import * as machine from "./session-state.js";
import type { BeginAnswer, CallAnswer, CallOptions, LiveCoordinator, LiveKey, LiveTimings, RunAnswer, RunOptions } from "./types.js";
import { sleep } from "../../shared/sleep.js";

/** How often a wait reads the item: every fast_ms for its first fast_for_ms, then every slow_ms. */
export interface WaitIntervals {
  fast_ms: number;
  slow_ms: number;
  fast_for_ms: number;
}

export const WAIT_INTERVALS: WaitIntervals = { fast_ms: 25, slow_ms: 100, fast_for_ms: 2_000 };

export interface DynamoLiveOptions {
  client: DynamoDBClient;
  table: string;
  /** The deployment's sync secret: the item's state is sealed under a key derived from it (dynamodb-item.ts). */
  secret: string;
  timings: LiveTimings;
  now?: () => number;
  intervals?: WaitIntervals;
  /** Lost races in a row (other environments wrote the item first) before an operation fails; default 40. */
  maxAttempts?: number;
}

/** Retry-After of a call the item did not answer. */
const RETRY_AFTER_S = 2;


export function dynamoLiveCoordinator(opts: DynamoLiveOptions): LiveCoordinator {
  const { timings, now = Date.now, intervals = WAIT_INTERVALS, maxAttempts = 40 } = opts;
  const item = liveItem(opts.client, opts.table, opts.secret);
  /** Per session, the tail of this process's operations on it: each starts when the one before has written. */
  const tails = new Map<string, Promise<unknown>>();

  function inOrder<T>(id: string, op: () => Promise<T>): Promise<T> {
    const result = (tails.get(id) ?? Promise.resolve()).then(op);
    const tail = result.catch(() => {});
    tails.set(id, tail);
    void tail.then(() => tails.get(id) === tail && tails.delete(id));
    return result;
  }

  /**
   * One transition on the session's item: read, applied, written when it changed the state (a lost
   * race: again from a fresh read). DynamoDB not answering (throttled, unreachable, too many lost
   * races) is UNAVAILABLE with Retry-After, never an internal error: nothing of the transition was written.
   */
  function apply<T>(k: LiveKey, transition: (s: LiveState, at: machine.At) => T): Promise<{ out: T; state: LiveState }> {
    return inOrder(liveSessionId(k), () => applyOnce(k, transition)).catch((e: unknown) => {
      if (e instanceof ToolError || e instanceof LiveItemTooLarge) throw e;
      // The operator's log has the whole error; the caller its kind only (no table, endpoint or account in an answer).
      console.error("live coordinator: DynamoDB did not answer", e instanceof Error ? `${e.name}: ${e.message}` : String(e));
      const kind = e instanceof Error && /^[A-Za-z]{1,60}$/.test(e.name) && e.name !== "Error" ? e.name : "no answer";
      throw new ToolError("UNAVAILABLE", `The live session's coordinator (its DynamoDB item) did not answer (${kind}). Retry in a few seconds; a command already handed to the sandbox may have run (its file changes are written back as usual). Or call without keep_alive.`, { retry_after: RETRY_AFTER_S, session: k.session });
    });
  }

  async function applyOnce<T>(k: LiveKey, transition: (s: LiveState, at: machine.At) => T): Promise<{ out: T; state: LiveState }> {
    for (let attempt = 0; attempt < maxAttempts; attempt++) {
      if (attempt > 0) await sleep(backoffMs(attempt));
      const { state, version } = await item.read(k);
      const before = JSON.stringify(state);
      const at = { now: now(), timings };
      const out = transition(state, at);
      if (JSON.stringify(state) === before || (await item.write(k, state, version, at.now))) return { out, state };
    }
    throw new Error(`its item changed under ${maxAttempts} attempts in a row`);
  }

  /** How long a wait that began at `start` sleeps before its next read. */
  const interval = (start: number) => (now() - start < intervals.fast_for_ms ? intervals.fast_ms : intervals.slow_ms);

  /** Reads the item again, at the wait's interval (never past `until`), until `step` answers. */
  async function waitFor<T>(k: LiveKey, step: (s: LiveState, at: machine.At) => T | null, until = Infinity): Promise<T> {
    const start = now();
    for (;;) {
      await sleep(Math.min(interval(start), until - now()));
      const { out } = await apply(k, step);
      if (out !== null) return out;
    }
  }

  /**
   * Takes the turn, waiting up to waitMs for the call before it: `step` is one try (beginStep, and
   * what goes with the turn in the same write), read again at the wait's interval while it answers `held`.
   */
  async function takeTurn<T extends object>(k: LiveKey, waitMs: number, step: (s: LiveState, at: machine.At, first: boolean) => T | { held: number }): Promise<T | { busyAnswer: BeginAnswer }> {
    const start = now();
    for (let first = true; ; first = false) {
      const { out } = await apply(k, (s, at) => step(s, at, first)).catch(tooLarge);
      if (!("held" in out)) return out;
      const left = start + waitMs - now();
      if (left <= 0) return { busyAnswer: machine.busyAnswer(out.held, now()) };
      await sleep(Math.min(left, interval(start)));
    }
  }

  /** A command whose request would pass the item's bound: nothing of the transition was written. */
  function tooLarge(e: unknown): never {
    if (!(e instanceof LiveItemTooLarge)) throw e;
    throw new ToolError("PAYLOAD_TOO_LARGE", `This command's request is too large for a live sandbox on this deployment (${e.message}). Nothing ran. Call without keep_alive (a fresh sandbox takes any request), or put a long script in a file and run the file.`, { bytes: e.bytes });
  }

  /** Waits for the pending command's answer (or its runner's lateness); `then`, in the write that collects it (call: the turn given back). */
  const answerOf = (k: LiveKey, ref: machine.PendingRef, then: (s: LiveState, a: RunAnswer) => void = () => {}) =>
    waitFor(k, (s, at) => {
      machine.checkRun(s, at, ref);
      const a = machine.collect(s, ref);
      if (a) then(s, a);
      return a;
    });

  async function run(k: LiveKey, turn: string, request: unknown, o: RunOptions): Promise<RunAnswer> {
    const r = await apply(k, (s, at) => machine.run(s, at, turn, request, o)).catch(tooLarge);
    return "answer" in r.out ? r.out.answer : answerOf(k, r.out.pending);
  }

  /**
   * begin, run and release in as few writes as the rules allow (call.ts): the turn and the command in
   * one, the answer collected and the turn given back in one.
   */
  async function call(k: LiveKey, request: unknown, o: CallOptions): Promise<CallAnswer> {
    const giveBack = (b: { turn: string }) => (s: LiveState, a: RunAnswer) => void (keepsTurn(a) || machine.release(s, b.turn));
    type Step = { begun: BeginAnswer } | { b: Extract<BeginAnswer, { generation: string }>; r: ReturnType<typeof machine.run> };
    const t = await takeTurn<Step>(k, o.wait_ms, (s, at, first) => {
      const b = machine.beginStep(s, at, o.turn_ms, o.sandbox ?? "", o.join === true, first);
      if ("held" in b || !runsAtOnce(b, isServed(s), o)) return "held" in b ? b : { begun: b };
      const r = machine.run(s, at, b.turn, request, runOptions(o));
      if ("answer" in r) giveBack(b)(s, r.answer);
      return { b, r };
    });
    if ("busyAnswer" in t) return { begun: t.busyAnswer };
    if (!("r" in t)) return { begun: t.begun };
    const a = "answer" in t.r ? t.r.answer : await answerOf(k, t.r.pending, giveBack(t.b));
    return ranAnswer(t.b, a);
  }

  const release = async (k: LiveKey, turn: string) => void (await apply(k, (s) => machine.release(s, turn)));

  /**
   * The runner's answer, taken by `transition` (machine.result, or with the next poll in the same
   * write); one too large to hand over in the item is replaced by an error that says what to do.
   */
  async function answer<T>(k: LiveKey, post: LiveResultPost, transition: (s: LiveState, at: machine.At, post: LiveResultPost) => T): Promise<T> {
    try {
      return (await apply(k, (s, at) => transition(s, at, post))).out;
    } catch (e) {
      if (!(e instanceof LiveItemTooLarge)) throw e;
      const message = `The command ran in the live sandbox (its file changes were written back as usual), but its result is too large to hand over on this deployment (${e.message}). Call without keep_alive for results of any size, or have the command write its output to a file and read that.`;
      return (await apply(k, (s, at) => transition(s, at, { ...post, response: { ok: false, error: { code: "PAYLOAD_TOO_LARGE", message } } }))).out;
    }
  }

  /** A runner's poll as `transition` took it: answered, or held (read again until pollOutcome answers, poll_ms at most). */
  async function poll(k: LiveKey, out: LiveNext | { held: machine.PollRef }): Promise<LiveNext> {
    if (!("held" in out)) return out;
    const ref = out.held;
    const due = ref.since + timings.poll_ms;
    return waitFor(k, (s, at) => machine.pollOutcome(s, at, ref, at.now >= due), due);
  }

  return {
    async begin(k, o) {
      const t = await takeTurn(k, o.wait_ms, (s, at, first) => machine.beginStep(s, at, o.turn_ms, o.sandbox ?? "", o.join === true, first));
      return "busyAnswer" in t ? t.busyAnswer : t;
    },
    call,
    run,
    release,
    next: async (k, generation, status) => poll(k, (await apply(k, (s, at) => machine.next(s, at, generation, status))).out),
    result: async (k, generation, post) => answer(k, post, (s, at, p) => machine.result(s, at, generation, p)),
    // One write: the answer and the next poll (the answer's outcome is set before the poll is taken, in the same state).
    resultThenNext: async (k, generation, post) => poll(k, await answer(k, post, (s, at, p) => resultThenNext(s, at, generation, p))),
    ended: async (k, generation, e) => (await apply(k, (s, at) => machine.ended(s, at, generation, e))).out,
    status: async (k) => (await apply(k, (s, at) => machine.status(s, at))).out,
    end: async (k, reason) => (await apply(k, (s, at) => machine.end(s, at, reason))).out,
    // Read again at the wait's interval (no write: the state is unchanged) until the runner's report is there or wait_ms passed.
    lostAtEnd: async (k, generation, wait_ms) => {
      const until = now() + wait_ms;
      const r = await waitFor(k, (s, at) => machine.lostAtEnd(s, generation) ?? (at.now >= until ? "unknown" : null), until);
      return r === "unknown" ? null : r;
    },
  };
}

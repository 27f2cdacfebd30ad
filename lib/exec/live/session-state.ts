/**
 * The one state machine of a session's live sandbox (issue #29, docs/live-sessions.md): which
 * generation of live runner is current, the turn (one command at a time), the command in flight,
 * the runner's held poll, what the previous runner lost. The state is plain JSON (LiveState,
 * session-records.ts); each transition takes it with the time and its input, changes it and
 * answers, never waits: a host keeps the state and does the waiting. Two kinds of host: one process
 * (session.ts: the memory coordinator and the Durable Object), where a waiter is woken the moment a
 * transition answers it, and a DynamoDB item (dynamodb.ts), where a waiter reads the item again
 * until its answer is there. Bundles for Workers.
 *
 * Every transition answers the generations that ended in it (`ends`): the caller accounts for them
 * (lease, usage, audit) exactly once. Here the tool's side and the routes; the runner's side is
 * session-runner.ts, the life of a generation both share session-generation.ts (re-exported here:
 * a host imports the machine from this one file).
 */
import { randomId } from "../../shared/hash.js";
import { lostOf, type LiveEndReason, type LiveLost } from "../../sync/live-types.js";
import type { BeginAnswer, LiveEnd, RunAnswer, RunOptions, SandboxView } from "./types.js";
import { reportedOf, sandboxKeyId, takeLoss, type Generation, type LiveState, type Pending } from "./session-records.js";
import { checkStale, finish, lateness, lostAnswer, newGeneration, offer, open, same, type At, type PendingRef } from "./session-generation.js";

export type { At, PendingRef, PollRef } from "./session-generation.js";
export { ended, next, pollOutcome, result } from "./session-runner.js";

// ---- the tool's side ----

/**
 * One step of taking the session's turn: a join (`first`, before any wait) with no runner to run in
 * answers `none`; a turn another call holds answers `held` (when it runs out: the host waits, or
 * answers busyAnswer); else the turn is taken, and the answer says whether a runner must be started.
 */
export function beginStep(s: LiveState, at: At, turnMs: number, sandbox: string, join: boolean, first: boolean): BeginAnswer | { held: number } {
  if (join && first) {
    const stale = checkStale(s, at);
    if (!s.gen) return none(s, stale, sandbox);
  }
  if (s.turn && s.turn.expires_at > at.now) return { held: s.turn.expires_at };
  s.turn = { id: randomId(16), expires_at: at.now + turnMs };
  const ends = checkStale(s, at);
  if (join && s.gen?.sandbox !== sandbox) {
    release(s, s.turn.id);
    return none(s, ends, sandbox, !!s.gen);
  }
  // A sandbox started with other access (another API key, network, secrets) than this call's is not this call's: replaced.
  if (s.gen && s.gen.sandbox !== sandbox) ends.push(finish(s, at, s.gen, "replaced", lostOf(s.gen.status)));
  const loss = takeLoss(s, sandbox, false);
  const lost = loss ? { lost: loss } : {};
  if (s.gen) return { turn: s.turn.id, generation: s.gen.generation, ...lost, ends };
  return { turn: s.turn.id, start: { generation: newGeneration(s, at, sandbox) }, ...lost, ends };
}

/** The turn is held until `until`: Retry-After when it would run out at the latest, within [1, 60] s (a command usually ends well before). */
export const busyAnswer = (until: number, now: number): BeginAnswer => ({ busy: { retry_after_s: Math.min(60, Math.max(1, Math.ceil((until - now) / 1000))) }, ends: [] });

/**
 * Runs one command on the current runner (the caller holds the turn): the command is pending (handed
 * to the runner's held poll at once when there is one; its caller waits for its outcome), or answered
 * now: refused, or the runner was lost before (a new generation is made: start it and run again).
 */
export function run(s: LiveState, at: At, turn: string, request: unknown, opts: RunOptions): { answer: RunAnswer } | { pending: PendingRef } {
  if (!s.turn || s.turn.id !== turn) return { answer: { refused: "turn_expired", ends: [] } };
  const ends = checkStale(s, at);
  if (!s.gen) return { answer: lostAnswer(s, at, ends) };
  const gen = s.gen;
  if (opts.lease) gen.lease = opts.lease;
  s.turn.expires_at = at.now + opts.timeout_ms + at.timings.start_wait_ms + at.timings.stale_ms;
  const p: Pending = { generation: gen.generation, seq: ++gen.seq, request, timeout_ms: opts.timeout_ms, until: s.turn.expires_at, ends };
  s.pending = p;
  offer(s, at);
  return { pending: { generation: p.generation, seq: p.seq } };
}

/**
 * The pending command's runner is late (it never came; it stopped polling; it overran the command's
 * timeout by stale_ms): its outcome is set (unavailable, or lost with a new generation). Else in how
 * many ms to look again; null when there is nothing more to look at.
 */
export function checkRun(s: LiveState, at: At, ref: PendingRef): number | null {
  const p = open(s);
  if (!p || !same(p, ref)) return null;
  const gen = s.gen;
  if (!gen || gen.generation !== p.generation) {
    p.outcome = { refused: "turn_expired", ends: [] }; // the session moved on without it (its turn ran out)
    return null;
  }
  const late = lateness(gen, at, p);
  if (late === null) return runCheckIn(gen, at, p);
  if (late === "never_started") {
    const end = finish(s, at, gen, "crashed", lostOf(undefined));
    s.loss = null; // nothing was lost: it never ran
    p.outcome = { unavailable: { waited_ms: at.now - gen.requested_at }, ends: [end] };
    return null;
  }
  const end = finish(s, at, gen, "crashed", lostOf(gen.status));
  p.outcome = lostAnswer(s, at, [end]);
  return null;
}

/** In how many ms the pending command's runner is due (to come, to poll, to answer). */
export function runCheckIn(g: Generation, at: At, p: Pending): number {
  const t = at.timings;
  const due = g.seen_at === undefined ? g.requested_at + t.start_wait_ms : p.taken_at !== undefined ? p.taken_at + p.timeout_ms + t.stale_ms : g.seen_at + t.stale_ms;
  return Math.max(10, due - at.now + 1);
}

/** The pending command's answer, taken by its caller (the command leaves the session); null: not answered yet. */
export function collect(s: LiveState, ref: PendingRef): RunAnswer | null {
  const p = s.pending;
  if (!p || !same(p, ref)) return { refused: "turn_expired", ends: [] }; // gone: another call's turn replaced it
  if (!p.outcome) return null;
  s.pending = null;
  return { ...p.outcome, ends: [...p.ends, ...p.outcome.ends] } as RunAnswer;
}

/** Gives the turn back (the call answered). */
export function release(s: LiveState, turn: string): void {
  if (s.turn?.id === turn) s.turn = null;
}

// ---- the routes ----

export function status(s: LiveState, at: At): { sandbox: SandboxView | null; ends: LiveEnd[] } {
  const ends = checkStale(s, at);
  const g = s.gen;
  if (!g) return { sandbox: null, ends };
  const st = g.status;
  const keyId = sandboxKeyId(g.sandbox);
  return {
    sandbox: {
      generation: g.generation, ...(keyId !== undefined ? { key_id: keyId } : {}),
      state: g.seen_at === undefined ? "starting" : open(s)?.taken_at !== undefined ? "running" : "idle",
      started_at: st?.started_at ?? g.requested_at,
      last_used_at: st?.last_used_at ?? g.requested_at,
      ...(st ? { reported_at: st.started_at + st.wall_ms } : {}),
      ...reportedOf(st),
      wall_ms: st ? st.wall_ms + (at.now - (g.seen_at ?? at.now)) : 0,
    },
    ends,
  };
}

/** Ends the current runner now (DELETE, a start that failed): its poll is told `reason`; a command in flight is answered lost. */
export function end(s: LiveState, at: At, reason: LiveEndReason): { ended: SandboxView | null; ends: LiveEnd[] } {
  const view = status(s, at);
  const g = s.gen;
  if (!g) return { ended: null, ends: view.ends };
  const e = finish(s, at, g, reason, lostOf(g.status));
  const p = open(s);
  if (p) p.outcome = lostAnswer(s, at, []);
  return { ended: view.sandbox, ends: [...view.ends, e] };
}

/**
 * What `generation`, ended by end(), lost as its runner reported at its end (session-runner.ts ended): null while it
 * has not reported; "unknown" once its loss is not the session's to read (taken by a call, replaced by a later one).
 */
export function lostAtEnd(s: LiveState, generation: string): LiveLost | "unknown" | null {
  const loss = s.loss;
  if (!loss || loss.generation !== generation) return "unknown";
  if (!loss.reported) return null;
  return { lost_processes: loss.lost_processes, ...(loss.lost_total !== undefined ? { lost_total: loss.lost_total } : {}) };
}

// ---- inside ----

/** A join with no runner to run in (none, or another access's: `other_access`): an untold loss of its own key goes with it, the caller tells it; another key's stays for that key. */
function none(s: LiveState, ends: LiveEnd[], sandbox: string, other_access = false): BeginAnswer {
  const loss = takeLoss(s, sandbox, true);
  return { none: { ...(other_access ? { other_access } : {}), ...(loss ? { lost: loss } : {}) }, ends };
}

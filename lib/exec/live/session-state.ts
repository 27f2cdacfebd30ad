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
 * (lease, usage, audit) exactly once.
 */
import { randomId } from "../../shared/hash.js";
import { boundedEnded, lostOf, type LiveEndReason, type LiveLost, type LiveEnded, type LiveNext, type LiveResultPost, type LiveStatus } from "../../sync/live-types.js";
import type { BeginAnswer, LiveEnd, LiveTimings, RunAnswer, RunOptions, SandboxView } from "./types.js";
import { endRestOf, keptWritten, reportedOf, sandboxKeyId, takeLoss, takeStatus, type Generation, type LiveState, type Pending, type Poll } from "./session-records.js";

/** When a transition happens, and the session's timings. */
export type At = { now: number; timings: LiveTimings };

/** Which command or which poll a waiter waits on. */
export type PendingRef = Pick<Pending, "generation" | "seq">;
export type PollRef = Pick<Poll, "generation" | "id" | "since">;

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
  const p: Pending = { generation: gen.generation, seq: ++gen.seq, request, timeout_ms: opts.timeout_ms, ends };
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

// ---- the runner's side (LiveHub) ----

/** A runner's poll: answered now (a command waiting, its end), or held (the host waits for pollOutcome). An older poll of it is replaced. */
export function next(s: LiveState, at: At, generation: string, status: LiveStatus): LiveNext | { held: PollRef } {
  const gen = s.gen;
  if (!gen || gen.generation !== generation) return { end: toldEnd(s, generation) };
  gen.seen_at = at.now;
  takeStatus(gen, status);
  if (gen.ending) return { end: gen.ending };
  const poll: Poll = { generation, id: randomId(12), since: at.now };
  s.poll = poll; // a runner polls once at a time: an older poll's holder is answered wait (pollOutcome)
  offer(s, at);
  return poll.taken === undefined ? { held: { generation, id: poll.id, since: poll.since } } : (pollOutcome(s, at, poll, false) as LiveNext);
}

/**
 * A held poll's answer, when it has one: the command handed to it, wait (its poll_ms passed:
 * `timedOut`; a newer poll replaced it), or its generation's end. null: still held.
 */
export function pollOutcome(s: LiveState, at: At, ref: PollRef, timedOut: boolean): LiveNext | null {
  const poll = s.poll;
  if (!poll || poll.id !== ref.id) {
    if (s.gen?.generation !== ref.generation) return { end: s.told.find(([g]) => g === ref.generation)?.[1] ?? "replaced" };
    s.gen.seen_at = at.now;
    return { wait: true };
  }
  if (poll.taken === undefined && !timedOut) return null;
  s.poll = null;
  if (s.gen?.generation === poll.generation) s.gen.seen_at = at.now;
  const p = s.pending;
  if (poll.taken === undefined || !p || p.seq !== poll.taken || p.generation !== poll.generation) return { wait: true };
  const command = { seq: p.seq, request: p.request };
  delete p.request; // the runner has it: the state need not hold it any longer
  return { command };
}

export function result(s: LiveState, at: At, generation: string, post: LiveResultPost): void {
  const gen = s.gen;
  if (!gen || gen.generation !== generation) return;
  gen.seen_at = at.now;
  takeStatus(gen, post.status);
  const p = open(s);
  if (!p || p.generation !== generation || p.seq !== post.seq || p.taken_at === undefined) return;
  if (post.response.ok) gen.served = true;
  p.outcome = { response: post.response, ends: [] };
}

/** The runner's last word. Answers its end when it was current (not already ended by end() or a loss). */
export function ended(s: LiveState, at: At, generation: string, e: LiveEnded): LiveEnd[] {
  s.told = s.told.filter(([g]) => g !== generation);
  const gen = s.gen;
  if (!gen || gen.generation !== generation) {
    // Already ended here (DELETE, a replacement, a loss): its final write-back still goes into what the next call is told.
    if (s.loss?.generation === generation && e.written) s.loss = { ...s.loss, written: keptWritten(e.written) };
    return [];
  }
  const told = boundedEnded(e);
  gen.status = told.status;
  const end = finish(s, at, gen, told.reason, told, told.written);
  const p = open(s);
  if (p) p.outcome = lostAnswer(s, at, []);
  return [end];
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

// ---- inside ----

/** The command in flight, unless it is answered already (its caller has not collected it yet). */
const open = (s: LiveState): Pending | null => (s.pending && !s.pending.outcome ? s.pending : null);
const same = (p: PendingRef, ref: PendingRef) => p.generation === ref.generation && p.seq === ref.seq;

/** A join with no runner to run in (none, or another access's: `other_access`): an untold loss of its own key goes with it, the caller tells it; another key's stays for that key. */
function none(s: LiveState, ends: LiveEnd[], sandbox: string, other_access = false): BeginAnswer {
  const loss = takeLoss(s, sandbox, true);
  return { none: { ...(other_access ? { other_access } : {}), ...(loss ? { lost: loss } : {}) }, ends };
}

function newGeneration(s: LiveState, at: At, sandbox = s.gen?.sandbox ?? s.lastSandbox): string {
  const generation = `g_${randomId(16)}`;
  s.gen = { generation, requested_at: at.now, seq: 0, sandbox };
  s.lastSandbox = sandbox;
  return generation;
}

/** A lost command's answer: what was lost, and (the caller holding the turn) a new generation to start. */
function lostAnswer(s: LiveState, at: At, ends: LiveEnd[]): RunAnswer {
  const loss = s.loss ?? { reason: "crashed" as const, lost_processes: [], generation: "" };
  const interrupted = s.pending?.taken_at !== undefined;
  s.loss = null;
  return { lost: loss, interrupted, start: { generation: newGeneration(s, at) }, ends };
}

/** The current generation leaves: its loss is kept for the next call, its runner told to end if it polls again (its held poll at once). */
function finish(s: LiveState, at: At, g: Generation, reason: LiveEndReason, lostNow: LiveLost, written?: LiveEnded["written"]): LiveEnd {
  const lost = { lost_processes: lostNow.lost_processes, ...(lostNow.lost_total !== undefined ? { lost_total: lostNow.lost_total } : {}) };
  s.gen = null;
  s.told = [...s.told.filter(([x]) => x !== g.generation), [g.generation, reason] as [string, LiveEndReason]].slice(-8);
  if (s.poll?.generation === g.generation) s.poll = null; // its holder is answered the end (pollOutcome)
  // A runner that never came lost nothing; one that did is told to the session's next call, unless its workspace went
  // with it: that call is another workspace's (one made again under the id), and nothing of the gone one is its to hear.
  const keyId = sandboxKeyId(g.sandbox);
  s.loss = g.seen_at !== undefined && reason !== "workspace_deleted" ? { generation: g.generation, reason, ...(keyId !== undefined ? { key_id: keyId } : {}), ...lost, ...(written ? { written: keptWritten(written) } : {}) } : null;
  const st = g.status;
  return {
    generation: g.generation, reason, arrived: g.seen_at !== undefined,
    started_at: st?.started_at ?? g.requested_at, ended_at: at.now,
    wall_ms: st ? Math.max(st.wall_ms, at.now - st.started_at) : 0,
    ...(st?.cpu_ms !== undefined ? { cpu_ms: st.cpu_ms } : {}),
    ...endRestOf(st),
    ...(g.lease ? { lease: g.lease } : {}),
    ...lost,
  };
}

function toldEnd(s: LiveState, generation: string): LiveEndReason {
  const r = s.told.find(([g]) => g === generation)?.[1];
  s.told = s.told.filter(([g]) => g !== generation);
  return r ?? "replaced";
}

/** Hands the pending command to a held poll of the current generation. */
function offer(s: LiveState, at: At): void {
  const p = open(s);
  const poll = s.poll;
  if (!p || p.taken_at !== undefined || !poll || poll.taken !== undefined || poll.generation !== s.gen?.generation || p.generation !== poll.generation) return;
  p.taken_at = at.now;
  poll.taken = p.seq;
}

/** null: in time; else why the runner is taken for gone. */
function lateness(g: Generation, at: At, p?: Pending): "never_started" | "stale" | null {
  const t = at.timings;
  if (g.seen_at === undefined) return at.now - g.requested_at > t.start_wait_ms ? "never_started" : null;
  if (p?.taken_at !== undefined) return at.now - p.taken_at > p.timeout_ms + t.stale_ms ? "stale" : null;
  return at.now - g.seen_at > t.stale_ms ? "stale" : null;
}

/**
 * A runner that stopped polling (and runs no command) is lost; a held poll keeps it seen. A poll
 * held past poll_ms + stale_ms has no holder any more (a host that died holding it): it no longer counts.
 */
function checkStale(s: LiveState, at: At): LiveEnd[] {
  const g = s.gen;
  const held = s.poll && s.poll.generation === g?.generation && at.now - s.poll.since <= at.timings.poll_ms + at.timings.stale_ms;
  if (!g || open(s) || held) return [];
  const late = lateness(g, at);
  if (!late) return [];
  return [finish(s, at, g, "crashed", lostOf(late === "stale" ? g.status : undefined))];
}

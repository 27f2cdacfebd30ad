/**
 * The runner's side of a session's live sandbox state machine (session-state.ts holds the tool's
 * side and the routes; LiveHub calls these): a runner's poll (answered now or held), a held poll's
 * answer, the command's result, the runner's last word.
 */
import { randomId } from "../../shared/hash.js";
import { boundedEnded, type LiveEnded, type LiveNext, type LiveResultPost, type LiveStatus } from "../../sync/live-types.js";
import type { LiveEnd } from "./types.js";
import { keptWritten, takeStatus, type LiveState, type Poll } from "./session-records.js";
import { finish, lostAnswer, offer, open, toldEnd, type At, type PollRef } from "./session-generation.js";

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
    // Already ended here (DELETE, a replacement, a loss): what its runner found at its end goes into what the next call
    // is told, in place of the last status report's (a process that exited since is no loss): the processes still
    // running as it ended, and its final write-back. Before 2026-12-02 the processes were the last report's.
    if (s.loss?.generation === generation) {
      const told = boundedEnded(e);
      const { lost_total: _t, ...loss } = s.loss;
      s.loss = { ...loss, lost_processes: told.lost_processes, ...(told.lost_total !== undefined ? { lost_total: told.lost_total } : {}), reported: true, ...(told.written ? { written: keptWritten(told.written) } : {}) };
    }
    return [];
  }
  const told = boundedEnded(e);
  gen.status = told.status;
  const end = finish(s, at, gen, told.reason, told, told.written);
  if (s.loss) s.loss.reported = true; // its processes are its runner's at its end
  const p = open(s);
  if (p) p.outcome = lostAnswer(s, at, []);
  return [end];
}

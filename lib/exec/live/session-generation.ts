/**
 * The life of a session's live runner generation, shared by the state machine's two sides
 * (session-state.ts: the tool's side and the routes; session-runner.ts: the runner's side): a
 * generation made, handed its command, found late, lost or finished (what it lost kept for the
 * next call, its end told to its runner). Plain JSON in (LiveState, session-records.ts), never waits.
 */
import { randomId } from "../../shared/hash.js";
import { lostOf, type LiveEndReason, type LiveLost, type LiveEnded } from "../../sync/live-types.js";
import type { LiveEnd, LiveTimings, RunAnswer } from "./types.js";
import { endRestOf, keptWritten, sandboxKeyId, type Generation, type LiveState, type Pending, type Poll } from "./session-records.js";

/** When a transition happens, and the session's timings. */
export type At = { now: number; timings: LiveTimings };

/** Which command or which poll a waiter waits on. */
export type PendingRef = Pick<Pending, "generation" | "seq">;
export type PollRef = Pick<Poll, "generation" | "id" | "since">;

/** The command in flight, unless it is answered already (its caller has not collected it yet). */
export const open = (s: LiveState): Pending | null => (s.pending && !s.pending.outcome ? s.pending : null);
export const same = (p: PendingRef, ref: PendingRef) => p.generation === ref.generation && p.seq === ref.seq;

/** A new generation of runner, current from now (the caller starts it), for `sandbox`: the current one's, else the last one's. */
export function newGeneration(s: LiveState, at: At, sandbox = s.gen?.sandbox ?? s.lastSandbox): string {
  const generation = `g_${randomId(16)}`;
  s.gen = { generation, requested_at: at.now, seq: 0, sandbox };
  s.lastSandbox = sandbox;
  return generation;
}

/** A lost command's answer: what was lost, and (the caller holding the turn) a new generation to start. */
export function lostAnswer(s: LiveState, at: At, ends: LiveEnd[]): RunAnswer {
  const loss = s.loss ?? { reason: "crashed" as const, lost_processes: [], generation: "" };
  const interrupted = s.pending?.taken_at !== undefined;
  s.loss = null;
  return { lost: loss, interrupted, start: { generation: newGeneration(s, at) }, ends };
}

/** The current generation leaves: its loss is kept for the next call, its runner told to end if it polls again (its held poll at once). */
export function finish(s: LiveState, at: At, g: Generation, reason: LiveEndReason, lostNow: LiveLost, written?: LiveEnded["written"]): LiveEnd {
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

export function toldEnd(s: LiveState, generation: string): LiveEndReason {
  const r = s.told.find(([g]) => g === generation)?.[1];
  s.told = s.told.filter(([g]) => g !== generation);
  return r ?? "replaced";
}

/** Hands the pending command to a held poll of the current generation. */
export function offer(s: LiveState, at: At): void {
  const p = open(s);
  const poll = s.poll;
  if (!p || p.taken_at !== undefined || !poll || poll.taken !== undefined || poll.generation !== s.gen?.generation || p.generation !== poll.generation) return;
  p.taken_at = at.now;
  poll.taken = p.seq;
}

/** null: in time; else why the runner is taken for gone. */
export function lateness(g: Generation, at: At, p?: Pending): "never_started" | "stale" | null {
  const t = at.timings;
  if (g.seen_at === undefined) return at.now - g.requested_at > t.start_wait_ms ? "never_started" : null;
  if (p?.taken_at !== undefined) return at.now - p.taken_at > p.timeout_ms + t.stale_ms ? "stale" : null;
  return at.now - g.seen_at > t.stale_ms ? "stale" : null;
}

/**
 * A runner that stopped polling (and runs no command) is lost; a held poll keeps it seen. A poll
 * held past poll_ms + stale_ms has no holder any more (a host that died holding it): it no longer counts.
 *
 * A runner with a command in flight is its caller's to find late (session-state.ts checkRun: the end goes
 * with the command's answer) while the caller's turn lasts. Past it the caller is gone too (its isolate or
 * Lambda died): a runner then late by the command's own bound (lateness: the command's timeout overrun by
 * stale_ms, or never taken and no poll for stale_ms) is lost here, by whoever asks next (a call, GET
 * .../sandbox, an acquirer past concurrent_runs: its slot freed), and the command's answer, which nobody
 * waits for, is turn_expired. Before (2026-12-02) such a runner held its slot until its lease ran out.
 */
export function checkStale(s: LiveState, at: At): LiveEnd[] {
  const g = s.gen;
  const held = s.poll && s.poll.generation === g?.generation && at.now - s.poll.since <= at.timings.poll_ms + at.timings.stale_ms;
  if (!g || held) return [];
  const p = open(s);
  if (p && (p.generation !== g.generation || p.until === undefined || at.now < p.until)) return [];
  const late = lateness(g, at, p ?? undefined);
  if (!late) return [];
  const end = finish(s, at, g, "crashed", lostOf(late === "stale" ? g.status : undefined));
  if (p) {
    if (late === "never_started") s.loss = null; // nothing was lost: it never ran
    p.outcome = { refused: "turn_expired", ends: [] }; // its caller is gone: nobody collects it but the next run
  }
  return [end];
}

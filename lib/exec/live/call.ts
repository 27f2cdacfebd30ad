/**
 * One live command in one coordinator request (docs/live-sessions.md): the session's turn taken,
 * the command run on the session's runner and the turn given back with its answer, where three
 * requests were (begin, run, release). Only when the runner can take the command as it is: no
 * runner to start, no loss to tell, and, for a request without the session's saved shell
 * (`stateless`), a runner that has answered a command before (its shell holds the state). The
 * turn stays with the caller when the answer reports a shell state to save (its PUT then lands
 * before the session's next command) or the runner was lost (the caller runs again). The rules are
 * here (runsAtOnce, keepsTurn, ranAnswer); the in-process coordinators (memory.ts, the Durable
 * Object) answer through callOnce, the DynamoDB one (dynamodb.ts) applies them inside its item's
 * transitions (the turn and the command in one write, the answer and the turn's return in one).
 * The runner's side has its own one: its command's answer and its next poll in one transition
 * (resultThenNext). Bundles for Workers.
 */
import type { LiveNext, LiveResultPost } from "../../sync/live-types.js";
import type { LiveState } from "./session-records.js";
import * as machine from "./session-state.js";
import type { BeginAnswer, CallAnswer, CallOptions, RunAnswer, RunOptions } from "./types.js";

/** One session as callOnce uses it: its host in one process (session.ts). */
export interface SessionTurns {
  begin(waitMs: number, turnMs: number, sandbox?: string, join?: boolean): Promise<BeginAnswer>;
  /** After begin: the session's runner has answered a command (its shell holds the state). */
  readonly served: boolean;
  run(turn: string, request: unknown, opts: RunOptions): Promise<RunAnswer>;
  release(turn: string): void | Promise<void>;
}

/** The answer reports a shell state the saved one does not hold yet (RunResult.shell without `unchanged`). */
export function savesShell(response: LiveResultPost["response"]): boolean {
  if (!response.ok) return false;
  const shell = (response.result as { shell?: { unchanged?: boolean } } | null)?.shell;
  return !!shell && shell.unchanged !== true;
}

/** The command goes to the session's runner with the turn: there is one, nothing to tell first, and (`stateless`) its shell holds the session's state (`served`). */
export function runsAtOnce(b: BeginAnswer, served: boolean, o: CallOptions): b is Extract<BeginAnswer, { generation: string }> {
  return !("busy" in b || "none" in b || "start" in b || b.lost || (o.stateless && !served));
}

/** The caller keeps the turn after the answer: a shell state to save first, or a loss to run again after. */
export const keepsTurn = (a: RunAnswer): boolean => "lost" in a || ("response" in a && savesShell(a.response));

/** The call's answer once the command ran on the turn `b` took. */
export const ranAnswer = (b: { turn: string; ends: RunAnswer["ends"] }, a: RunAnswer): CallAnswer => ({ ran: { ...a, ends: [...b.ends, ...a.ends] } as RunAnswer, turn: b.turn, released: !keepsTurn(a) });

/** A call's run options from its CallOptions. */
export const runOptions = (o: CallOptions): RunOptions => ({ timeout_ms: o.timeout_ms, ...(o.lease ? { lease: o.lease } : {}) });

/**
 * A runner's answer that is also its next poll (LiveResultPost.poll), as one transition: the answer
 * recorded first, then the poll (its status the answer's), answered as machine.next answers. Every
 * coordinator takes it so (a DynamoDB item: one write where result and next were two).
 */
export function resultThenNext(s: LiveState, at: machine.At, generation: string, post: LiveResultPost): LiveNext | { held: machine.PollRef } {
  machine.result(s, at, generation, post);
  return machine.next(s, at, generation, post.status);
}

export async function callOnce(s: SessionTurns, request: unknown, o: CallOptions): Promise<CallAnswer> {
  const b = await s.begin(o.wait_ms, o.turn_ms, o.sandbox, o.join);
  if (!runsAtOnce(b, s.served, o)) return { begun: b };
  // A run that fails (its request refused, the coordinator unreachable) gives the turn back: the caller never held it.
  const a = await s.run(b.turn, request, runOptions(o)).catch(async (e: unknown) => {
    await Promise.resolve(s.release(b.turn)).catch(() => {});
    throw e;
  });
  if (!keepsTurn(a)) await s.release(b.turn);
  return ranAnswer(b, a);
}

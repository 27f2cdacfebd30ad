/**
 * One live command in one coordinator request (docs/live-sessions.md): the session's turn taken,
 * the command run on the session's runner and the turn given back with its answer, where three
 * requests were (begin, run, release). Only when the runner can take the command as it is: no
 * runner to start, no loss to tell, and, for a request without the session's saved shell
 * (`stateless`), a runner that has answered a command before (its shell holds the state). The
 * turn stays with the caller when the answer reports a shell state to save (its PUT then lands
 * before the session's next command) or the runner was lost (the caller runs again). Both
 * coordinators (memory.ts, the Durable Object, dynamodb.ts) answer through this function. Bundles for Workers.
 */
import type { LiveResultPost } from "../../sync/live-types.js";
import type { BeginAnswer, CallAnswer, CallOptions, RunAnswer, RunOptions } from "./types.js";

/** One session as callOnce uses it: a host of the state machine (session.ts in one process; dynamodb.ts's item). */
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

export async function callOnce(s: SessionTurns, request: unknown, o: CallOptions): Promise<CallAnswer> {
  const b = await s.begin(o.wait_ms, o.turn_ms, o.sandbox, o.join);
  if ("busy" in b || "none" in b || "start" in b || b.lost || (o.stateless && !s.served)) return { begun: b };
  // A run that fails (its request refused, the coordinator unreachable) gives the turn back: the caller never held it.
  const a = await s.run(b.turn, request, { timeout_ms: o.timeout_ms, ...(o.lease ? { lease: o.lease } : {}) }).catch(async (e: unknown) => {
    await Promise.resolve(s.release(b.turn)).catch(() => {});
    throw e;
  });
  const ran = { ...a, ends: [...b.ends, ...a.ends] } as RunAnswer;
  const keep = "lost" in a || ("response" in a && savesShell(a.response));
  if (!keep) await s.release(b.turn);
  return { ran, turn: b.turn, released: !keep };
}

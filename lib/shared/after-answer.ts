/**
 * The one way to run work after a request's answer (usage records, audit entries, the idempotent
 * answer's PUT, traces, seals, the index's upkeep, session records, pruning, quota and lease refills).
 *
 * Handing the runtime's waitUntil a *promise* runs the work's synchronous prefix (JSON.stringify of
 * an entry, building keys, issuing the storage request) on the call's path, before the answer is
 * returned. `afterAnswer` takes a *thunk* instead: it registers with waitUntil at once (the runtime
 * keeps the isolate, or the Lambda handler, alive until the work settles) and starts the thunk one
 * timer turn later (a macrotask: the handler's answer, already returned, leaves first; Workers run a
 * request's timers in that request, kept alive by its waitUntil). A failure is logged, never an
 * unhandled rejection.
 *
 * Without a waitUntil (Node tests without an execution context, doors that do not pass one) each
 * caller says what it did before, explicitly (`otherwise`): await the work inline, start it and go
 * on, or skip it.
 *
 * Work that must *start* before the answer (its order with later calls matters: a queue a later
 * charge joins, a kill flag, a call already running) but may end after it goes through
 * `finishAfterAnswer`, with a comment at the caller saying why. Nothing else calls a waitUntil
 * (test/architecture.node.test.ts checks it).
 */

/** The runtime's waitUntil (Workers' ExecutionContext; lib/runtime/lambda-stream.ts on Lambda): keeps the request alive until the promise settles. */
export type WaitUntil = (p: Promise<unknown>) => void;

/**
 * What a caller does with the work when there is no waitUntil:
 * - "await": runs it now; the promise afterAnswer returns is the work's (the caller awaits it inline; a rejection reaches it, as before);
 * - "start": starts it now and does not wait (a failure is logged);
 * - "skip": nothing (work only worth doing off the call's path).
 */
export type WithoutWaitUntil = "await" | "start" | "skip";

const logFailure = (what: string) => (e: unknown) => {
  console.error(`${what}: failed after the answer`, e instanceof Error ? e.message : String(e));
};

/** One timer turn: what was queued as microtasks (the answer's return) goes first. */
const nextTurn = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/**
 * Runs `work` after the answer (see the header). `what` names it in the log line of a failure.
 * Returns at once (resolved) when the work is deferred, started or skipped; with `otherwise: "await"`
 * and no waitUntil, the work's own promise.
 */
export function afterAnswer(waitUntil: WaitUntil | undefined, what: string, work: () => unknown, otherwise: WithoutWaitUntil): Promise<void> {
  if (waitUntil) {
    waitUntil(nextTurn().then(work).then(() => undefined, logFailure(what)));
    return Promise.resolve();
  }
  if (otherwise === "skip") return Promise.resolve();
  const now = (async () => {
    await work();
  })();
  if (otherwise === "await") return now;
  now.catch(logFailure(what));
  return Promise.resolve();
}

/**
 * Keeps work that already started (it must start before the answer: the caller's comment says why)
 * alive until it settles, under waitUntil; its failure is logged. Without a waitUntil it runs on
 * unwatched, as any promise (its failure still logged). Returns nothing: a caller that awaits the
 * work keeps its own reference.
 */
export function finishAfterAnswer(waitUntil: WaitUntil | undefined, what: string, started: Promise<unknown>): void {
  const settled = started.then(() => undefined, logFailure(what));
  waitUntil?.(settled);
}

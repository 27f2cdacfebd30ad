/**
 * A traced live coordinator (docs/tracing.md): each request of a call to its session's coordinator
 * is a client span `live.<operation>` under the call's span. A command's answer adds what the
 * runner measured of it (its sync in, command and sync out, and how many directories its change
 * journal vouched for), so one trace attributes a live call's time to the API, the coordinator's
 * hand-off to the runner and back, and the runner's phases (docs/benchmarks/investigations-live.md).
 * The runner's own requests (poll, result, sync) are server spans of the sync routes.
 */
import type { Span, Tracer } from "../../shared/trace.js";
import type { RunResult } from "../types.js";
import type { CallAnswer, LiveCoordinator, RunAnswer } from "./types.js";

/** The runner's phases of a command's answer, on the span. */
function runnerPhases(span: Span | null, a: RunAnswer | undefined): void {
  if (!span || !a || !("response" in a) || !a.response.ok) return;
  const r = (a.response.result ?? {}) as Partial<RunResult>;
  const s = r.sync;
  if (!s) return;
  span.set("toolshed.runner.sync_in_ms", s.sync_in_ms);
  span.set("toolshed.runner.command_ms", r.duration_ms);
  span.set("toolshed.runner.sync_out_ms", s.sync_out_ms);
  span.set("toolshed.runner.walk_dirs", s.walk_dirs?.total);
  span.set("toolshed.runner.walk_vouched", s.walk_dirs?.vouched);
}

export function tracedLiveCoordinator(base: LiveCoordinator, tracer: Tracer): LiveCoordinator {
  /** A span when the call is traced (null: not traced, nothing to set). */
  const span = <T>(op: string, run: (span: Span | null) => Promise<T>): Promise<T> => (tracer.current() ? tracer.span(`live.${op}`, run, { kind: "client" }) : run(null));
  return {
    begin: (k, o) => span("begin", () => base.begin(k, o)),
    call: (k, request, o) =>
      span("call", async (s) => {
        const a: CallAnswer = await base.call(k, request, o);
        s?.set("toolshed.live.ran", "ran" in a);
        runnerPhases(s, "ran" in a ? a.ran : undefined);
        return a;
      }),
    run: (k, turn, request, o) =>
      span("run", async (s) => {
        const a = await base.run(k, turn, request, o);
        runnerPhases(s, a);
        return a;
      }),
    release: (k, turn) => span("release", () => base.release(k, turn)),
    next: (k, g, status) => base.next(k, g, status),
    result: (k, g, post) => base.result(k, g, post),
    resultThenNext: (k, g, post) => base.resultThenNext(k, g, post),
    ended: (k, g, e) => base.ended(k, g, e),
    status: (k) => span("status", () => base.status(k)),
    end: (k, reason) => span("end", () => base.end(k, reason)),
    lostAtEnd: (k, g, ms) => span("lost_at_end", () => base.lostAtEnd(k, g, ms)),
  };
}

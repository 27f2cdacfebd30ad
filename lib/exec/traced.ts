/**
 * A traced executor (docs/tracing.md): each run or task start is a client span `runner.invoke`,
 * and the request carries that span's traceparent, which the signature covers with every other
 * field (runner-auth.ts), so the runner continues the trace (infra/container/trace.ts).
 */
import type { Tracer } from "../shared/trace.js";
import type { Executor, RunRequest } from "./types.js";

export function tracedExecutor(base: Executor, tracer: Tracer): Executor {
  const attributes = (req: RunRequest, task: boolean) => ({ "toolshed.workspace": req.workspace, "toolshed.task": task, "toolshed.network": req.network === true, "toolshed.timeout_ms": req.timeout_ms });
  return {
    run: (req, caller) =>
      tracer.current()
        ? tracer.span(
            "runner.invoke",
            async (span) => {
              const result = await base.run({ ...req, traceparent: tracer.traceparent()! }, caller);
              span.set("toolshed.run_id", result.run_id);
              span.set("toolshed.exit_code", result.exit_code ?? undefined);
              span.set("toolshed.timed_out", result.timed_out);
              return result;
            },
            { kind: "client", attributes: attributes(req, false) },
          )
        : base.run(req, caller),
    start: (req) => (tracer.current() ? tracer.span("runner.invoke", () => base.start({ ...req, traceparent: tracer.traceparent()! }), { kind: "client", attributes: attributes(req, true) }) : base.start(req)),
    ...(base.foreground ? { foreground: base.foreground } : {}),
  };
}

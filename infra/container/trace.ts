/**
 * The runner's side of a trace (docs/tracing.md). An invocation whose signed event carries a
 * traceparent (lib/exec/traced.ts) runs inside `runner.run`, a child of the API's `runner.invoke`
 * span, with three phases under it:
 *   runner.sync_in     from the start until the sandbox's gate opens (manifest, downloads, reconcile)
 *   runner.command     the command, from the gate to its exit
 *   runner.write_back  from the exit until the run's answer is stored (write-back batches, output log)
 * Every sync request is a client span `sync.<method>` under the phase it falls in, and carries its
 * traceparent to the API (the handler's fetch propagates it), whose server spans of /v1/sync/*
 * (with their storage spans) hang below it. No phase edits runner.ts: the sync client and the
 * sandbox are decorated per invocation.
 *
 * The runner exports to its own TOOLSHED_OTLP_ENDPOINT (TOOLSHED_OTLP_HEADERS), before the
 * handler answers (a frozen Lambda sends nothing). Attributes: paths and counts, never contents.
 */
import { parseTraceparent, type OpenSpan, type Tracer } from "../../lib/shared/trace.js";
import type { SyncClient } from "../../lib/sync/types.js";
import type { RunRequest } from "../../lib/exec/types.js";
import type { Sandbox } from "./sandbox-spec.js";

export interface RunTrace {
  /** The sync client with a span per request, under the phase it falls in. */
  sync<C extends SyncClient>(client: C): C;
  /** The sandbox whose run opens and closes the command phase. */
  sandbox(base: Sandbox): Sandbox;
}

/** What a sync call's arguments may show: a path, or how many items a batch holds. */
function argAttributes(args: unknown[]): Record<string, string | number> {
  const [first] = args;
  if (typeof first === "string") return { "toolshed.path": first };
  if (Array.isArray(first)) return { "toolshed.items": first.length };
  return {};
}

/**
 * Runs `run` inside the runner's spans when the event continues a trace and the runner has a
 * tracer; else runs it as it is (trace null). Exports before it returns.
 */
export async function traceInvocation<T>(tracer: Tracer | undefined, req: RunRequest, task: boolean, run: (trace: RunTrace | null) => Promise<T>): Promise<T> {
  const parent = tracer ? parseTraceparent(req.traceparent) : null;
  if (!tracer || !parent) return run(null);
  try {
    return await tracer.span(
      "runner.run",
      async (root) => {
        let phase: OpenSpan = tracer.start("runner.sync_in", { parent: root.context });
        const next = (name: string) => {
          phase.end();
          phase = tracer.start(name, { parent: root.context });
        };
        const trace: RunTrace = {
          sync<C extends SyncClient>(client: C): C {
            const wrapped: Record<string, unknown> = {};
            for (const [key, value] of Object.entries(client)) {
              wrapped[key] = typeof value !== "function" ? value : (...args: unknown[]) => tracer.span(`sync.${key}`, () => value.apply(client, args), { kind: "client", parent: phase.context, attributes: argAttributes(args) });
            }
            return wrapped as C;
          },
          sandbox: (base) => ({
            check: () => base.check(),
            shellPath: (dir) => base.shellPath(dir),
            liveProbe: (hostPid, shellPid) => base.liveProbe(hostPid, shellPid),
            get runAs() {
              return base.runAs;
            },
            get hostIsolated() {
              return base.hostIsolated;
            },
            run: async (spec) => {
              const gate = spec.gate?.then((open) => {
                if (open) next("runner.command");
                return open;
              });
              if (!gate) next("runner.command");
              try {
                const exit = await base.run({ ...spec, ...(gate ? { gate } : {}) });
                phase.set("toolshed.exit_code", exit.exitCode ?? undefined);
                phase.set("toolshed.timed_out", exit.timedOut);
                return exit;
              } finally {
                next("runner.write_back");
              }
            },
          }),
        };
        try {
          const out = await run(trace);
          const refused = out as { ok?: unknown; error?: { code?: unknown } } | null;
          if (refused?.ok === false) root.fail(String(refused.error?.code ?? "error"));
          return out;
        } finally {
          phase.end();
        }
      },
      { kind: "server", parent, attributes: { "toolshed.workspace": req.workspace, "toolshed.task": task } },
    );
  } finally {
    await tracer.flush();
  }
}

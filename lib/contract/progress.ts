/**
 * The one throttle of status progress (ctx.progress, lib/contract/tool.ts): a long loop (grep's files, a
 * listing's pages, web_fetch's body) calls `update(done, total)` as often as it likes; at most one
 * status event per interval goes out, and `finish()` sends the last state, unless the whole call
 * took less than the interval (then nothing at all is sent: a quick call stays a quiet call).
 *
 * When nobody listens, `statusReporter` returns undefined and the loops call `reporter?.update(…)`:
 * optional calls on undefined evaluate nothing, so a plain call pays nothing per file.
 *
 * A call may have stages (grep lists, then searches): `stage(describe)` changes what the counts
 * mean from then on; a stage whose counts have no meaningful total leaves `done` out of its events
 * (describe decides), so the `done` a client sees never goes backwards.
 */
import type { ProgressEvent, ToolContext, ToolDeps } from "./tool.js";

/** At most one status event per this many milliseconds (deps.progress.intervalMs overrides it; tests set 0). */
export const PROGRESS_INTERVAL_MS = 250;

export type Status = Omit<Extract<ProgressEvent, { kind: "status" }>, "kind">;
/** A stage's counts as the event a client sees (called only when an event goes out). */
export type Describe = (done: number, total: number | undefined) => Status;

export interface StatusReporter {
  /** Starts a stage: later counts are described by `describe`. */
  stage(describe: Describe): void;
  /** The latest counts; sent when the interval has passed since the call started or the last event. */
  update(done: number, total?: number): void;
  /** Sends the latest counts once more, if anything was sent before or the call has run for the interval. */
  finish(): void;
}

export interface ReporterOptions {
  intervalMs?: number;
  /** The clock (tests). */
  now?: () => number;
}

/** A throttled reporter over the call's ctx.progress, or undefined when nobody listens. */
export function statusReporter(ctx: { progress?: ToolContext["progress"]; deps?: Pick<ToolDeps, "progress"> }, describe: Describe, opts: ReporterOptions = {}): StatusReporter | undefined {
  const emit = ctx.progress;
  if (!emit) return undefined;
  const interval = opts.intervalMs ?? ctx.deps?.progress?.intervalMs ?? PROGRESS_INTERVAL_MS;
  const now = opts.now ?? Date.now;
  const started = now();
  let last = started;
  let sent = false;
  let lastSent = "";
  let done = 0;
  let total: number | undefined;
  /** Counts updated since the last event. */
  let fresh = false;
  const send = () => {
    fresh = false;
    const s = describe(done, total);
    const json = JSON.stringify(s);
    if (json === lastSent) return;
    lastSent = json;
    sent = true;
    emit({ kind: "status", ...s });
  };
  return {
    stage(d) {
      describe = d;
      fresh = false;
    },
    update(d, t) {
      done = d;
      total = t;
      fresh = true;
      const at = now();
      if (at - last < interval) return;
      last = at;
      send();
    },
    finish() {
      if (fresh && (sent || now() - started >= interval)) send();
    },
  };
}

/** A byte count as people read it: 512 B, 48 KB, 3.2 MB. */
export function sizeText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * Billing records: one per tool call that reached a tenant (success or failure), written as one
 * JSON line to the runtime's logs (Workers Logs / Logpush, CloudWatch), from where a pipeline can
 * bill per call. Holds no arguments, paths or output: only who, which tool, how it ended, and the cost.
 *
 * Rules (lib/routes/tools.ts applies them): every response of a tool route carries `usage`;
 * a record is emitted once per call when the key was valid (the tenant is known), whatever
 * failed after that (scope, arguments, unknown tool, missing workspace, the tool itself);
 * a call without a valid key bills no one.
 */
import type { UsageRecord } from "../deps.js";

export function logUsage(u: UsageRecord): void {
  console.log(JSON.stringify({ type: "toolshed.usage", at: new Date().toISOString(), ...u }));
}

/**
 * Emits one call's record through `onUsage`. With `later` (the runtime's waitUntil, on Workers) it is
 * emitted once the response is on its way (the next task), still within the request's life, so the
 * log line costs the answer nothing; without it (Lambda, tests), at once.
 */
export function emitUsage(onUsage: ((u: UsageRecord) => void) | undefined, record: UsageRecord, later?: (p: Promise<unknown>) => void): void {
  if (!onUsage) return;
  if (!later) return onUsage(record);
  later(new Promise<void>((done) => setTimeout(() => {
    try {
      onUsage(record);
    } finally {
      done();
    }
  }, 0)));
}

/** The cost of one tool call so far; the error envelope reads it too. */
export class CallMeter {
  readonly started = Date.now();
  /** The workspace the call runs on, once it is open (its byte counters). */
  ws?: { bytesRead: number; bytesWritten: number };
  /** The error code the call ended with, set by the error envelope. */
  code?: string;
  /** A streamed call (SSE): settles when the stream has sent its result; the usage record waits for it. */
  done?: Promise<void>;

  constructor(readonly tool: string) {}

  usage() {
    return { ms: Date.now() - this.started, bytes_read: this.ws?.bytesRead ?? 0, bytes_written: this.ws?.bytesWritten ?? 0 };
  }
}

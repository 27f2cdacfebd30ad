/**
 * Billing records: one per tool call that reached a tenant (success or failure), written as one
 * JSON line to the runtime's logs (Workers Logs / Logpush, CloudWatch), from where a pipeline can
 * bill per call. Holds no arguments, paths or output: only who, which tool, how it ended, and the cost.
 *
 * Rules (lib/api/routes/tools.ts and lib/run/run-tool.ts apply them, through emitUsage): every response of
 * a tool route carries `usage`; a record is emitted once per call when the key was valid (the
 * tenant is known), whatever failed after that (scope, arguments, unknown tool, missing
 * workspace, the tool itself); a call without a valid key bills no one.
 */
import { afterAnswer, finishAfterAnswer, type WaitUntil } from "../../shared/after-answer.js";
import { HeldBatches, type HoldOptions } from "../../shared/held-batches.js";
import type { UsageRecord } from "./record.js";

const usageLine = (u: UsageRecord) => JSON.stringify({ type: "toolshed.usage", at: new Date().toISOString(), ...u });

/** One log line per record, at once (Lambda: CloudWatch). */
export function logUsage(u: UsageRecord): void {
  console.log(usageLine(u));
}

/**
 * Where usage records go: a function that writes one at once, and optionally `held`, which may
 * hold it and settles once it is written or a later call's request carries it (used only where the request's waitUntil can wait for it).
 */
export type UsageSink = ((u: UsageRecord) => void) & { held?: (u: UsageRecord) => Promise<void> };

/**
 * The Workers sink: records emitted after the response (emitUsage with waitUntil) are held, and an
 * isolate's records of up to a second (at most 100) go out as one log message, one JSON line per
 * call (split it on newlines). Workers Logs counts (and bills) log events, not lines; and in
 * `wrangler dev` each console.log costs ~2.5 ms of wrangler's own CPU, which ran into the next
 * call. Each held record's promise settles once logged by its own request, or once a later request
 * of the batch has taken the batch into its care (lib/shared/held-batches.ts: the request that added last
 * logs the batch, under its own waitUntil; no request waits on another's timer), so a record is not
 * dropped when its request ends. Calls emitted without waitUntil log at once.
 */
export function heldUsageLog(opts: HoldOptions = {}): UsageSink {
  const held = new HeldBatches<string>(async (lines) => console.log(lines.join("\n")), { holdMs: 1_000, maxItems: 100, maxBytes: 64 * 1024, ...opts }, (line) => line.length);
  return Object.assign((u: UsageRecord) => logUsage(u), { held: (u: UsageRecord) => held.add("usage", usageLine(u)) });
}

/**
 * Emits one call's record through `onUsage`: the one way a usage record is written. With `later` (the
 * runtime's waitUntil, on Workers) it is emitted once the response is on its way (the next task), still
 * within the request's life (a sink that holds records keeps it open until the record is out), so the
 * log line costs the answer nothing; without it (Node without an execution context), at once.
 * `later` is required in the type, undefined only where the caller has no waitUntil: a record handed
 * to the sink at once on Workers is a store write outside every waitUntil, which workerd may cancel
 * with the request (a live sandbox's end, 2026-12-02: test/infra/worker-live.node.test.ts).
 */
export function emitUsage(onUsage: UsageSink | undefined, record: UsageRecord, later: WaitUntil | undefined): void {
  if (!onUsage) return;
  if (!later) return onUsage(record); // at once, to the sink itself (not its held one: nothing would wait for it)
  const write = onUsage.held ?? onUsage;
  void afterAnswer(later, "usage record", () => write(record), "skip");
}

/**
 * The record of an answer that ends after its handler returned (an SSE call's result event, an export's last
 * byte): kept under the runtime's waitUntil from now (the answer is still on its way), and written *inside*
 * it once the answer ended, to the held sink, whose promise settles when the batch is stored. Before
 * (2026-12-01), the record was handed to the sink's at-once write when the stream ended, outside every
 * waitUntil: workerd ended the request with the stream and cancelled the Durable Object write, so under
 * `npm start` 4 of 5 streamed reads and every export were never billed (test/infra/worker-burst.node.test.ts, against `wrangler dev`).
 */
export function emitUsageAtEnd(onUsage: UsageSink | undefined, ended: Promise<unknown>, record: () => UsageRecord, later: WaitUntil | undefined): void {
  if (!onUsage) return;
  if (!later) return void ended.then(() => onUsage(record())); // no waitUntil (Node without a context): at once, as emitUsage
  const write = onUsage.held ?? onUsage;
  finishAfterAnswer(later, "usage record of a streamed answer", ended.then(() => write(record())));
}

/** A record's network fields from a call's counts (lib/tools/web/net-bytes.ts): both when it reached the network, none when it did not. */
export function netUsage(counts: { netBytesIn: number; netBytesOut: number }): { net_bytes_in?: number; net_bytes_out?: number } {
  return counts.netBytesIn || counts.netBytesOut ? { net_bytes_in: counts.netBytesIn, net_bytes_out: counts.netBytesOut } : {};
}

/** The cost of one tool call so far; the error envelope reads it too. */
export class CallMeter {
  readonly started = Date.now();
  /** The workspace the call runs on, once it is open (its byte counters, and its commands' sandbox time). */
  ws?: { bytesRead: number; bytesWritten: number; sandboxMs?: number | undefined; netBytesIn: number; netBytesOut: number };
  /** The error code the call ended with, set by the error envelope. */
  code?: string;
  /** A streamed call (SSE): settles when the stream has sent its result; the usage record waits for it. */
  done?: Promise<void>;
  constructor(readonly tool: string) {}

  usage() {
    return { ms: Date.now() - this.started, bytes_read: this.ws?.bytesRead ?? 0, bytes_written: this.ws?.bytesWritten ?? 0 };
  }

  /** The record's sandbox_ms: what the call's commands ran in the sandbox, however they ended (absent when none ran). */
  sandbox(): { sandbox_ms?: number } {
    const ms = this.ws?.sandboxMs;
    return ms !== undefined ? { sandbox_ms: ms } : {};
  }

  /** The record's net_bytes_in / net_bytes_out: what the call's tool exchanged with hosts outside Toolshed (absent when none). */
  net(): { net_bytes_in?: number; net_bytes_out?: number } {
    return this.ws ? netUsage(this.ws) : {};
  }
}

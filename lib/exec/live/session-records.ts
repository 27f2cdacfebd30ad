/**
 * What a session's coordinator (session.ts) holds of its live runner: the current generation and
 * the one command in flight. Bundles for Workers.
 */
import type { LiveEndReason, LiveStatus } from "../../sync/live-types.js";
import type { RunAnswer } from "./types.js";

export interface Pending {
  seq: number;
  request: unknown;
  taken_at?: number;
  timeout_ms: number;
  settle: (a: RunAnswer) => void;
}

export interface Generation {
  generation: string;
  requested_at: number;
  /** When the runner last polled or answered; undefined until it first polls. */
  seen_at?: number;
  status?: LiveStatus;
  seq: number;
  lease?: string;
  /** Set by end(): the runner's next poll is told to end. */
  ending?: LiveEndReason;
  /** What it was started with (network, secrets: run-live.ts sandboxOf); a call with other access gets another sandbox. */
  sandbox: string;
  /** It answered a command (its shell holds the session's state since: call.ts). */
  served?: boolean;
}

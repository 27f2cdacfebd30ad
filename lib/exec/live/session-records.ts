/**
 * What a session's coordinator holds of its live runner, as plain JSON (session-state.ts changes it;
 * a host keeps it in memory or in a DynamoDB item): the current generation, the one command in
 * flight, the runner's held poll, what the previous runner lost; and what a host asks of it as a
 * whole (empty, served). Bundles for Workers.
 */
import { boundedStatus, type LiveEndReason, type LiveEnded, type LiveStatus } from "../../sync/live-types.js";
import type { LiveLoss, RunAnswer } from "./types.js";

/** The command in flight: handed to the runner's poll (`taken_at`), then answered (`outcome`: its caller collects it). */
export interface Pending {
  /** The generation it was run on, and its number there: the command's identity. */
  generation: string;
  seq: number;
  /** The RunRequest; dropped once the runner has it. */
  request?: unknown;
  taken_at?: number;
  timeout_ms: number;
  /** When its caller's turn runs out (the turn's expiry when it was run): past it nobody waits for its answer (checkStale). */
  until?: number;
  /** Generations that ended when it was run: prepended to its answer's. */
  ends: RunAnswer["ends"];
  /** Its answer (the runner's response, a loss, the runner never came), until its caller collects it. */
  outcome?: RunAnswer;
}

/** The runner's poll, held until a command comes (`answer`), poll_ms passes, or a newer poll or the generation's end replaces it. */
export interface Poll {
  generation: string;
  /** Which poll: a holder whose poll is no longer the session's was replaced or ended. */
  id: string;
  since: number;
  /** A command was handed to it: the seq of the pending command. */
  taken?: number;
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
  /** What it was started with (its API key, network, secrets, the workspace instance: run-live.ts sandboxOf); a call with other access gets another sandbox. */
  sandbox: string;
  /** It answered a command (its shell holds the session's state since: call.ts). */
  served?: boolean;
}

/** One session's whole state. */
export interface LiveState {
  gen: Generation | null;
  /** Ended generations whose runner may still poll (at most 8, oldest first): told `{end}`, then forgotten. */
  told: [string, LiveEndReason][];
  loss: LiveLoss | null;
  /** The access of the last generation made: a restart after a loss (same turn) keeps it. */
  lastSandbox: string;
  /** A turn is the right to run one command: calls of a session are serialized by it. */
  turn: { id: string; expires_at: number } | null;
  pending: Pending | null;
  poll: Poll | null;
}

export const emptyLiveState = (): LiveState => ({ gen: null, told: [], loss: null, lastSandbox: "", turn: null, pending: null, poll: null });

/** The API key a sandbox's access names (run-live.ts sandboxOf: the fourth item of its JSON array); undefined for any other shape. */
export function sandboxKeyId(sandbox: string): string | undefined {
  try {
    const a: unknown = JSON.parse(sandbox);
    return Array.isArray(a) && typeof a[3] === "string" ? a[3] : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Takes the untold loss for a call of `sandbox`'s access: whole when the lost sandbox was started by
 * the same API key (`key_id`, kept with the loss: a Durable Object keeps the loss alone across an
 * eviction). Another key's loss stays for that key's next call (until the session's next loss takes
 * its place): a call that starts a sandbox hears once only that it ended, and why (`other_access`:
 * not its processes nor what its end wrote back); a join (`keepOthers`) hears nothing of it.
 */
export function takeLoss(s: LiveState, sandbox: string, keepOthers: boolean): LiveLoss | null {
  const loss = s.loss;
  if (!loss || loss.key_id === undefined || loss.key_id === sandboxKeyId(sandbox)) {
    s.loss = null;
    return loss;
  }
  if (keepOthers || loss.others_told) return null;
  s.loss = { ...loss, others_told: true }; // a new object: a Durable Object's keeper saves it (session.ts)
  return { generation: loss.generation, reason: loss.reason, lost_processes: [], other_access: true };
}

/** Nothing held: the session can be forgotten. */
export const isEmpty = (s: LiveState): boolean => !s.gen && !s.turn && !s.loss && s.told.length === 0 && !s.poll && !s.pending;

/** The current runner has answered a command: its shell holds the session's state. */
export const isServed = (s: LiveState): boolean => s.gen?.served === true;

/** Paths of each list of a sandbox's final write-back kept in the session's state (the next call shows 5 and the count). */
export const LOSS_PATHS_KEPT = 20;

/** The characters of a refusal's reason a session keeps (the runner bounds it at 600, as a command's note). */
const WHY_KEPT = 600;

/** A final write-back as the session keeps it for the next call: each list's first LOSS_PATHS_KEPT paths and its count. */
export function keptWritten(w: NonNullable<LiveEnded["written"]>): NonNullable<LiveLoss["written"]> {
  return {
    changed: w.changed.slice(0, LOSS_PATHS_KEPT),
    deleted: w.deleted.slice(0, LOSS_PATHS_KEPT),
    conflicts: w.conflicts.slice(0, LOSS_PATHS_KEPT),
    ...(w.not_written?.length ? { not_written: w.not_written.slice(0, LOSS_PATHS_KEPT), ...(w.why ? { why: w.why.slice(0, WHY_KEPT) } : {}) } : {}),
    counts: { changed: w.changed.length, deleted: w.deleted.length, conflicts: w.conflicts.length, ...(w.not_written?.length ? { not_written: w.not_written.length } : {}) },
  };
}

/** What GET .../sandbox shows of the runner's last status (already bounded when kept): its processes and ports (and their counts when cut), its cost. */
export function reportedOf(st: LiveStatus | undefined): Pick<LiveStatus, "processes" | "processes_total" | "ports" | "ports_total" | "cpu_ms" | "rss_bytes"> {
  if (!st) return { processes: [], ports: [] };
  const { processes, processes_total, ports, ports_total, cpu_ms, rss_bytes } = st;
  return { processes, ports, ...(processes_total !== undefined ? { processes_total } : {}), ...(ports_total !== undefined ? { ports_total } : {}), ...(cpu_ms !== undefined ? { cpu_ms } : {}), ...(rss_bytes !== undefined ? { rss_bytes } : {}) };
}

/** A byte count the runner reported, as a usage record sums it (anything else: 0). */
const byteCount = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.round(v) : 0);

/**
 * What an end bills that no command's record did (its status's, the runner's end report): the network
 * bytes its background processes exchanged after the last command (LiveStatus.net_bytes_in: both fields
 * when any) and the workspace bytes its final write-back wrote (LiveStatus.bytes_written: when any).
 */
export function endRestOf(st: LiveStatus | undefined): { net_bytes_in?: number; net_bytes_out?: number; bytes_written?: number } {
  const net_bytes_in = byteCount(st?.net_bytes_in);
  const net_bytes_out = byteCount(st?.net_bytes_out);
  const bytes_written = byteCount(st?.bytes_written);
  return { ...(net_bytes_in || net_bytes_out ? { net_bytes_in, net_bytes_out } : {}), ...(bytes_written ? { bytes_written } : {}) };
}

/** Keeps the status a poll or an answer carries, bounded; never one older than held (an answer sent again, a replay): what GET shows and a loss lists and bills. */
export function takeStatus(g: Generation, status: LiveStatus): void {
  if (g.status && status.wall_ms < g.status.wall_ms) return;
  g.status = boundedStatus(status);
}

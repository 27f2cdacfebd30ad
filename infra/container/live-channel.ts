/**
 * The live runner's use of its channel (lib/sync/live-client.ts): every call retried a bounded
 * number of times (an API that restarts, a dropped connection), never past the caller's own
 * deadline; after that the channel counts as lost and the live sandbox ends. Node only.
 */
import type { LiveChannel } from "../../lib/sync/live-client.js";
import type { LiveEnded, LiveNext, LivePoll, LiveResultPost } from "../../lib/sync/live-types.js";

export interface RetryPolicy {
  /** Attempts of one call (default 5). */
  attempts: number;
  /** Wait before the 2nd attempt, doubled each time (default 250 ms: 250+500+1000+2000 ≈ 4 s in all). */
  firstDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, firstDelayMs: 250 };

/** Raised when the channel failed every attempt: the live sandbox ends. */
export class ChannelLost extends Error {
  constructor(readonly route: string, readonly failure: unknown) {
    super(`The live channel (${route}) failed: ${String((failure as Error)?.message ?? failure)}`);
  }
}

const pause = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });

async function retried<T>(route: string, policy: RetryPolicy, call: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  let last: unknown;
  for (let i = 0; i < policy.attempts; i++) {
    if (i > 0) await pause(policy.firstDelayMs * 2 ** (i - 1), signal);
    if (signal?.aborted) throw signal.reason;
    try {
      return await call();
    } catch (e) {
      if (signal?.aborted) throw signal.reason; // our deadline, not the channel's failure
      last = e;
    }
  }
  throw new ChannelLost(route, last);
}

/** `channel` with bounded retries: an aborted `next` (or result with its poll) rejects with the signal's reason; exhausted retries with ChannelLost. */
export function retryingChannel<Req, Res>(channel: LiveChannel<Req, Res>, policy: RetryPolicy = DEFAULT_RETRY): LiveChannel<Req, Res> {
  return {
    next: (poll: LivePoll, signal?: AbortSignal): Promise<LiveNext<Req>> => retried("next", policy, () => channel.next(poll, signal), signal),
    // A retried answer is taken once (the coordinator keeps a command's first, by its seq); its poll is then a poll again.
    result: (post: LiveResultPost<Res>, signal?: AbortSignal): Promise<LiveNext<Req> | null> => retried("result", policy, () => channel.result(post, signal), signal),
    ended: (e: LiveEnded) => retried("ended", policy, () => channel.ended(e)),
  };
}

/**
 * A live sandbox's end nobody reports, for tests over sandboxApp (test/lib/doors/sandbox-app.ts): a coordinator
 * that can be reset (a deploy, a restart: every session forgotten) and the runner's live channel, cut off from the
 * API (to the API, the runner crashed too), its `ended` requests kept as they were sent, to be sent again.
 */
import { memoryLiveCoordinator } from "../../../../lib/exec/live/memory.js";
import { LIVE_TIMINGS } from "../../../../lib/exec/live/service.js";
import type { LiveCoordinator } from "../../../../lib/exec/live/types.js";
import { until } from "../../../infra/container/live-helpers.js";

type Sent = { url: string; init: RequestInit };

/** Polls held 1 s, so the runner meets its cut soon. */
const CUT_OFF_TIMINGS = { ...LIVE_TIMINGS, poll_ms: 1000 };

/** `coordinator` goes in sandboxApp's deps (liveCoordinator), `runnerFetch` is its runnerFetch. */
export function cutOffRunner() {
  let current = memoryLiveCoordinator(CUT_OFF_TIMINGS);
  const coordinator = new Proxy({} as LiveCoordinator, { get: (_, m) => (...a: unknown[]) => (current as any)[m](...a) });
  let cut = false;
  const refusedEnded: Sent[] = [];
  /** While cut, each request to the live channel is refused as by a network gone; the `ended` ones are kept. */
  const runnerFetch = (f: typeof fetch): typeof fetch =>
    (async (u: string, i: RequestInit) => {
      if (cut && String(u).includes("/v1/sync/live/")) {
        if (String(u).endsWith("/v1/sync/live/ended")) refusedEnded.push({ url: String(u), init: i });
        throw new TypeError("fetch failed: the test cut the runner off");
      }
      return f(u, i);
    }) as typeof fetch;

  /** The cut and the reset; resolves once the runner's `ended` was refused: it gave the channel up and never reports. */
  async function forgetAndCutOff(): Promise<void> {
    refusedEnded.length = 0;
    cut = true;
    current = memoryLiveCoordinator(CUT_OFF_TIMINGS);
    await until(() => refusedEnded.length > 0, "the runner's ended, refused", 30_000);
  }
  /** The channel open again; answers the first `ended` refused since the last cut (none before any), as it was sent. */
  function reconnect(): Sent | undefined {
    cut = false;
    return refusedEnded[0];
  }
  return { coordinator, runnerFetch, forgetAndCutOff, reconnect };
}

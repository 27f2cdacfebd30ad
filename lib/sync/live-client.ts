/**
 * The live runner's side of the live channel (lib/sync/live-types.ts): LiveChannel, and its one
 * implementation over HTTP with the live runner's sync token (Bearer), as the sync client speaks:
 *   POST {url}/v1/sync/live/next    LivePoll        → 200 LiveNext   (long poll)
 *   POST {url}/v1/sync/live/result  LiveResultPost  → 204, or with `poll` → 200 LiveNext (held as a poll)
 *   POST {url}/v1/sync/live/ended   LiveEnded       → 204
 * Not retried here: the runner decides (infra/container/live-channel.ts). fetch-based: bundles
 * for Workers and runs in Node.
 */
import { ToolError } from "../shared/errors.js";
import { throwSyncRefusal } from "./refusal.js";
import type { SyncAccess } from "./types.js";
import type { LiveEnded, LiveNext, LivePoll, LiveResultPost } from "./live-types.js";

/** Where a live sandbox takes its commands from and answers them. */
export interface LiveChannel<Req = unknown, Res = unknown> {
  /**
   * The next command, `{wait: true}` (poll again) or `{end}`; `signal` aborts the poll (the runner's
   * own idle or life deadline). `poll`: the status, and the manifest query whose answer a command may carry.
   */
  next(poll: LivePoll, signal?: AbortSignal): Promise<LiveNext<Req>>;
  /**
   * A command's answer. With `post.poll` it is also the next poll (held; `signal` aborts it as
   * next's): its LiveNext, or null when the API answered 204 (one that predates LiveResultPost.poll:
   * the answer is recorded, the runner polls). Without it, null.
   */
  result(post: LiveResultPost<Res>, signal?: AbortSignal): Promise<LiveNext<Req> | null>;
  ended(ended: LiveEnded): Promise<void>;
}

export interface HttpLiveOptions extends SyncAccess {
  fetch?: typeof fetch;
}

const isNext = (v: unknown): v is LiveNext => {
  if (!v || typeof v !== "object") return false;
  const o = v as Record<string, unknown>;
  if (o.wait === true || typeof o.end === "string") return true;
  const c = o.command as Record<string, unknown> | undefined;
  return !!c && typeof c === "object" && Number.isInteger(c.seq) && !!c.request && typeof c.request === "object";
};

export function httpLiveChannel<Req = unknown, Res = unknown>(opts: HttpLiveOptions): LiveChannel<Req, Res> {
  const doFetch = opts.fetch ?? fetch;
  const base = opts.url.replace(/\/+$/, "") + "/v1/sync/live";

  async function post(route: "next" | "result" | "ended", body: unknown, signal?: AbortSignal): Promise<Response> {
    let res: Response;
    try {
      res = await doFetch(`${base}/${route}`, {
        method: "POST",
        headers: { authorization: `Bearer ${opts.token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
        ...(signal ? { signal } : {}),
      });
    } catch (e) {
      if (signal?.aborted) throw e; // the caller's own deadline: not an error of the channel
      throw new ToolError("UNAVAILABLE", `The live channel (${route}) is unreachable: ${String((e as Error)?.message ?? e)}`, { route });
    }
    if (!res.ok) await throwSyncRefusal(res, `The live channel (${route}) failed`, { route });
    return res;
  }

  async function nextOf(res: Response, route: "next" | "result"): Promise<LiveNext<Req>> {
    const body = (await res.json().catch(() => null)) as unknown;
    if (!isNext(body)) throw new ToolError("INTERNAL", `The live channel (${route}) answered something that is not a LiveNext.`, { route });
    return body as LiveNext<Req>;
  }

  return {
    async next(poll, signal) {
      return nextOf(await post("next", poll, signal), "next");
    },
    async result(p, signal) {
      const res = await post("result", p, signal);
      if (res.status === 204 || !p.poll) {
        await res.body?.cancel();
        return null;
      }
      return nextOf(res, "result");
    },
    async ended(e) {
      await (await post("ended", e)).body?.cancel();
    },
  };
}

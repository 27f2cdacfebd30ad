/**
 * The live coordinator on Workers: one Durable Object per tenant × workspace × session (binding
 * LIVE, class LiveObject, exported by infra/cloudflare.ts; wrangler.toml). A Durable Object runs
 * in one place, so every isolate that serves a session's calls and its runner's polls reaches the
 * same LiveSession (lib/exec/live/session.ts): one command at a time, a held poll answered the moment
 * a command comes. Its state is in memory: the object stays while its runner polls (a request
 * is always in flight or a few seconds away); should it be reset (a deploy), the runner's next poll
 * finds no generation and is told to end, and the session's next call starts a new sandbox. What
 * the last runner lost is also kept in the object's storage (LossKeeper): once no runner polls, the
 * object is evicted, and the session's next call, maybe minutes later, must still be told. Its
 * methods are called over RPC by durableLiveCoordinator (live-coordinator.ts, which does not import
 * this class: the AWS runtime shares workers.ts and must not import cloudflare:workers).
 */
import { DurableObject } from "cloudflare:workers";
import { callOnce } from "../exec/live/call.js";
import { LiveSession, type LossKeeper } from "../exec/live/session.js";
import type { CallOptions, LiveLoss, LiveTimings, RunOptions } from "../exec/live/types.js";
import type { LiveEndReason, LiveEnded, LiveResultPost, LiveStatus } from "../sync/live-types.js";

const LOSS_KEY = "loss";

export class LiveObject extends DurableObject {
  private session: LiveSession | undefined;

  private of(timings: LiveTimings): LiveSession {
    return (this.session ??= new LiveSession(timings, Date.now, this.lossKeeper()));
  }

  /** What the last runner lost, in the object's storage: told to the session's next call even after an eviction. */
  private lossKeeper(): LossKeeper {
    const kv = this.ctx.storage.kv;
    return {
      load: () => kv.get<LiveLoss>(LOSS_KEY) ?? null,
      save: (loss) => (loss ? kv.put(LOSS_KEY, loss) : void kv.delete(LOSS_KEY)),
    };
  }

  begin(t: LiveTimings, wait_ms: number, turn_ms: number, sandbox?: string, join?: boolean) {
    return this.of(t).begin(wait_ms, turn_ms, sandbox, join);
  }
  call(t: LiveTimings, request: unknown, opts: CallOptions) {
    return callOnce(this.of(t), request, opts);
  }
  run(t: LiveTimings, turn: string, request: unknown, opts: RunOptions) {
    return this.of(t).run(turn, request, opts);
  }
  release(t: LiveTimings, turn: string): void {
    this.of(t).release(turn);
  }
  next(t: LiveTimings, generation: string, status: LiveStatus) {
    return this.of(t).next(generation, status);
  }
  result(t: LiveTimings, generation: string, post: LiveResultPost): void {
    this.of(t).result(generation, post);
  }
  resultThenNext(t: LiveTimings, generation: string, post: LiveResultPost) {
    return this.of(t).resultThenNext(generation, post);
  }
  ended(t: LiveTimings, generation: string, ended: LiveEnded) {
    return this.of(t).ended(generation, ended);
  }
  status(t: LiveTimings) {
    return this.of(t).status();
  }
  end(t: LiveTimings, reason: LiveEndReason) {
    return this.of(t).end(reason);
  }
  lostAtEnd(t: LiveTimings, generation: string, wait_ms: number) {
    return this.of(t).lostAtEnd(generation, wait_ms);
  }
}

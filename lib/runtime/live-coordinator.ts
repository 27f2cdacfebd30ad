/**
 * The LiveCoordinator over the LIVE Durable Object namespace (live-object.ts: the class, imported
 * here as a type only, so this module bundles anywhere: lib/runtime/workers.ts is shared with AWS).
 */
import type { LiveCoordinator, LiveKey, LiveTimings } from "../exec/live/types.js";
import type { LiveObject } from "./live-object.js";

/** The RPC surface of a LiveObject stub, as durableLiveCoordinator calls it. */
type LiveStub = Pick<LiveObject, "begin" | "call" | "run" | "release" | "next" | "result" | "resultThenNext" | "ended" | "status" | "end" | "lostAtEnd">;
export interface LiveObjects {
  idFromName(name: string): DurableObjectId;
  get(id: DurableObjectId): LiveStub;
}

/** The LiveCoordinator over the LIVE namespace: one object per session, named by tenant, workspace and session. */
export function durableLiveCoordinator(ns: LiveObjects, timings: LiveTimings): LiveCoordinator {
  const stub = (k: LiveKey) => ns.get(ns.idFromName(JSON.stringify([k.tenant, k.workspace, k.session])));
  return {
    begin: (k, o) => stub(k).begin(timings, o.wait_ms, o.turn_ms, o.sandbox, o.join),
    call: (k, request, o) => stub(k).call(timings, request, o),
    run: (k, turn, request, o) => stub(k).run(timings, turn, request, o),
    release: async (k, turn) => void (await stub(k).release(timings, turn)),
    next: (k, g, s) => stub(k).next(timings, g, s),
    result: async (k, g, p) => void (await stub(k).result(timings, g, p)),
    resultThenNext: (k, g, p) => stub(k).resultThenNext(timings, g, p),
    ended: async (k, g, e) => stub(k).ended(timings, g, e),
    status: async (k) => stub(k).status(timings),
    end: async (k, r) => stub(k).end(timings, r),
    lostAtEnd: async (k, g, ms) => stub(k).lostAtEnd(timings, g, ms),
  };
}

/**
 * The live coordinator in one process's memory (Node, the AWS entry run as one instance, tests):
 * a LiveSession per session. Exact only while every call and every runner of a session reach the
 * same process: a deployment with several API instances needs the Durable Object one (Workers), the
 * DynamoDB one (AWS: dynamodb.ts) or sticky routing by session. Bundles for Workers.
 */
import { callOnce } from "./call.js";
import { liveSessionId as keyOf } from "./service.js";
import { LiveSession } from "./session.js";
import type { LiveCoordinator, LiveKey, LiveTimings } from "./types.js";

export function memoryLiveCoordinator(timings: LiveTimings, now: () => number = Date.now): LiveCoordinator {
  const sessions = new Map<string, LiveSession>();
  const of = (k: LiveKey) => {
    let s = sessions.get(keyOf(k));
    if (!s) sessions.set(keyOf(k), (s = new LiveSession(timings, now)));
    return s;
  };
  /** A session that holds nothing is dropped after the operation. */
  const tidy = <T>(k: LiveKey, v: T): T => {
    const s = sessions.get(keyOf(k));
    if (s?.empty) sessions.delete(keyOf(k));
    return v;
  };
  return {
    begin: async (k, o) => tidy(k, await of(k).begin(o.wait_ms, o.turn_ms, o.sandbox, o.join)),
    call: async (k, request, o) => tidy(k, await callOnce(of(k), request, o)),
    run: (k, turn, request, o) => of(k).run(turn, request, o),
    release: async (k, turn) => tidy(k, of(k).release(turn)),
    next: async (k, g, status) => tidy(k, await of(k).next(g, status)),
    result: async (k, g, post) => of(k).result(g, post),
    resultThenNext: async (k, g, post) => tidy(k, await of(k).resultThenNext(g, post)),
    ended: async (k, g, e) => tidy(k, of(k).ended(g, e)),
    status: async (k) => tidy(k, of(k).status()),
    end: async (k, reason) => tidy(k, of(k).end(reason)),
    lostAtEnd: async (k, g, ms) => tidy(k, await of(k).lostAtEnd(g, ms)),
  };
}

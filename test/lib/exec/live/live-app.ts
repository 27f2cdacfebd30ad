/**
 * The app of the API tests of live sessions (workers): the real app with local R2/KV and the LIVE
 * Durable Object, its runner the fake live runner (test/support/fake-live-runner.ts), attached.
 */
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { durableLiveCoordinator, type LiveObjects } from "../../../../lib/runtime/live-coordinator.js";
import type { AppDeps } from "../../../../lib/api/deps.js";
import type { LiveTimings } from "../../../../lib/exec/live/types.js";
import { testApp } from "../../../helpers.js";
import { fakeLiveRunner } from "../../../support/fake-live-runner.js";
import { STEADY } from "./coordinator-conformance.js";

export const SECRET = "sync-secret-for-tests-0123456789";

/** `timings`: the coordinator's clocks (STEADY by default); `extra`: more of the app's deps. */
export function liveApp(opts: Parameters<typeof fakeLiveRunner>[0] & { timings?: LiveTimings } = {}, extra: Partial<AppDeps> = {}) {
  const runner = fakeLiveRunner(opts);
  const deps: Partial<AppDeps> = { executor: runner.executor, syncSecret: SECRET, syncUrl: "http://toolshed.internal", liveCoordinator: durableLiveCoordinator(env.LIVE as unknown as LiveObjects, opts.timings ?? STEADY), liveBusyWaitMs: 100, ...extra };
  const app = testApp(deps);
  runner.attach(app);
  return { runner, app, deps };
}

/** A tool call's answer, which must be 200: its output. */
export const okOutput = (r: { status: number; body: any }) => {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.output as string;
};

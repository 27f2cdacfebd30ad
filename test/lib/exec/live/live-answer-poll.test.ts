/**
 * Both runner protocols against the API with the LIVE Durable Object (docs/live-sessions.md, "The
 * production design"): a runner whose command's answer is its next poll (LiveResultPost.poll: the
 * answer's request is answered 200 with the next command), and one from before it (each answer 204,
 * then a poll). The same session either way. Over the fake live runner (test/support/fake-live-runner.ts).
 */
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { durableLiveCoordinator, type LiveObjects } from "../../../../lib/runtime/live-coordinator.js";
import { newTenant, testApp, UNGATED } from "../../../helpers.js";
import { fakeLiveRunner } from "../../../support/fake-live-runner.js";
import { STEADY } from "./coordinator-conformance.js";

for (const pollAfterAnswer of [false, true]) {
  it(pollAfterAnswer ? "a runner that polls after each answer: each answered 204, the session as ever" : "a runner whose answer is its next poll: each answer's request brings the next command (200)", async () => {
    const runner = fakeLiveRunner({ pollAfterAnswer });
    const app = testApp({ executor: runner.executor, syncSecret: "sync-secret-for-tests-0123456789", syncUrl: "http://toolshed.internal", liveCoordinator: durableLiveCoordinator(env.LIVE as unknown as LiveObjects, STEADY) });
    runner.attach(app);
    const t = await newTenant(app, UNGATED);
    for (const n of [1, 2, 3]) {
      const r = await t.call("bash", { command: `c${n}`, keep_alive: true, timeout: 2 }, "s1");
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.output).toContain(`n=${n} cmd=c${n}\n`);
    }
    expect((await t.req(`/v1/workspaces/${t.ws}/sessions/s1/sandbox`, { method: "DELETE" })).status).toBe(200);
    expect(await runner.generations[0]!.done).toBe("end:ended"); // the last answer's request was held until then: told the end
    expect(runner.answers).toEqual(Array(3).fill(pollAfterAnswer ? 204 : 200));
  });
}

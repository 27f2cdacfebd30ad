/** The live coordinator on Workers: the conformance suite through the real Durable Object (LIVE) in workerd. */
import { env } from "cloudflare:workers";
import { beforeAll } from "vitest";
import { durableLiveCoordinator, type LiveObjects } from "../../../../lib/runtime/live-coordinator.js";
import { describeLiveCoordinator, FAST } from "./coordinator-conformance.js";

const make = () => durableLiveCoordinator(env.LIVE as unknown as LiveObjects, FAST);

// The first call to a Durable Object loads the Worker's main module (the whole app) in workerd: minutes
// on a busy machine. Loaded here, outside the tests' own bounds (their waits are the coordinator's).
beforeAll(async () => {
  await make().status({ tenant: "warm-up", workspace: "w", session: "s" });
}, 300_000);

describeLiveCoordinator("Durable Object per session", make);

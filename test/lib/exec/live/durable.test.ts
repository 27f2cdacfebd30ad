/** The live coordinator on Workers: the conformance suite through the real Durable Object (LIVE) in workerd. */
import { env } from "cloudflare:workers";
import { durableLiveCoordinator, type LiveObjects } from "../../../../lib/runtime/live-object.js";
import { describeLiveCoordinator, FAST } from "./coordinator-conformance.js";

describeLiveCoordinator("Durable Object per session", () => durableLiveCoordinator(env.LIVE as unknown as LiveObjects, FAST));
